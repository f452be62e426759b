#!/usr/bin/env python3
"""Scenario tests of `culprit run --rerun` over the simulated CUDA driver: a record-mode verdict of candidates
settled by running the command again with blocking launches over their window, and both runs merged into one
report: confirmed there, faulted elsewhere (a program that does not run the same way twice), did not fault.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
LINKED_SRC = os.path.join(h.PROG_SRC, "linked.c")

# Record mode's own breadcrumb density (every 16th launch): the fault at launch #20 leaves the window #17..#32.
SPARSE = {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}


def flaky_run(b, later, opts=("--rerun",)):
    """The flaky program under culprit run; returns (result, report, runs the program made)."""
    state = os.path.join(b.newdir("state"), "runs")
    env = dict(SPARSE, FLAKY_STATE=state)
    if later:
        env["FLAKY_LATER"] = later
    rdir = b.newdir("reports")
    res = h.cli_run(b, [b.prog("linked"), "flaky", "40"], env, rdir, opts)
    with open(state) as f:
        runs = len(f.read())
    # the first run's report sits in the run's directory, the rerun's in a directory of its own below it
    top = glob.glob(os.path.join(rdir, "culprit-*.json"))
    check(len(top) == 1, "expected one report of the first run in %s, found %s\n%s" % (rdir, top, res.describe()))
    with open(top[0]) as f:
        rep = json.load(f)
    return res, rep, runs, rdir


@case("rerun_confirmed")
def _(b):
    res, rep, runs, rdir = flaky_run(b, None)
    check(runs == 2, "the program ran %d times, not twice\n%s" % (runs, res.describe()))
    check(res.rc == 1, "culprit run did not pass the first run's status 1 through\n" + res.describe())
    check("running the command again with blocking launches there" in res.err_text, "no word of the rerun\n" +
          res.describe())
    h.expect_exact(rep, kernel=h.BAD, seq=20)
    rr = rep.get("rerun") or {}
    check(rr.get("outcome") == "confirmed" and rr.get("seq") == 20 and rr.get("window") == {"first": 17, "last": 32},
          "rerun outcome: %r" % rr)
    check("confirmed by a rerun with blocking launches #17..#32: launch #20 faulted there" in rep["verdict"]["reason"],
          "reason: %s" % rep["verdict"]["reason"])
    check(len(rep.get("candidates_before_rerun") or []) == 15, "the other 15 candidates are not kept")
    hist = [l.get("seq") for l in rep.get("history") or []]
    check(hist and hist[-1] == 19 and all(q < 20 for q in hist), "history is not the launches before #20: %r" % hist)
    h.expect_frame(rep["culprit"].get("stack"), LINKED_SRC, h.marker_line(LINKED_SRC, "flaky"), "culprit stack")
    check(os.path.isfile(rr.get("report") or ""), "the rerun's report %r is not there" % rr.get("report"))
    check(rr["report"].startswith(rdir), "the rerun's report is outside the run's directory: %s" % rr["report"])
    check("confirmed by a rerun" in res.err_text and "the kernel that faulted: write_oob" in res.err_text,
          "the merged verdict is not what culprit run printed\n" + res.describe())


@case("rerun_elsewhere")
def _(b):
    res, rep, runs, _ = flaky_run(b, "elsewhere")
    check(runs == 2, "the program ran %d times, not twice" % runs)
    rr = rep.get("rerun") or {}
    check(rr.get("outcome") == "elsewhere", "rerun outcome: %r" % rr)
    check(rep["verdict"]["certainty"] == "candidates", "a rerun that faulted elsewhere made the verdict %s" %
          rep["verdict"]["certainty"])
    check("does not run the same way twice" in rep["verdict"]["reason"], "reason: %s" % rep["verdict"]["reason"])
    check(20 in h.named_seqs(rep), "the first run's candidates are gone: %r" % h.named_seqs(rep))


@case("rerun_no_fault")
def _(b):
    res, rep, runs, _ = flaky_run(b, "none")
    check(runs == 2, "the program ran %d times, not twice" % runs)
    rr = rep.get("rerun") or {}
    check(rr.get("outcome") == "no-fault" and "report" not in rr, "rerun outcome: %r" % rr)
    check(rep["verdict"]["certainty"] == "candidates", "verdict %s" % rep["verdict"]["certainty"])
    check("did not fault" in rep["verdict"]["reason"], "reason: %s" % rep["verdict"]["reason"])
    check(res.rc == 1, "the first run's status is not passed through\n" + res.describe())


@case("rerun_not_needed")
def _(b):
    # An exact verdict (precise mode) needs no rerun: the program runs once; without --rerun, never twice.
    res, rep, runs, _ = flaky_run(b, None, opts=("--rerun", "--mode", "precise"))
    check(runs == 1 and "rerun" not in rep, "an exact verdict was rerun (%d runs)" % runs)
    h.expect_exact(rep, kernel=h.BAD, seq=20)
    # the verdict hands over to cuda-gdb with the program's own command line
    want = "culprit:   cuda-gdb -ex run --args %s flaky 40" % b.prog("linked")
    check(want in res.err_text.splitlines(), "no cuda-gdb hand-off line %r\n%s" % (want, res.describe()))
    res, rep, runs, _ = flaky_run(b, None, opts=())
    check(runs == 1 and "rerun" not in rep and rep["verdict"]["certainty"] == "candidates",
          "without --rerun the program ran %d times" % runs)


@case("rerun_not_python")
def _(b):
    # A rerun diagnoses PyTorch operators by default, but a C program has none: the rerun of one used to end with
    # "--diagnose named no operator ...", which the user had not asked for. It runs without --diagnose, and an
    # explicit --diagnose on a program without Python says that is why it named none.
    res, rep, runs, _ = flaky_run(b, None)
    check(runs == 2 and (rep.get("rerun") or {}).get("outcome") == "confirmed", "rerun: %r\n%s" % (
        rep.get("rerun"), res.describe()))
    check("--diagnose" not in res.err_text and "operator" not in res.err_text,
          "the rerun of a C program speaks of --diagnose or operators\n" + res.describe())
    res, rep, runs, _ = flaky_run(b, None, ("--rerun", "--diagnose"))
    lines = [l for l in h.culprit_lines(res) if "--diagnose named no operator" in l]
    check(len(lines) == 1 and "ran no Python" in lines[0] and "no Python in this process" in lines[0],
          "an explicit --diagnose on a C program does not say it ran no Python\n" + res.describe())


if __name__ == "__main__":
    sys.exit(h.main())
