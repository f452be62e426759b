#!/usr/bin/env python3
"""Scenario tests of what each launch passed its kernel, over the simulated CUDA driver: progs/params.c launches
kernels that declare their parameters (an int, a pointer, a struct, nine long longs: more than a record keeps) in
every launch form, and prints the buffers it passed; each launch's "params" and "params_size" must hold them, in
a forked child and in eight threads too. Then two streams run the same kernel with the same grid on different
buffers, the GPU core dump's faulting address lies in one of them, and the verdict becomes exact by arguments;
with both on the same buffer, or without a layout, it stays candidates.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
Unaddressed, printed, joined = h.Unaddressed, h.printed, h.joined
GDB = os.path.join(HERE, "fake_cuda_gdb.py")


def run(b, args, env):
    """The scenario without culprit (it must fail at its synchronize) and under `culprit run`; (result, report)."""
    argv = [b.prog("params")] + list(args)
    base = h.plain(b, argv, env)
    h.expect_plain_failure(base, "cuCtxSynchronize", 700)
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env, rdir)
    h.same_as_plain(Unaddressed(base), Unaddressed(res), " ".join(args), exact_stderr=False)
    return res, h.load_report(rdir)


def launches(rep):
    """Every launch the report lists, by launch number."""
    out = {}
    for key in ("history", "candidates", "candidates_before_coredump"):
        for l in rep.get(key) or []:
            out[l["seq"]] = l
    if rep.get("culprit"):
        out[rep["culprit"]["seq"]] = rep["culprit"]
    return out


def words(*vals):
    return ["0x%x" % v for v in vals]


def expect_params(l, want, size, what):
    check(l.get("params") == want and l.get("params_size") == size,
          "%s: params %r size %r, expected %r size %r" % (what, l.get("params"), l.get("params_size"), want, size))


@case("params_record")
def _(b):
    """Every shape and launch form: an int and a pointer (kernelParams), an int, a pointer and a 16-byte struct
    holding a pointer (padding zero), 72 bytes of which 56 are kept, the packed buffer of `extra`,
    cuLaunchKernelEx; a kernel the driver does not describe keeps none."""
    res, rep = run(b, ["record"], {"FAKECUDA_FAULT": "kernel=write_oob"})
    p = printed(res)
    a, bb = p["a"], p["b"]
    ls = launches(rep)
    check(sorted(ls) == list(range(1, 8)), "launches 1..7 listed: %s" % sorted(ls))
    expect_params(ls[1], words(a, 77), 12, "step(a, 77)")
    expect_params(ls[2], words(0xfffffffb, a, 0x1234567890, bb), 32, "mixed(-5, a, {n, b})")
    expect_params(ls[3], words(*range(0x1000, 0x1007)), 72, "wide(9 words)")
    expect_params(ls[4], words(bb, 99), 12, "step through extra")
    expect_params(ls[5], words(bb, 3), 12, "cuLaunchKernelEx step(b, 3)")
    check("params" not in ls[6] and "params_size" not in ls[6], "unknown layout keeps none: %r" % ls[6])
    expect_params(ls[7], words(a, 16), 12, "write_oob(a, 16)")
    check(all("flags" not in l or l["flags"] for l in ls.values()), "no empty flags lists")


@case("params_buffers")
def _(b):
    """The verdict says which recorded allocation each argument word points into: write_oob(a + 256, 32) points
    at offset 256 of a's 4096 bytes; given a buffer freed before the launch, the word is called a use after free;
    the int argument points nowhere and gets no line."""
    for how in ("", "freed"):
        res, rep = run(b, ["buffers"] + ([how] if how else []), {"FAKECUDA_FAULT": "kernel=write_oob"})
        p = printed(res)
        culprit = rep.get("culprit") or {}
        check(culprit.get("kernel", "").startswith("write_oob"), "the culprit: %r" % culprit.get("kernel"))
        text = joined(res.err_text)
        if how:
            want = ("word 0 points to offset 0 of memory freed before this launch (a use after free): the "
                    "allocation of 2048 bytes at 0x%x (cuMemAlloc_v2 before any launch; freed by cuMemFree_v2 after "
                    "launch #1)" % p["f"])
        else:
            want = ("word 0 points to offset 256 of the allocation of 4096 bytes at 0x%x (cuMemAlloc_v2 before any "
                    "launch)" % p["a"])
        check(want in text, "%s: no line saying where the argument points\n%s" % (how or "live", text))
        check("word 1 points" not in text, "the int argument got a line\n" + text)
    # record mode's window of candidates: the one passed freed memory is singled out as the likeliest, the
    # others (live buffers) get no such line, and the verdict stays candidates
    res, rep = run(b, ["buffers", "freed-then"], {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"})
    p = printed(res)
    text = joined(res.err_text)
    check(rep["verdict"]["certainty"] == "candidates", "verdict %r" % rep["verdict"])
    want = ("launch #5 was passed memory freed before it was made, the likeliest of these to have faulted: its word "
            "0 points to offset 0 of memory freed before this launch (a use after free): the allocation of 2048 "
            "bytes at 0x%x" % p["f"])
    check(want in text and text.count("was passed memory freed") == 1, "the candidates' hint\n" + text)


@case("params_unknown")
def _(b):
    """A driver that cannot describe the kernels: no launch keeps parameters, nothing else changes."""
    res, rep = run(b, ["record", "nolayout"], {"FAKECUDA_FAULT": "kernel=write_oob"})
    ls = launches(rep)
    check(len(ls) == 7, "launches 1..7 listed: %s" % sorted(ls))
    # the launch through `extra` hands its buffer over whole: that needs no layout
    expect_params(ls[4], words(printed(res)["b"], 99), 12, "step through extra")
    for seq, l in ls.items():
        if seq != 4:
            check("params" not in l and "params_size" not in l, "launch #%d keeps params: %r" % (seq, l))


@case("params_fork")
def _(b):
    """The child's record carries the child's buffer, not the parent's."""
    env = {"FAKECUDA_FAULT": "kernel=write_oob,nth=2"}
    argv = [b.prog("params"), "fork"]
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, env, rdir)
    p = printed(res)
    files = h.report_files(rdir)
    check(len(files) == 1, "one report (the child's): %s\n%s" % (files, res.describe()))
    with open(files[0]) as f:
        rep = json.load(f)
    ls = launches(rep)
    check(rep.get("culprit") and rep["culprit"]["params"] == words(p["child"], 2),
          "the child's culprit: %r (child 0x%x)" % (rep.get("culprit"), p["child"]))
    check(all(l.get("params", [None])[0] != "0x%x" % p["parent"] for l in ls.values()),
          "a launch of the parent in the child's report: %r" % ls)


@case("params_threads")
def _(b):
    """Eight threads launch step(their buffer, their index) on their own streams; every launch carries its own."""
    res, rep = run(b, ["threads"], {"FAKECUDA_FAULT": "kernel=write_oob"})
    p = printed(res)
    steps = [l for l in launches(rep).values() if l["kernel"].startswith("step")]
    check(len(steps) >= 8, "the threads' launches are candidates: %d" % len(steps))
    by_thread = {}
    for l in steps:
        w = l.get("params") or []
        check(len(w) == 2 and l.get("params_size") == 12, "launch #%d params %r" % (l["seq"], w))
        i = int(w[1], 16)
        check(0 <= i < 8 and int(w[0], 16) == p["t%d" % i], "launch #%d: buffer %s for index %d (t%d=0x%x)" % (
            l["seq"], w[0], i, i, p.get("t%d" % i, 0)))
        by_thread.setdefault(l["thread"], set()).add(i)
    check(len(by_thread) == 8 and all(len(v) == 1 for v in by_thread.values()) and
          set().union(*by_thread.values()) == set(range(8)), "each thread passed its own index: %r" % by_thread)


@case("params_graph")
def _(b):
    """A graph launch keeps no parameters; the kernel captured into it, listed as its node, keeps its own."""
    res, rep = run(b, ["graph"], {"FAKECUDA_FAULT": "kernel=write_oob"})
    p = printed(res)
    graphs = [l for l in launches(rep).values() if l.get("kind") == "graph"]
    check(len(graphs) == 1, "one graph launch listed: %r" % launches(rep))
    g = graphs[0]
    check("params" not in g and "params_size" not in g, "the graph launch keeps params: %r" % g)
    nodes = g.get("graph_nodes") or []
    check(len(nodes) == 1 and nodes[0].get("params") == words(p["a"], 5) and nodes[0].get("params_size") == 12,
          "its node keeps its own: %r" % nodes)


def dump_run(b, how, tag, env=None):
    """The two-stream scenario under `culprit run --coredump`: the second write_oob faults with a misaligned
    store 64 bytes (+2) into its buffer, which the stand-in debugger shows (env: other settings of the fault
    and of the stand-in debugger)."""
    env = dict({"FAKECUDA_FAULT": "kernel=write_oob,nth=2,code=716", "CULPRIT_CUDA_GDB": GDB,
                "FAKE_CUDA_GDB_INSN": "STG.E desc[UR8][R2.64+0x2],R5", "FAKE_CUDA_GDB_OFFSET": "64"}, **(env or {}))
    rdir = b.newdir(tag)
    argv = [b.prog("params"), "streams"] + ([how] if how else [])
    res = h.cli_run(b, argv, env, rdir, ("--coredump",))
    files = [f for f in os.listdir(rdir) if re.match(r"culprit-\d+(-hang)?\.json$", f)]
    check(len(files) == 1, "one report expected in %s: %s\n%s" % (rdir, os.listdir(rdir), res.describe()))
    with open(os.path.join(rdir, files[0])) as f:
        return res, json.load(f)


@case("params_library")
def _(b):
    """Kernels of a library (CUkernel handles, as cudart launches them) keep their parameters, also where the
    driver refuses such a handle in cuFuncGetParamInfo with an invalid value (the answer it gives past a
    function's last parameter): the kernel form then describes all of them."""
    for env in ({}, {"FAKECUDA_FAIL": "cuFuncGetParamInfo:*:1"}):
        res, rep = run(b, ["library"], dict(env, FAKECUDA_FAULT="kernel=write_oob"))
        p = printed(res)
        steps = [l for l in launches(rep).values() if l["kernel"].startswith(("step", "write_oob"))]
        check(len(steps) == 2, "%r: both launches listed: %r" % (env, launches(rep)))
        for l in steps:
            expect_params(l, words(p["buf"], 64), 12, "%r: %s" % (env, l["kernel"]))


@case("params_by_arguments")
def _(b):
    """Same kernel, same grid, two streams, buffers a and b: the dump's address lies in b, so the launch that
    passed b is the culprit, named by its arguments."""
    res, rep = dump_run(b, "", "reports")
    p = printed(res)
    c = rep.get("culprit") or {}
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "exact" and c.get("by") == "arguments" and c.get("params") == words(p["b"], 16),
          "exact by arguments: verdict %r culprit %r\n%s" % (v, c, res.describe()))
    before = rep.get("candidates_before_coredump") or []
    check([l.get("params") for l in before] == [words(p["a"], 16)], "the other candidate kept: %r" % before)
    text = joined(res.err_text)
    check("named by its arguments: launch #%d's parameter bytes 0..7 hold 0x%x" % (c.get("seq"), p["b"]) in text,
          "the verdict says how\n" + text)
    check("arguments: 0x%x 0x10 (12 bytes)" % p["b"] in text, "the culprit's arguments are shown\n" + text)


@case("params_by_lanes")
def _(b):
    """An illegal address far past every buffer: the faulting lane's address lies in no allocation, but the
    warp's other lanes wrote into b, so the launch that passed b is the culprit, named by its arguments, and the
    wild lane is the one named as having made the access."""
    env = {"FAKECUDA_FAULT": "kernel=write_oob,nth=2,code=700", "FAKE_CUDA_GDB_INSN": "STG.E desc[UR8][R2.64],R5",
           "FAKE_CUDA_GDB_OFFSET": str(1 << 40), "FAKE_CUDA_GDB_LANES": "1"}
    res, rep = dump_run(b, "", "reports-lanes", env)
    p = printed(res)
    c = rep.get("culprit") or {}
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "exact" and c.get("by") == "arguments" and c.get("params") == words(p["b"], 16),
          "exact by the lanes' buffer: verdict %r culprit %r\n%s" % (v, c, res.describe()))
    fa = rep.get("fault_address") or {}
    check(fa.get("lane") == 5 and int(fa.get("address", "0"), 16) == p["b"] + (1 << 40),
          "the wild lane named: %r" % fa)
    check("which points into the allocation 0x%x.." % p["b"] in joined(res.err_text),
          "the verdict names the buffer\n" + joined(res.err_text))


@case("params_ambiguous")
def _(b):
    """Both launches on buffer a: both point there, the verdict stays candidates; without a layout too."""
    for how in ("same", "nolayout"):
        res, rep = dump_run(b, how, "reports-" + how)
        v = rep.get("verdict") or {}
        check(v.get("certainty") == "candidates" and len(rep.get("candidates") or []) == 2 and
              not rep.get("culprit"), "%s: stays candidates: %r\n%s" % (how, v, res.describe()))
        check("which more than one candidate runs" in (v.get("reason") or ""), "%s: reason %r" % (how, v))
        check("named by its arguments" not in res.err_text, "%s: named by arguments\n%s" % (how, res.err_text))


def page_run(b, args, tag, spec="kernel=write_oob,nth=2,offset=16384", more=None):
    """params ARGS under `culprit run`, the simulated driver logging the faulting write's page (arg0 + offset) as
    the kernel logs a GPU memory fault (FAKECUDA_KMSG) into the file culprit reads (CULPRIT_KERNEL_LOG); (result,
    reports by pid, the log's path)."""
    log = os.path.join(b.newdir(tag + "-log"), "kern.log")
    open(log, "w").close()
    env = {"FAKECUDA_FAULT": spec, "FAKECUDA_KMSG": log, "CULPRIT_KERNEL_LOG": log}
    env.update(more or {})
    rdir = b.newdir(tag)
    res = h.cli_run(b, [b.prog("params")] + list(args), env, rdir)
    reps = {}
    for path in h.report_files(rdir):
        with open(path) as f:
            rep = json.load(f)
        reps[rep["process"]["pid"]] = rep
    return res, reps, log


@case("params_by_fault_page")
def _(b):
    """Same kernel, same grid, two streams, buffers a and b; the second launch writes 16 KiB past b, and the
    kernel's log gives that page: past b's end, so the launch that passed b is the culprit, named by the page."""
    res, reps, log = page_run(b, ["streams"], "page")
    p = printed(res)
    check(len(reps) == 1, "one report: %r\n%s" % (list(reps), res.describe()))
    rep = list(reps.values())[0]
    g = rep.get("gpu_fault_log") or {}
    page = (p["b"] + 16384) & ~0xfff
    check(g.get("xid") == 31 and g.get("address") == "0x%x" % page and g.get("pid") == rep["process"]["pid"] and
          g.get("matched") == "pid" and g.get("access") == "write" and g.get("source") == log,
          "gpu_fault_log: %r (page 0x%x)" % (g, page))
    fa = rep.get("fault_address") or {}
    check(fa.get("source") == "kernel log" and fa.get("address") == "0x%x" % page and fa.get("granule") == 4096 and
          fa.get("access") == "write" and (fa.get("below") or {}).get("base") == "0x%x" % p["b"],
          "fault_address: %r" % fa)
    c, v = rep.get("culprit") or {}, rep.get("verdict") or {}
    check(v.get("certainty") == "exact" and c.get("by") == "fault page" and c.get("params") == words(p["b"], 16),
          "exact by the page: verdict %r culprit %r\n%s" % (v, c, res.describe()))
    before = rep.get("candidates_before_fault_page") or []
    check([l.get("params") for l in before] == [words(p["a"], 16)], "the other candidate kept: %r" % before)
    text = joined(res.err_text)
    for words_ in ("named by the page of the faulting address: the kernel's log puts the GPU's memory fault in the "
                   "page at 0x%x, just past the end of the allocation 0x%x" % (page, p["b"]),
                   "the faulting address lies in the 4096-byte page at 0x%x (a write;" % page,
                   "the page begins %d bytes after the end of the allocation of 4096 bytes at 0x%x" % (
                       page - p["b"] - 4096, p["b"])):
        check(words_ in text, "%r is not in the verdict\n%s" % (words_, text))


SPARSE = {"CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}  # fixed spacing: no breadcrumb among a few launches


@case("params_fault_page_one_stream")
def _(b):
    """One kernel on two streams: stream 2 ran it four times on b, then stream 1 six times on a, and a launch on stream 2
    faulted 16 KiB past b. Only stream 2's unfinished launches were passed b: the candidates shrink to them (which
    of them is not known: no breadcrumb was spent among them), stream 1's go to candidates_before_fault_page."""
    res, reps, log = page_run(b, ["streams", "several"], "one-stream", "kernel=write_oob,nth=2,offset=16384", SPARSE)
    p = printed(res)
    check(len(reps) == 1, "one report: %r\n%s" % (list(reps), res.describe()))
    rep = list(reps.values())[0]
    v = rep.get("verdict") or {}
    cands, before = rep.get("candidates") or [], rep.get("candidates_before_fault_page") or []
    check(v.get("certainty") == "candidates" and not rep.get("culprit") and len(cands) >= 2 and
          all(l.get("params") == words(p["b"], 16) for l in cands) and len({l.get("stream") for l in cands}) == 1,
          "stream 2's launches: verdict %r candidates %r\n%s" % (v, cands, res.describe()))
    check(before and all(l.get("params") == words(p["a"], 16) for l in before),
          "stream 1's launches set aside: %r" % before)
    seqs = sorted(l["seq"] for l in cands)
    check(v.get("window") == {"first": seqs[0], "last": seqs[-1]} and "likeliest" not in v,
          "the window is stream 2's: %r" % v)
    text = joined(res.err_text)
    page = (p["b"] + 16384) & ~0xfff
    said = ("narrowed by the page of the faulting address to the unfinished launches of one stream: the kernel's "
            "log puts the GPU's memory fault in the page at 0x%x, just past the end of the allocation 0x%x" %
            (page, p["b"]))
    check(said in text and "which only launches of stream %s were passed" % cands[0]["stream"] in text,
          "%r is not in the verdict\n%s" % (said, text))


@case("params_fault_page_likeliest")
def _(b):
    """The same, stream 2's launch of write_oob between two of a kernel whose parameters are not kept: the window
    shrinks to stream 2's launches, and the one that was passed b is the likeliest, not proven."""
    res, reps, log = page_run(b, ["streams", "likely"], "likeliest", "kernel=write_oob,nth=1,offset=16384", SPARSE)
    p = printed(res)
    rep = list(reps.values())[0] if len(reps) == 1 else {}
    v = rep.get("verdict") or {}
    cands = rep.get("candidates") or []
    hit = [l for l in cands if l.get("params") == words(p["b"], 16)]
    before = rep.get("candidates_before_fault_page") or []
    check(v.get("certainty") == "candidates" and len(cands) >= 2 and len(hit) == 1 and
          v.get("likeliest") == hit[0]["seq"] and len({l.get("stream") for l in cands}) == 1 and
          before and all(l.get("params") == words(p["a"], 16) for l in before),
          "the likeliest: verdict %r candidates %r\n%s" % (v, cands, res.describe()))
    check("of them launch #%d is the likeliest, not proven" % hit[0]["seq"] in joined(res.err_text),
          "the verdict says so\n" + joined(res.err_text))


@case("params_fault_page_assert")
def _(b):
    """A device assert (710) logs no page: a memory-fault line of the process's pid (written here as another
    fault would) is not tied to it and narrows nothing; both launches stay candidates."""
    log = os.path.join(b.newdir("assert-log"), "kern.log")
    open(log, "w").close()
    env = {"FAKECUDA_FAULT": "kernel=write_oob,nth=2,code=710,offset=16384", "FAKECUDA_KMSG": log,
           "CULPRIT_KERNEL_LOG": log, "FAKECUDA_KMSG_ANY": "1"}
    rdir = b.newdir("assert")
    res = h.cli_run(b, [b.prog("params"), "streams"], env, rdir)
    rep = h.load_report(rdir)
    with open(log) as f:
        lines = f.read().splitlines()
    check(len(lines) == 1 and "Xid (PCI:0000:00:06): 31, pid=%d," % rep["process"]["pid"] in lines[0],
          "the log holds a line of the process: %r" % lines)
    v = rep.get("verdict") or {}
    check((rep.get("error") or {}).get("code") == 710 and "gpu_fault_log" not in rep and
          "fault_address" not in rep and "named by the page" not in res.err_text,
          "no page tied to an assert: %r %r\n%s" % (rep.get("gpu_fault_log"), rep.get("fault_address"),
                                                       res.describe()))
    check(v.get("certainty") in ("candidates", "exact") and not (rep.get("culprit") or {}).get("by") == "fault page",
          "the verdict is the assert's: %r" % v)


@case("params_fault_page_ambiguous")
def _(b):
    """Both launches on buffer a: both point next to the page, the verdict stays candidates; a page far from
    every buffer names no launch; the page is answered all the same."""
    for args, spec in ((["streams", "same"], "kernel=write_oob,nth=2,offset=16384"),
                       (["streams"], "kernel=write_oob,nth=2,offset=0x40000000000,access=read")):
        res, reps, log = page_run(b, args, "ambiguous", spec)
        rep = list(reps.values())[0] if len(reps) == 1 else {}
        v, fa = rep.get("verdict") or {}, rep.get("fault_address") or {}
        check(v.get("certainty") == "candidates" and len(rep.get("candidates") or []) == 2 and
              not rep.get("culprit") and "named by the page" not in res.err_text,
              "%s: stays candidates: %r\n%s" % (args, v, res.describe()))
        check(fa.get("source") == "kernel log" and fa.get("answer") in ("outside", "nothing_near"),
              "%s: the page answered: %r" % (args, fa))
    check(fa.get("access") == "read" and fa.get("answer") == "nothing_near" and
          "(a read;" in res.err_text, "the far read: %r" % fa)


@case("params_fault_page_fork")
def _(b):
    """A forked child faults: its report gets the line of its own pid, and its culprit stays its own launch."""
    res, reps, log = page_run(b, ["fork"], "fork")
    p = printed(res)
    check(len(reps) == 1, "one report (the child's): %r\n%s" % (list(reps), res.describe()))
    pid, rep = list(reps.items())[0]
    g = rep.get("gpu_fault_log") or {}
    check(g.get("pid") == pid and g.get("matched") == "pid" and
          g.get("address") == "0x%x" % ((p["child"] + 16384) & ~0xfff), "the child's line: %r" % g)
    with open(log) as f:
        lines = f.read().splitlines()
    check(len(lines) == 1 and "pid=%d," % pid in lines[0], "the log: %r" % lines)


if __name__ == "__main__":
    sys.exit(h.main())
