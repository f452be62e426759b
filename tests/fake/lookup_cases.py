#!/usr/bin/env python3
"""Scenario tests of how a program reaches the driver's entry points, over the simulated CUDA driver: by dlsym of
libcuda (CuPy's way), by cuGetProcAddress in its versions and with the per-thread default stream flag (the CUDA
runtime's and PyTorch's way, the pointer asked of the driver or of culprit itself), through RTLD_DEFAULT and
RTLD_NEXT. Each way must reach culprit's wrappers: the faulting launch named exactly, on the right kind of stream,
its launching line in the stack.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
fault_run, expect_exact, check_stack = h.fault_run, h.expect_exact, h.check_stack
STEP, BAD = h.STEP, h.BAD


@case("lookup_dlsym")
def _(b):
    res, rep = fault_run(b, "dlsym", ["legacy"], {"FAKECUDA_FAULT": "launch=6"}, "cuMemcpyDtoH")
    expect_exact(rep, kernel=STEP, seq=6, stream_kind="legacy", api="cuLaunchKernel")
    check_stack(rep, "dlsym", "legacy")


@case("lookup_dlsym_ptsz")
def _(b):
    res, rep = fault_run(b, "dlsym", ["ptsz"], {"FAKECUDA_FAULT": "kernel=%s" % BAD}, "cuStreamSynchronize")
    check(b"legacy stream synchronized" in res.out, res.describe())
    expect_exact(rep, kernel=BAD, seq=8, stream_kind="per-thread", api="cuLaunchKernel")
    check_stack(rep, "dlsym", "ptsz")


def procaddr_legacy(b, how):
    res, rep = fault_run(b, "procaddr", [how, "legacy"], {"FAKECUDA_FAULT": "launch=7"}, "cuMemcpyDtoH")
    expect_exact(rep, kernel=STEP, seq=7, stream_kind="legacy", api="cuLaunchKernel")
    check_stack(rep, "procaddr", "legacy")


@case("lookup_procaddr_v2")
def _(b):
    procaddr_legacy(b, "v2")


@case("lookup_procaddr_v2self")
def _(b):
    procaddr_legacy(b, "v2self")


@case("lookup_procaddr_v1")
def _(b):
    procaddr_legacy(b, "v1")


@case("lookup_procaddr_v1self")
def _(b):
    procaddr_legacy(b, "v1self")


@case("lookup_ptds_flag")
def _(b):
    for how in ("v2", "v1"):
        res, rep = fault_run(b, "procaddr", [how, "ptds-flag"], {"FAKECUDA_FAULT": "kernel=%s" % BAD},
                             "cuStreamSynchronize")
        check(b"legacy stream synchronized" in res.out, res.describe())
        expect_exact(rep, kernel=BAD, seq=8, stream_kind="per-thread", api="cuLaunchKernel")
        check_stack(rep, "procaddr", "ptds-flag")


@case("lookup_ptds_handle")
def _(b):
    res, rep = fault_run(b, "procaddr", ["v2", "ptds-handle"], {"FAKECUDA_FAULT": "kernel=%s" % BAD},
                         "cuStreamSynchronize")
    check(b"legacy stream synchronized" in res.out, res.describe())
    expect_exact(rep, kernel=BAD, seq=8, stream_kind="per-thread")
    check_stack(rep, "procaddr", "ptds-handle")


@case("lookup_rtld_default")
def _(b):
    res, rep = fault_run(b, "rtld", ["default"], {"FAKECUDA_FAULT": "launch=5"}, "cuStreamSynchronize")
    expect_exact(rep, kernel=STEP, seq=5, stream_kind="legacy")
    check_stack(rep, "rtld", "rtld")


@case("lookup_rtld_next")
def _(b):
    res, rep = fault_run(b, "rtld", ["next"], {"FAKECUDA_FAULT": "launch=5"}, "cuStreamSynchronize")
    expect_exact(rep, kernel=STEP, seq=5, stream_kind="legacy")
    check_stack(rep, "rtld", "rtld")


if __name__ == "__main__":
    sys.exit(h.main())
