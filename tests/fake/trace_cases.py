#!/usr/bin/env python3
"""Scenario tests of `culprit trace` over the simulated CUDA driver: a fault's report as a Perfetto/Chrome trace,
written beside the report under a name `culprit report` does not take for one, or where -o says.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check


def culprit(b, *args):
    return subprocess.run([b.cli] + list(args), capture_output=True, text=True, timeout=h.RUN_TIMEOUT)


@case("trace_cli")
def _(b):
    rdir = b.newdir("reports")
    h.cli_run(b, [b.prog("linked"), "legacy", "ctxsync", "40"], {"FAKECUDA_FAULT": "launch=20"}, rdir)
    rep = h.load_report(rdir)
    res = culprit(b, "trace", rep["_path"])
    want = os.path.join(rdir, "trace-%d.json" % rep["process"]["pid"])
    check(res.returncode == 0 and os.path.isfile(want), "no trace at %s\n%s%s" % (want, res.stdout, res.stderr))
    with open(want) as f:
        tr = json.load(f)
    roles = [e.get("cat") for e in tr["traceEvents"] if e.get("ph") == "i"]
    check(roles.count("culprit") == 2 and "error" in roles, "trace roles: %r" % roles)
    culprit_ev = [e for e in tr["traceEvents"] if e.get("cat") == "culprit"][0]
    check(culprit_ev["args"]["seq"] == 20 and "linked.c:" in culprit_ev["args"].get("native", ""),
          "the culprit's event: %r" % culprit_ev)
    # the directory still reports as before, the trace beside the report notwithstanding
    res = culprit(b, "report", "--brief", rdir)
    check(res.returncode == 0 and "launch #20" in res.stderr + res.stdout, "culprit report after the trace:\n" +
          res.stdout + res.stderr)
    # -o - writes the JSON to stdout; bad usage is refused
    res = culprit(b, "trace", rep["_path"], "-o", "-")
    check(res.returncode == 0 and json.loads(res.stdout).get("traceEvents"), "trace -o - did not print a trace")
    for args, code in ((["trace"], 2), (["trace", rep["_path"], "-o"], 2), (["trace", rep["_path"], "--x"], 2),
                       (["trace", os.path.join(rdir, "nothing.json")], 1)):
        res = culprit(b, *args)
        check(res.returncode == code and res.stderr.startswith("culprit: "), "%s: exit %d\n%s" % (
            args, res.returncode, res.stderr))


if __name__ == "__main__":
    sys.exit(h.main())
