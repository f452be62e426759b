#!/usr/bin/env python3
"""Scenario tests of culprit's options, configuration and report files over the simulated CUDA driver: the
options of `culprit run` reaching the library, off mode, -q, the native stack's depth, bad configuration refused
with a clear error, report directories that cannot be written or hold planted links, a command line kept whole,
memory with many launching threads, `culprit report`, and the simulated demo.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import re
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)
from cases import (  # noqa: E402
    CaseFailed, DEMO_SRC, LOSS, PROG_SRC, STEP, _base_env, _execute, check_error, cli_run, culprit_lines,
    expect_exact, expect_frame, expect_not_blocked, expect_plain_failure, fault_run, load_report, marker_line,
    no_report, plain, preloaded, report_files, same_as_plain)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check


@case("cli_options")
def _(b):
    # The options of `culprit run` reach the library: they show in the report's config and in its behaviour.
    env = {"FAKECUDA_FAULT": "kernel=vec_fill,nth=3"}
    argv = [b.prog("linked"), "phases", "10"]
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir, ["--mode", "blocking", "--kernels", "*step*", "--launches", "2:19",
                                       "--ring", "64", "--quiet"])
    check(res.rc == 1, "exit status %s\n%s" % (res.rc, res.describe()))
    rep = load_report(rdir)
    cfg = rep.get("config") or {}
    for key, want in (("mode", "blocking"), ("kernels", "*step*"), ("launches", "2:19"), ("ring", 64)):
        check(cfg.get(key) == want, "config.%s is %r, expected %r" % (key, cfg.get(key), want))
    expect_not_blocked(res, rep, 13)


@case("off_mode")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=4", "CULPRIT_MODE": "off"}
    argv = [b.prog("linked"), "legacy", "ctxsync"]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    rdir = b.newdir("reports")
    res = preloaded(b, argv, env, rdir)
    same_as_plain(base, res, "off mode")
    no_report(rdir, "off mode")


@case("quiet")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=4", "CULPRIT_QUIET": "1"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
    check(len(culprit_lines(res)) == 1, "CULPRIT_QUIET=1 must print one line, printed:\n" + res.err_text)
    expect_exact(rep, kernel=STEP, seq=4)


@case("stack_depth")
def _(b):
    for depth in (0, 2):
        env = {"FAKECUDA_FAULT": "launch=4", "CULPRIT_STACK_DEPTH": str(depth)}
        res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
        c = expect_exact(rep, kernel=STEP, seq=4)
        check(len(c.get("stack") or []) <= depth, "CULPRIT_STACK_DEPTH=%d but the culprit has %d frames" % (
            depth, len(c.get("stack") or [])))


def bad_config(b, var, values):
    argv = [b.prog("linked"), "legacy", "ctxsync"]
    env = {"FAKECUDA_FAULT": "launch=4"}
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    for value in values:
        rdir = b.newdir("reports")
        res = preloaded(b, argv, dict(env, **{var: value}), rdir)
        what = "%s=%r" % (var, value)
        same_as_plain(base, res, what)
        check(len(culprit_lines(res)) == 1, "%s: expected exactly one culprit: line, got\n%s" % (what, res.err_text))
        check(var in culprit_lines(res)[0], "%s: the message does not name the variable: %r" % (
            what, culprit_lines(res)[0]))
        no_report(rdir, what + " (the program must run untraced)")


@case("bad_config_mode")
def _(b):
    bad_config(b, "CULPRIT_MODE", ["fast", "blockin", "RECORDING"])


@case("bad_config_ring")
def _(b):
    bad_config(b, "CULPRIT_RING", ["8", "2000000", "lots", "-16"])
    bad_config(b, "CULPRIT_MARK_BUDGET", ["101", "-1", "1%%", "0.001", "1.2345", "lots", "%"])


@case("bad_config_stack_depth")
def _(b):
    bad_config(b, "CULPRIT_STACK_DEPTH", ["65", "-1", "deep"])


@case("bad_config_launches")
def _(b):
    bad_config(b, "CULPRIT_LAUNCHES", ["a:b", "3:x", "1:2:3", "9:3"])


@case("bad_config_flags")
def _(b):
    bad_config(b, "CULPRIT_QUIET", ["sometimes"])
    bad_config(b, "CULPRIT_STATS", ["sometimes"])


@case("report_dir_unwritable")
def _(b):
    # The report directory cannot be created (its parent is a regular file): the program must not notice beyond
    # culprit's own message, and the verdict is still printed.
    blocker = os.path.join(b.newdir("blocker"), "file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    env = {"FAKECUDA_FAULT": "launch=4", "CULPRIT_DIR": os.path.join(blocker, "reports")}
    argv = [b.prog("linked"), "legacy", "ctxsync"]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    res = preloaded(b, argv, env)
    same_as_plain(base, res, "unwritable CULPRIT_DIR")
    lines = culprit_lines(res)
    check(any(blocker in l for l in lines), "culprit did not say it could not write the report\n" + res.err_text)
    check(any("#4" in l for l in lines), "the verdict was not printed\n" + res.err_text)
    # the reason is the one that stopped it, not whatever errno held by the time it was printed
    said = [l for l in lines if "could not write the report" in l]
    check(said and said[0].endswith(": Not a directory"), "the reason given: %r" % said)


@case("report_dir_planted_links")
def _(b):
    """A directory other users can write to (one directory for a job's ranks): links planted at the report's name
    and at the temporary name the library used to write through (predictable from the pid) must not make it write
    anywhere else. The report lands in the directory, 0600, and the file the links point to is untouched."""
    rdir = b.newdir("shared")
    os.chmod(rdir, 0o777)
    victim = os.path.join(b.newdir("victim"), "precious")
    with open(victim, "w") as f:
        f.write("precious\n")
    argv = [b.prog("linked"), "legacy", "ctxsync"]

    def plant():
        # in the child, before exec: the program keeps this pid
        for name in ("culprit-%d.json" % os.getpid(), ".culprit-%d.json.tmp" % os.getpid()):
            os.symlink(victim, os.path.join(rdir, name))

    env = _base_env(b, {"FAKECUDA_FAULT": "launch=4", "CULPRIT_DIR": rdir})
    env["LD_PRELOAD"] = b.lib
    res = _execute(b, argv, env, b.newdir("preload"), preexec=plant)
    with open(victim) as f:
        check(f.read() == "precious\n", "the file a planted link points to was written")
    path = os.path.join(rdir, "culprit-%d.json" % res.pid)
    st = os.lstat(path)
    check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
          "the report's name is not a 0600 regular file (mode %o): the planted link was not replaced" % st.st_mode)
    check(load_report(rdir, pid=res.pid)["error"]["code"] == 700, "the report is not the fault's")
    left = [n for n in os.listdir(rdir) if n.startswith(".culprit-") and not os.path.islink(os.path.join(rdir, n))]
    check(not left, "a temporary file was left behind: %s" % left)


@case("report_argv_whole")
def _(b):
    """A command line of 20000 arguments: the report keeps every one of them, so a command printed from it is
    the one that ran."""
    extra = ["x%d" % i for i in range(20000)]
    argv = [b.prog("linked"), "legacy", "ctxsync", "10"] + extra
    rdir = b.newdir("reports")
    res = preloaded(b, argv, {"FAKECUDA_FAULT": "launch=4"}, rdir)
    rep = load_report(rdir)
    got = (rep.get("process") or {}).get("argv") or []
    check(got[1:] == argv[1:] and len(got) == len(argv), "argv kept %d of %d arguments" % (len(got), len(argv)))
    check("argv_left_out" not in rep["process"], "argv_left_out %r" % rep["process"].get("argv_left_out"))


@case("memory_many_threads")
def _(b):
    """At default settings, 64 threads each launching 20000 kernels cost culprit less than 64 MiB of resident
    memory (the first 8 threads get full rings, later ones smaller ones); the program's output is unchanged."""
    argv = [b.prog("manythreads"), "64"]
    base = plain(b, argv)
    check(base.rc == 0, "scenario broken\n" + base.describe())
    res = preloaded(b, argv, {"CULPRIT_CRUMB_EVERY": ""}, b.newdir("reports"))
    check(res.rc == 0, "the program failed under culprit\n" + res.describe())
    grow = lambda r: int(re.search(rb"rss_growth_kib=(-?\d+)", r.out).group(1))
    added = grow(res) - grow(base)
    check(added < 64 * 1024, "culprit added %d KiB of resident memory for 64 threads" % added)


# The CLI and the demo -----------------------------------------------------------------------------------------


@case("report_cli")
def _(b):
    res, rep = fault_run(b, "linked", ["legacy", "dtoh"], {"FAKECUDA_FAULT": "launch=5"}, "cuMemcpyDtoH")
    out = _execute(b, [b.cli, "report", "--json", rep["_path"]], _base_env(b, None), b.work)
    check(out.rc == 0, "culprit report --json failed\n" + out.describe())
    try:
        again = json.loads(out.out_text)
    except ValueError as e:
        raise CaseFailed("culprit report --json printed invalid JSON: %s\n%s" % (e, out.out_text))
    check((again.get("culprit") or {}).get("seq") == 5, "culprit report --json lost the culprit")
    src = os.path.join(PROG_SRC, "linked.c")
    expect_frame(again["culprit"].get("stack"), src, marker_line(src, "legacy"), "culprit report --json")
    out = _execute(b, [b.cli, "report", rep["_path"]], _base_env(b, None), b.work)
    check(out.rc == 0 and "step" in out.out_text and "linked.c:%d" % marker_line(src, "legacy") in out.out_text,
          "culprit report does not show the culprit and its line\n" + out.describe())


@case("demo_sim")
def _(b):
    check(os.access(b.demo, os.X_OK), "%s is not built" % b.demo)
    line = marker_line(DEMO_SRC)
    cwd = b.newdir("demo")
    env = _base_env(b, None)
    del env["LD_LIBRARY_PATH"]  # culprit demo finds the simulated driver itself
    res = _execute(b, [b.cli, "demo", "--sim"], env, cwd)
    check(res.rc > 0, "culprit demo --sim should end with the demo's failure status\n" + res.describe())
    check(b"Assertion" in res.out, "the device assert line is missing from stdout\n" + res.describe())
    text = res.out_text + res.err_text
    check("softmax_loss" in text, "the verdict does not name softmax_loss\n" + res.describe())
    check("demo_sim.c:%d" % line in text, "the verdict does not point at demo_sim.c:%d\n%s" % (line,
                                                                                           res.describe()))
    # cuda-gdb needs a real driver: on the simulated one the verdict does not offer it
    check("cuda-gdb" not in text, "the demo on the simulated driver offers cuda-gdb\n" + res.describe())
    reps = report_files(cwd)
    check(len(reps) == 1, "culprit demo left %d reports under its directory: %s" % (len(reps), reps))
    rep = load_report(os.path.dirname(reps[0]))
    rep["_via_cli"] = True
    check_error(rep, 710, "cuStreamSynchronize")
    expect_exact(rep, kernel=LOSS, seq=8, stream_kind="created")
    expect_frame(rep["culprit"].get("stack"), DEMO_SRC, line, "culprit stack")
    # Without addr2line the verdict still comes, its frames as module+offset, and culprit says why once.
    env["CULPRIT_ADDR2LINE"] = "culprit-no-such-addr2line"
    res = _execute(b, [b.cli, "demo", "--sim"], env, b.newdir("demo"))
    text = res.out_text + res.err_text
    check(res.rc > 0 and "softmax_loss" in text, "no verdict without addr2line\n" + res.describe())
    check(text.count("addr2line could not be run") == 1 and "demo_sim.c:%d" % line not in text,
          "without addr2line: one note, and no file:line\n" + res.describe())


@case("demo_sim_preload")
def _(b):
    check(os.access(b.demo, os.X_OK), "%s is not built" % b.demo)
    base = plain(b, [b.demo])
    check(base.rc == 1 and b"Assertion" in base.out and "CUDA_ERROR_ASSERT" in base.err_text,
          "the demo does not fail as designed\n" + base.describe())
    rdir = b.newdir("reports")
    res = preloaded(b, [b.demo], None, rdir)
    same_as_plain(base, res, "demo preloaded")
    rep = load_report(rdir)
    check_error(rep, 710, "cuStreamSynchronize")
    expect_exact(rep, kernel=LOSS, seq=8, stream_kind="created")
    hist = [h.get("mangled") for h in rep.get("history") or []]
    check(hist[-1:] == ["_Z9embed_fwdPKiPfi"], "history should end with the embedding lookup of step 3: %s" % hist)


if __name__ == "__main__":
    sys.exit(h.main())
