#!/usr/bin/env python3
"""Scenario tests of culprit over the simulated CUDA driver: fault injection. A driver call made to fail
(FAKECUDA_FAIL) looks the same to the program with culprit in between, and culprit's own calls failing
(breadcrumbs, host memory) leave an honest verdict. The harness is cases.py's.

    python3 inject_cases.py --build BUILD CASE     run one case: exit 0 pass, 1 fail (with the reason), 77 skip
    python3 inject_cases.py --list                 the case names, one a line
    python3 inject_cases.py --check-list NAME...   check NAME... (CMake's list) is exactly the list of cases

Standard library only.
"""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases import (CaseSkipped, REPO, STEP, check, check_launch, expect_exact, failed_api, fault_run,
                   find_candidate, no_report, plain, preloaded, same_as_plain)  # noqa: E402

cases.CASES.clear()  # this file's cases only
case = cases.case


# Fault injection: a failing driver call looks the same to the program with culprit in between -----------------

WORK_MODES = ("linked", "procaddr", "dlsym")
ERROR_OF_CODE = {2: "CUDA_ERROR_OUT_OF_MEMORY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 999: "CUDA_ERROR_UNKNOWN"}


def inject(b, specs, extra=None):
    for spec in specs:
        parts = spec.split(":")
        code = int(parts[2]) if len(parts) > 2 else 2
        for mode in WORK_MODES:
            argv = [b.prog("work"), mode]
            env = dict(extra or {}, FAKECUDA_FAIL=spec)
            base = plain(b, argv, env)
            got = failed_api(base)
            check(base.rc == 1 and got and got[1] == ERROR_OF_CODE[code],
                  "FAKECUDA_FAIL=%s did not make the %s workload fail\n%s" % (spec, mode, base.describe()))
            res = preloaded(b, argv, env, b.newdir("reports"))
            same_as_plain(base, res, "FAKECUDA_FAIL=%s, %s" % (spec, mode))


@case("inject_launch")
def _(b):
    inject(b, ["cuLaunchKernel:3", "cuLaunchKernel:6:999", "cuLaunchKernelEx:1", "cuLaunchCooperativeKernel:1"])


@case("inject_stream")
def _(b):
    inject(b, ["cuStreamCreate:1", "cuStreamDestroy_v2:1"])


@case("inject_sync")
def _(b):
    inject(b, ["cuStreamSynchronize:1", "cuCtxSynchronize:1", "cuCtxSynchronize:1:700"])


@case("inject_memcpy")
def _(b):
    inject(b, ["cuMemcpyHtoD_v2:1", "cuMemcpyDtoH_v2:1", "cuMemcpyDtoHAsync_v2:1"])


@case("inject_memset")
def _(b):
    # The program's own memsets fail. The simulated driver counts calls per entry point across the process, so
    # culprit's breadcrumbs, memsets by default, would take the count meant for the program: they are writes here.
    inject(b, ["cuMemsetD32_v2:1", "cuMemsetD32Async:1"], {"CULPRIT_MARK": "write"})


@case("inject_event")
def _(b):
    inject(b, ["cuEventCreate:1", "cuEventRecord:1", "cuEventSynchronize:1", "cuEventDestroy_v2:1"])


@case("inject_free")
def _(b):
    inject(b, ["cuMemAlloc_v2:1", "cuMemFree_v2:1"])


@case("inject_module")
def _(b):
    inject(b, ["cuModuleLoadData:1", "cuModuleGetFunction:2", "cuModuleUnload:1"])


@case("inject_context")
def _(b):
    inject(b, ["cuInit:1", "cuDevicePrimaryCtxRetain:1", "cuCtxSetCurrent:1"])


def breadcrumbs_unavailable(b, fail, extra=None):
    """culprit's own driver calls for breadcrumbs fail: the program must not notice, and a later fault gets an
    honest verdict: "candidates", listing every launch since the last successful synchronize (the faulting one
    among them), with a reason that says breadcrumbs were missing."""
    for mode in WORK_MODES:
        argv = [b.prog("work"), mode]
        base = plain(b, argv, {"FAKECUDA_FAIL": fail})
        check(base.rc == 0, "scenario broken\n" + base.describe())
        rdir = b.newdir("reports")
        res = preloaded(b, argv, dict(extra or {}, FAKECUDA_FAIL=fail), rdir)
        check(res.rc == 0 and res.out == base.out and res.err == base.err,
              "FAKECUDA_FAIL=%s changed a healthy run (%s)\n%s" % (fail, mode, res.describe()))
        no_report(rdir, "healthy run")
    candidates_without_breadcrumbs(b, fail, extra)


def candidates_without_breadcrumbs(b, fail, extra=None):
    """The fault half of breadcrumbs_unavailable: launch #4 faults while FAIL refuses culprit's breadcrumbs."""
    env = dict(extra or {}, FAKECUDA_FAULT="launch=4", FAKECUDA_FAIL=fail)
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "candidates", "breadcrumbs were unavailable, yet the verdict is %r (%r)" % (
        v.get("certainty"), v.get("reason")))
    check(isinstance(v.get("reason"), str) and "breadcrumb" in v["reason"],
          "the reason must say breadcrumbs were missing: %r" % v.get("reason"))
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check(seqs and seqs[0] <= 4 <= seqs[-1] and seqs == list(range(seqs[0], seqs[-1] + 1)),
          "candidates must be every launch since the last synchronize: %r" % seqs)
    check_launch(find_candidate(rep, 4), "candidate #4", kernel=STEP, stream_kind="legacy", symbolized=False)


def hooked_symbols():
    """Every driver entry point libculprit hooks, read from its table (src/intercept/hooks.h)."""
    with open(os.path.join(REPO, "src", "intercept", "hooks.h")) as f:
        return re.findall(r"^\s*(?:SURFACE|CUSTOM)\((cu\w+),", f.read(), re.M)


@case("inject_every_hook")
def _(b):
    """Each hooked entry point, reached through dlsym, returns exactly what the driver returned: a plain failure
    (2) passes through untouched and writes no report; a sticky one (700) passes through and is reported as
    surfacing in that very call."""
    syms = hooked_symbols()
    check(len(syms) > 100, "the hook table was not read: %d symbols" % len(syms))
    tried = 0
    for sym in syms:
        for code in (2, 700):
            rdir = b.newdir("reports")
            env = {"FAKECUDA_FAIL": "%s:*:%d" % (sym, code)}
            res = preloaded(b, [b.prog("callhook"), sym], env, rdir)
            out = res.out.decode()
            if out.strip() == "missing":
                break                          # the simulated driver does not have this one
            check(res.rc == 0 and out.strip() == "rc=%d" % code,
                  "%s failing with %d: the program saw %r\n%s" % (sym, code, out, res.describe()))
            reports = glob.glob(os.path.join(rdir, "culprit-*.json"))
            if code == 2:
                check(not reports, "%s: a non-sticky failure wrote a report" % sym)
            else:
                check(len(reports) == 1, "%s: a sticky failure wrote %d reports\n%s" % (sym, len(reports),
                                                                                       res.describe()))
                with open(reports[0]) as f:
                    api = json.load(f)["error"]["api"]
                check(api == sym, "%s: the report says it surfaced in %s" % (sym, api))
            tried += 1
    check(tried > 150, "only %d hooked calls could be exercised" % tried)


@case("inject_hostalloc")
def _(b):
    breadcrumbs_unavailable(b, "cuMemHostAlloc:*;cuMemAllocHost_v2:*")


@case("inject_hostptr")
def _(b):
    breadcrumbs_unavailable(b, "cuMemHostGetDevicePointer_v2:*")


@case("inject_writevalue")
def _(b):
    write = {"CULPRIT_MARK": "write"}
    breadcrumbs_unavailable(b, "cuStreamWriteValue64_v2:*", write)
    # One write fails (after launch #2); the program does not notice, and culprit does not blame a wrong launch.
    env = dict(write, FAKECUDA_FAULT="launch=4", FAKECUDA_FAIL="cuStreamWriteValue64_v2:2")
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
    if (rep.get("verdict") or {}).get("certainty") == "exact":
        check(rep["culprit"].get("seq") == 4, "culprit #%s, expected #4" % rep["culprit"].get("seq"))
    else:
        find_candidate(rep, 4)


@case("inject_mark_fallback")
def _(b):
    """The default breadcrumb is a memset; a driver that refuses it gets the fenced write instead, from the first
    refusal on, and the verdict stays exact. Where the write is refused too, breadcrumbs are unavailable."""
    if cases.MARK == "write":
        raise CaseSkipped("a case about the memset mark")
    for mode in ("precise", "record"):
        env = {"CULPRIT_MODE": mode, "FAKECUDA_FAULT": "launch=4", "FAKECUDA_FAIL": "cuMemsetD32Async:*:801"}
        res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
        cfg = rep.get("config") or {}
        check(cfg.get("mark") == "write" and cfg.get("memset_refused") == 801,
              "%s: after the memset was refused (801) the config must say the writes took over: %r" % (mode, cfg))
        if mode == "precise" or (rep.get("verdict") or {}).get("certainty") == "exact":
            expect_exact(rep, kernel=STEP, seq=4)
        else:
            find_candidate(rep, 4)
        stats = rep.get("stats") or {}
        check(stats.get("crumb_failures") == 0 and (stats.get("crumbs") or 0) > 0,
              "%s: every breadcrumb must have been written after the fallback: %r" % (mode, stats))
    # Without a refusal the memset serves and the config says so.
    env = {"CULPRIT_MODE": "precise", "FAKECUDA_FAULT": "launch=4"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", cli=False)
    cfg = rep.get("config") or {}
    check(cfg.get("mark") == "memset" and "memset_refused" not in cfg, "config %r" % cfg)
    expect_exact(rep, kernel=STEP, seq=4)
    # (the healthy half of breadcrumbs_unavailable cannot run here: the work program's own memsets would fail)
    candidates_without_breadcrumbs(b, "cuMemsetD32Async:*;cuStreamWriteValue64_v2:*")


# ---------------------------------------------------------------------------------------------------------------

if __name__ == "__main__":
    sys.exit(cases.main())
