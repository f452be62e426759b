#!/usr/bin/env python3
"""Scenario tests of `culprit run --coredump` over the simulated CUDA driver, which writes a GPU core dump and
aborts the process as the driver does (tests/fakecuda/SPEC.md), read by a stand-in for cuda-gdb
(fake_cuda_gdb.py, chosen with CULPRIT_CUDA_GDB): the dump's kernel and line are tied to the process's report and
single out the faulting launch among record mode's candidates.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import glob
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
GDB = os.path.join(HERE, "fake_cuda_gdb.py")
# write_oob is launch #20 among 40 step launches; record mode's breadcrumbs (every 16th) leave #17..#32 open.
ENV = {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0", "CULPRIT_CUDA_GDB": GDB}


def flaky(b, env, opts):
    state = os.path.join(b.newdir("state"), "runs")
    rdir = b.newdir("reports")
    res = h.cli_run(b, [b.prog("linked"), "flaky", "40"], dict(env, FLAKY_STATE=state), rdir, opts)
    return res, rdir


def only_report(rdir, res):
    files = glob.glob(os.path.join(rdir, "culprit-*.json"))
    check(len(files) == 1, "expected one report, found %s\n%s" % (files, res.describe()))
    with open(files[0]) as f:
        return json.load(f)


@case("coredump_exact")
def _(b):
    argv = [b.prog("linked"), "flaky", "40"]
    base = h.plain(b, argv, dict(ENV, FLAKY_STATE=os.path.join(b.newdir("s"), "runs"),
                                 CUDA_ENABLE_COREDUMP_ON_EXCEPTION="1",
                                 CUDA_COREDUMP_FILE=os.path.join(b.newdir("d"), "core")))
    check(base.rc == -signal.SIGABRT, "the simulated driver did not abort after its dump\n" + base.describe())
    res, rdir = flaky(b, ENV, ("--coredump",))
    check(res.rc == -signal.SIGABRT, "culprit run did not pass the abort through\n" + res.describe())
    dumps = glob.glob(os.path.join(rdir, "coredumps-*", "gpucore-*.nvcudmp"))
    check(len(dumps) == 1, "no GPU core dump in the report directory: %s" % os.listdir(rdir))
    rep = only_report(rdir, res)
    check(rep.get("kind") == "fault", "the report of a process the driver aborted after a GPU exception is %r" %
          rep.get("kind"))
    h.check_error(rep, 700)
    h.expect_exact(rep, kernel=h.BAD, seq=20)
    cd = rep.get("coredump") or {}
    check(cd.get("exception") == "Warp Illegal Address" and cd.get("source_file") == "fake.cu" and
          cd.get("source_line") == 8 and cd.get("block") == [1, 0, 0] and cd.get("thread") == [3, 0, 0],
          "coredump: %r" % cd)
    check(cd.get("file") == dumps[0], "the report names dump %r, not %r" % (cd.get("file"), dumps[0]))
    check("the GPU core dump says write_oob(int*, int) faulted at fake.cu:8" in rep["verdict"]["reason"],
          "reason: %s" % rep["verdict"]["reason"])
    check(len(rep.get("candidates_before_coredump") or []) == 15, "the other candidates are not kept")
    check("the kernel that faulted: write_oob" in res.err_text, "culprit run's verdict\n" + res.describe())


@case("coredump_debugger_crash")
def _(b):
    # cuda-gdb 13.0 died after printing the exception on the H200: what it said first is enough.
    res, rdir = flaky(b, dict(ENV, FAKE_CUDA_GDB_CRASH="1"), ("--coredump",))
    rep = only_report(rdir, res)
    h.expect_exact(rep, kernel=h.BAD, seq=20)
    cd = rep.get("coredump") or {}
    check(cd.get("debugger_crashed") is True and
          cd.get("debugger_error") == "std::out_of_range: vector::_M_range_check: __n (which is 4294967294) >= "
          "this->size() (which is 64)", "coredump: %r" % cd)
    text = h.joined(res.err_text)
    check("cuda-gdb died reading the dump (std::out_of_range: vector::_M_range_check" in text,
          "the verdict says the debugger died, and of what\n" + res.describe())


@case("coredump_no_warps")
def _(b):
    # A dump without the faulting warp (every out-of-bounds store cuda-gdb 13.0 died on, on the H200): the dump's
    # own tables hold no warp (the kernel had finished) or only others, and the report says why no thread or
    # address can come from it, with the debugger dead or not.
    for warps, crash, words in (("0", "1", "the dump holds no warp of any kernel: the faulting kernel had finished"),
                                ("0", "0", "the dump holds no warp of any kernel: the faulting kernel had finished"),
                                ("others", "1", "the dump holds 3 warps, none of them the faulting one")):
        res, rdir = flaky(b, dict(ENV, FAKECUDA_COREDUMP_WARPS=warps, FAKE_CUDA_GDB_CRASH=crash), ("--coredump",))
        rep = only_report(rdir, res)
        h.expect_exact(rep, kernel=h.BAD, seq=20)
        cd = rep.get("coredump") or {}
        check(cd.get("warps_in_dump") == (0 if warps == "0" else 3) and words in (cd.get("address_unknown") or ""),
              "warps=%s crash=%s coredump: %r" % (warps, crash, cd))
        text = h.joined(res.err_text)
        check(words in text,
              "warps=%s crash=%s: the verdict does not say why the dump gives no address\n%s" %
              (warps, crash, res.describe()))
    # the same fault with its warp in the dump: the count is there, and no such reason
    res, rdir = flaky(b, ENV, ("--coredump",))
    cd = only_report(rdir, res).get("coredump") or {}
    check(cd.get("warps_in_dump") == 1 and "warp" not in (cd.get("address_unknown") or ""), "coredump: %r" % cd)


@case("coredump_no_debugger")
def _(b):
    # Without a debugger the dump stays, the report keeps record mode's window, and one line says why.
    res, rdir = flaky(b, dict(ENV, CULPRIT_CUDA_GDB=os.path.join(b.newdir("none"), "cuda-gdb")), ("--coredump",))
    check("was not found" in res.err_text, "no word of the missing debugger\n" + res.describe())
    check(glob.glob(os.path.join(rdir, "coredumps-*", "gpucore-*.nvcudmp")), "the dump is gone")
    rep = only_report(rdir, res)
    check("coredump" not in rep and rep["verdict"]["certainty"] == "candidates", "verdict %r" % rep["verdict"])


@case("coredump_user_settings")
def _(b):
    # The user's own core dump settings win: culprit adds none, so the dump goes where the user said.
    mine = os.path.join(b.newdir("mine"), "core-%p")
    res, rdir = flaky(b, dict(ENV, CUDA_ENABLE_COREDUMP_ON_EXCEPTION="1", CUDA_COREDUMP_FILE=mine), ("--coredump",))
    check(not glob.glob(os.path.join(rdir, "coredumps-*")) and not glob.glob(os.path.join(rdir, "gpucore-*")),
          "culprit overrode the user's CUDA_COREDUMP_FILE")
    check(glob.glob(os.path.join(os.path.dirname(mine), "core-*")), "the user's dump was not written")


if __name__ == "__main__":
    sys.exit(h.main())
