#!/usr/bin/env python3
"""Scenario tests of record mode's window, over the simulated CUDA driver: breadcrumbs at their default density
(every 16th launch of a stream, a stream's first launch, its first after a synchronize, the tail marks), the
completion bounds a program proves itself (an event it synchronized or queried, a stream query that said done),
a device reset between launches, launches made while recording was paused, threads sharing one stream, a
capture that must not allocate, precise mode against the same program, and the calls a fault on the legacy stream
surfaces in (a context or stream synchronize, a device-to-host copy, a free, an event synchronize, the next
launch).

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check, brief = h.case, h.check, h.brief
fault_run, expect_exact, check_stack = h.fault_run, h.expect_exact, h.check_stack
expect_verdict_text = h.expect_verdict_text
plain, preloaded, same_as_plain = h.plain, h.preloaded, h.same_as_plain
STEP, BAD = h.STEP, h.BAD


def legacy_surface(b, how, api, n=4, env=None):
    env = dict(env or {})
    env["FAKECUDA_FAULT"] = "launch=%d" % n
    res, rep = fault_run(b, "linked", ["legacy", how], env, api)
    pid = rep["process"]["pid"]
    expect_exact(rep, kernel=STEP, seq=n, stream_kind="legacy", device=0, thread=pid, kind="kernel",
                 api="cuLaunchKernel", grid=[4, 1, 1], block=[64, 1, 1])
    check(rep["error"]["thread"] == pid, "error.thread %r, expected %d" % (rep["error"]["thread"], pid))
    check_stack(rep, "linked", "legacy")
    expect_verdict_text(res, STEP)
    return rep


@case("plan_young_stream")
def _(b):
    """record mode's default mark plan: a young stream (its first 512 launches) gets a breadcrumb after every
    launch, so the fault at launch 20 of 40 is named exactly, and the report says how marks were spent."""
    env = {"FAKECUDA_FAULT": "launch=20", "CULPRIT_CRUMB_EVERY": ""}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "40"], env, "cuCtxSynchronize")
    expect_exact(rep, kernel=STEP, seq=20, stream_kind="legacy")
    st = (rep.get("streams") or [{}])[0]
    marks = st.get("marks") or {}
    check(marks.get("queued") == 40 and marks.get("spacing") == 1,
          "a young stream's every launch is marked: %r" % st)


@case("plan_dense_stream")
def _(b):
    """Past its youth, a dense stream of short launches is marked as sparsely as the widest spacing (16): the
    fault at launch 1300 of 1400 is a window of at most 16 launches holding it. The budget is made tiny
    (0.01%: launches would have to be 20 ms apart to be marked each), so how fast this machine launches does not
    matter."""
    env = {"FAKECUDA_FAULT": "launch=1300", "CULPRIT_CRUMB_EVERY": ""}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "1400"], env, "cuCtxSynchronize",
                         opts=("--mark-budget", "0.01"))
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check((rep.get("verdict") or {}).get("certainty") == "candidates", "verdict %r" % rep.get("verdict"))
    check(1300 in seqs and len(seqs) <= 16 and seqs == list(range(seqs[0], seqs[-1] + 1)),
          "the window must be at most 16 consecutive launches holding #1300: %r" % seqs)
    marks = (rep.get("streams") or [{}])[0].get("marks") or {}
    check(marks.get("spacing") == 16, "the plan's spacing %r" % marks)
    check(512 + (1400 - 512) // 16 <= marks.get("queued", 0) <= 512 + (1400 - 512) // 16 + 2,
          "512 marks in its youth, then one in 16: %r" % marks)


@case("plan_far_apart")
def _(b):
    """Past its youth, a stream whose launches come 1 ms apart (long kernels, or a host that does other work)
    is marked after every launch: a mark is a small share of its time (the default budget, 1%, allows one per
    200 us). The fault at launch 600 of 620 is named exactly."""
    env = {"FAKECUDA_FAULT": "launch=600", "CULPRIT_CRUMB_EVERY": ""}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "620", "1000"], env, "cuCtxSynchronize")
    expect_exact(rep, kernel=STEP, seq=600, stream_kind="legacy")
    marks = (rep.get("streams") or [{}])[0].get("marks") or {}
    check(marks.get("spacing") == 1 and marks.get("queued") == 620, "every launch is marked: %r" % marks)
    check(0 < marks.get("est_share", 0) < 0.01, "the estimated share of its time: %r" % marks)


@case("sparse_window")
def _(b):
    """record mode with the budget off (--mark-budget 0: a breadcrumb every 16th launch of a stream, its first
    and its first after a synchronize): the fault at launch 20 of 40 is reported as a window of at most 16
    launches on its stream that holds it, with a rerun that pins it."""
    env = {"FAKECUDA_FAULT": "launch=20", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}   # empty: the library's default
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "40"], env, "cuCtxSynchronize")
    v = rep.get("verdict") or {}
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check(v.get("certainty") == "candidates", "verdict %r (%r)" % (v.get("certainty"), v.get("reason")))
    check(20 in seqs, "launch #20 not among the candidates %r" % seqs)
    check(len(seqs) <= 16 and seqs == list(range(seqs[0], seqs[-1] + 1)),
          "the window must be at most 16 consecutive launches: %r" % seqs)
    check(all(c.get("stream_kind") == "legacy" for c in rep["candidates"]), "candidates off the faulting stream")
    w = v.get("window") or {}
    check(w.get("first") == seqs[0] and w.get("last") == seqs[-1], "verdict.window %r vs %r" % (w, seqs))
    check("--launches %d:%d" % (seqs[0], seqs[-1]) in res.err.decode("utf-8", "replace"),
          "the verdict must print the blocking rerun over the window\n%s" % res.describe())


@case("sparse_crumb_every")
def _(b):
    """--crumb-every 4 with the budget off: the window shrinks to the 4 launches after the last completed breadcrumb (#17..#20)."""
    env = {"FAKECUDA_FAULT": "launch=20", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "40"], env, "cuCtxSynchronize",
                         opts=("--crumb-every", "4"))
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check(seqs == [17, 18, 19, 20], "candidates %r, expected #17..#20" % seqs)


@case("sparse_stream_marks")
def _(b):
    """Record mode with the budget off (fixed spacing), four streams of six launches (none reaches its 16th): each stream's first
    launch gets a breadcrumb, so the window starts after it (#5..#24, not #1..#24); with an event recorded after
    every launch, each record queues a tail mark first, and every launch the streams ran before the fault is
    known complete (#13..#24 are left: what the round-robin had not run when write_oob faulted)."""
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD, "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    for form, want in (("streams4_quiet", list(range(5, 25))), ("streams4", list(range(13, 25)))):
        res, rep = fault_run(b, "linked", [form], env, "cuCtxSynchronize", cli=False)
        seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
        check(seqs == want, "%s: candidates %r, expected #%d..#24" % (form, seqs, want[0]))
        check(15 in seqs, "%s: the faulting launch is not among the candidates" % form)


def bounds_case(b, how):
    """Record mode's sparse breadcrumbs leave launches #17..#32 unproven, but the program proved #1..#18 complete
    itself; the window must start after #18 (launches #19..#21 are the only ones left)."""
    env = {"FAKECUDA_FAULT": "launch=19", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    res, rep = fault_run(b, "bounds", [how], env, "cuCtxSynchronize", src="bounds")
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check(seqs == [19, 20, 21], "candidates %r, expected #19..#21 after the %s bound" % (seqs, how))


@case("ctx_reset")
def _(b):
    """A device reset between launches frees the context's breadcrumb memory: culprit gives the new context
    fresh slots, names the faulting launch of the new context exactly, and lists no stream of the old one."""
    env = {"FAKECUDA_FAULT": "launch=19"}
    res, rep = fault_run(b, "bounds", ["reset"], env, "cuCtxSynchronize", src="bounds")
    expect_exact(rep, seq=19, stream_kind="legacy")
    streams = rep.get("streams") or []
    check(len(streams) == 1 and streams[0].get("last_launched") == 21,
          "only the new context's stream may be listed: %s" % streams)


@case("paused_fault")
def _(b):
    """The faulting launch was made while recording was paused (culprit.h CULPRIT_OFF): culprit never saw it,
    so it must not name the innocent launch after it as exact."""
    env = {"FAKECUDA_FAULT": "launch=1"}
    res, rep = fault_run(b, "bounds", ["paused"], env, "cuCtxSynchronize", src="bounds", cli=False)
    v = rep.get("verdict") or {}
    check(v.get("certainty") != "exact", "an unrecorded launch faulted, yet the verdict is exact: %s" % v)
    check("not record" in (v.get("reason") or ""), "the reason must say launches went unrecorded: %r" % v)


@case("shared_stream_threads")
def _(b):
    """Eight threads launch on the legacy stream at once, one launch faults: in every run, precise or record,
    the faulty launch is the culprit or among the candidates, and an innocent one is never called exact. Racing
    threads' breadcrumbs can land out of order, so now and then the suspects outnumber the 64 a report lists:
    that verdict must say so (unknown, with the whole window for the rerun), and it may not be the usual case."""
    named = runs = 0
    for density in ("1", "16"):
        for _ in range(5):
            env = {"FAKECUDA_FAULT": "kernel=%s" % BAD, "CULPRIT_CRUMB_EVERY": density}
            res, rep = fault_run(b, "shared", [], env, "cuCtxSynchronize", cli=False)
            v = rep.get("verdict") or {}
            runs += 1
            if v.get("certainty") == "exact":
                c = rep.get("culprit") or {}
                check(c.get("mangled") == BAD,
                      "an innocent launch was called exact (density %s): %s flags %s; %s; streams %s; history %s" % (
                          density, brief(c), c.get("flags"), v.get("reason"), json.dumps(rep.get("streams")),
                          [(h.get("seq"), h.get("mangled"), h.get("flags"), h.get("thread"))
                           for h in rep.get("history") or []]))
                named += 1
                continue
            cands = rep.get("candidates") or []
            names = [c.get("mangled") for c in cands]
            if BAD in names:
                named += 1
                continue
            w = v.get("window") or {}
            listed_all = len(cands) < 64 or (w.get("last", 0) - w.get("first", 0) + 1 <= len(cands))
            check(not listed_all and v.get("certainty") == "unknown" and
                  "only the first 64 are listed" in (v.get("reason") or ""),
                  "the faulty launch is not among the candidates %s (%s)" % (names, v))
    check(named >= runs - 2, "the faulty launch was named or listed in only %d of %d runs" % (named, runs))


@case("capture_no_alloc")
def _(b):
    """A global-mode capture as the first work of the process: culprit must not allocate pinned memory during it
    (the driver would invalidate the program's graph), in record or in precise mode."""
    argv = [b.prog("bounds"), "graphglobal"]
    base = plain(b, argv)
    check(base.rc == 0, "scenario broken\n" + base.describe())
    for env in ({"CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}, {"CULPRIT_MODE": "precise"}, {"CULPRIT_MODE": "blocking"}):
        res = preloaded(b, argv, env, b.newdir("reports"))
        same_as_plain(base, res, "capture under %s" % env)


@case("bounds_eventsync")
def _(b):
    bounds_case(b, "eventsync")


@case("bounds_eventquery")
def _(b):
    bounds_case(b, "eventquery")


@case("bounds_streamquery")
def _(b):
    """A stream query that answered "done" is a synchronize: the stream's first launch after it gets a breadcrumb
    (one mark per synchronize, where the GPU starts a new burst), so the fault in #19 is named exactly; the
    event bounds above leave the window #19..#21 (an event's completion is not a synchronize)."""
    env = {"FAKECUDA_FAULT": "launch=19", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    res, rep = fault_run(b, "bounds", ["streamquery"], env, "cuCtxSynchronize", src="bounds")
    expect_exact(rep, seq=19, stream_kind="legacy")
    # the same with the fault in #20: the window is what follows #19's completed mark
    env["FAKECUDA_FAULT"] = "launch=20"
    res, rep = fault_run(b, "bounds", ["streamquery"], env, "cuCtxSynchronize", src="bounds")
    seqs = sorted(c.get("seq") for c in rep.get("candidates") or [])
    check(seqs == [20, 21], "candidates %r, expected #20..#21 after #19's breadcrumb" % seqs)


@case("sparse_precise")
def _(b):
    """The same run in precise mode names launch 20 exactly, whatever CULPRIT_CRUMB_EVERY says."""
    env = {"FAKECUDA_FAULT": "launch=20", "CULPRIT_CRUMB_EVERY": "64"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "40"], env, "cuCtxSynchronize",
                         opts=("--mode", "precise"))
    expect_exact(rep, kernel=STEP, seq=20, stream_kind="legacy")
    check(rep["config"]["mode"] == "precise", "config.mode %r" % rep["config"].get("mode"))


@case("legacy_ctxsync")
def _(b):
    legacy_surface(b, "ctxsync", "cuCtxSynchronize")


@case("legacy_dtoh")
def _(b):
    legacy_surface(b, "dtoh", "cuMemcpyDtoH", n=7)


@case("legacy_streamsync")
def _(b):
    legacy_surface(b, "streamsync", "cuStreamSynchronize", n=1)


@case("legacy_memfree")
def _(b):
    legacy_surface(b, "memfree", "cuMemFree", n=10)


@case("legacy_eventsync")
def _(b):
    legacy_surface(b, "eventsync", "cuEventSynchronize", n=5)


@case("legacy_nextlaunch")
def _(b):
    # The GPU runs ahead of the host, so the fault is known before the program synchronizes: the error surfaces
    # at a launch (which launch depends on queue depth, so only the API is checked).
    rep = legacy_surface(b, "nextlaunch", "cuLaunchKernel", n=3, env={"FAKECUDA_RUN_AHEAD": "1"})
    check(rep["culprit"]["seq"] == 3, "culprit #%s" % rep["culprit"]["seq"])


if __name__ == "__main__":
    sys.exit(h.main())
