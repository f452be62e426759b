#!/usr/bin/env python3
"""Scenario tests of the allocation table over the simulated CUDA driver: progs/allocs.c allocates memory every way
the driver offers (and prints what it got), frees some, and faults; the report's "allocations" must hold exactly
those ranges with their kinds, sizes, launch numbers and sites, across reuse of an address, fork, threads, PyTorch's
expandable segments and a table that overflows. Then addresses inside, around and after them are asked about
(`culprit report --address`, and a report whose GPU core dump gave `coredump.address`); the answers are checked
against an oracle computed here from the program's own output, never against fixed addresses.

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
SRC = os.path.join(h.PROG_SRC, "allocs.c")
NEAR = 1 << 30   # src/render/addr.h: ADDR_NEAR


def alloc_marker(tag):
    with open(SRC) as f:
        lines = f.read().splitlines()
    hits = [i + 1 for i, l in enumerate(lines) if "/* CULPRIT-ALLOC %s */" % tag in l]
    check(len(hits) == 1, "expected one CULPRIT-ALLOC %s marker in allocs.c, found %s" % (tag, hits))
    return hits[0]


def run(b, scenario, env=None, cli=True, opts=()):
    """The scenario without culprit (it must fail at its synchronize) and with it; (result, report, printed)."""
    env = dict(env or {"FAKECUDA_FAULT": "kernel=write_oob"})
    argv = [b.prog("allocs"), scenario]
    base = h.plain(b, argv, env)
    check("error: cuCtxSynchronize returned CUDA_ERROR_ILLEGAL_ADDRESS (700)" in base.err_text,
          "the scenario did not fault as scripted\n" + base.describe())
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env, rdir, opts) if cli else h.preloaded(b, argv, env, rdir)
    # the addresses the program prints differ from run to run (address space layout); nothing else may
    h.same_as_plain(Unaddressed(base), Unaddressed(res), scenario, exact_stderr=not cli)
    rep = h.load_report(rdir)
    return res, rep, printed(res)


def table(rep):
    a = rep.get("allocations")
    check(isinstance(a, dict) and isinstance(a.get("ranges"), list) and isinstance(a.get("sites"), list),
          "the report has no allocation table: %r" % (a,))
    return a


def ranges_at(a, base):
    return [r for r in a["ranges"] if int(r["base"], 16) == base]


def one_range(a, base, what, live=None):
    got = [r for r in ranges_at(a, base) if live is None or ("freed_seq" not in r) == live]
    check(len(got) == 1, "%s: %d ranges at 0x%x (live=%s) among\n%s" % (what, len(got), base, live,
                                                                     json.dumps(ranges_at(a, base), indent=1)))
    return got[0]


def check_site(a, r, tag, what):
    site = a["sites"][r["site"]] if isinstance(r.get("site"), int) and r["site"] < len(a["sites"]) else None
    check(site is not None, "%s: no site (%r)" % (what, r))
    h.expect_frame(site.get("stack"), SRC, alloc_marker(tag), what + " site")


class Range:
    def __init__(self, name, base, size, seq, freed=None, kind="device"):
        self.name, self.base, self.size, self.seq, self.freed, self.kind = name, base, size, seq, freed, kind

    def holds(self, x):
        return self.base <= x < self.base + self.size


def oracle(known, x, fault_seq):
    """What the address touched, by the rule docs/report.md gives: (answer, range or None, below, above)."""
    live = [r for r in known if r.kind != "reserved" and r.seq < fault_seq and (r.freed is None or r.freed >= fault_seq)]
    hold = [r for r in live if r.holds(x)]
    if hold:
        return "inside", max(hold, key=lambda r: r.seq), None, None
    below = max((r for r in live if r.base + r.size <= x and x - (r.base + r.size) <= NEAR),
                key=lambda r: r.base + r.size, default=None)
    above = min((r for r in live if r.base > x and r.base - x <= NEAR), key=lambda r: r.base, default=None)
    freed = [r for r in known if r.kind != "reserved" and r.freed is not None and r.freed < fault_seq and r.holds(x)]
    if freed:
        f = max(freed, key=lambda r: r.freed)
        return ("outside" if below and below.base == f.base else "freed"), f, below, above
    res = [r for r in known if r.kind == "reserved" and r.seq < fault_seq and r.freed is None and r.holds(x)]
    if res:
        return "unmapped", res[0], below, above
    return ("outside" if below or above else "nothing_near"), None, below, above


def ask(b, path, x, access=None):
    """`culprit report --address X [--access-size N] REPORT`: (fault_address, the verdict's text with its wrapped
    lines joined)."""
    extra = ["--access-size", str(access)] if access else []
    env = h._base_env(b, {})
    j = h._execute(b, [b.cli, "report", "--json", "--address", "0x%x" % x] + extra + [path], env, b.newdir("ask"))
    check(j.rc == 0, "culprit report --json --address failed\n" + j.describe())
    fa = json.loads(j.out_text).get("fault_address")
    check(isinstance(fa, dict), "no fault_address in culprit report --json\n" + j.out_text[:2000])
    t = h._execute(b, [b.cli, "report", "--address=0x%x" % x] + extra + [path], env, b.newdir("ask"))
    check(t.rc == 0, "culprit report --address failed\n" + t.describe())
    return fa, joined(t.out_text + t.err_text)


def expect_answer(fa, text, known, x, fault_seq, what):
    """The answer agrees with the oracle, as JSON and as text."""
    want, r, below, above = oracle(known, x, 10 ** 18 if fault_seq is None else fault_seq)
    check(fa.get("answer") == want, "%s: answer %r, expected %r\n%s" % (what, fa.get("answer"), want,
                                                                     json.dumps(fa, indent=1)))
    check(fa.get("address") == "0x%x" % x and fa.get("fault_seq") == fault_seq, "%s: %r" % (what, fa))
    if want == "inside":
        check(int(fa["in"]["base"], 16) == r.base and fa["in"]["offset"] == x - r.base and
              fa["in"]["seq"] == r.seq, "%s: in %r, expected %s" % (what, fa.get("in"), r.name))
        check("at offset %d inside the " % (x - r.base) in text, "%s: the text\n%s" % (what, text))
    if want in ("freed", "outside") and r is not None:
        check(int(fa["freed"]["base"], 16) == r.base and fa["freed"]["freed_seq"] == r.freed,
              "%s: freed %r, expected %s" % (what, fa.get("freed"), r.name))
    if want == "freed" and fault_seq is not None:
        check("in memory freed before the faulting launch #%d was made, a use after free: offset %d" % (
            fault_seq, x - r.base) in text, "%s: the text\n%s" % (what, text))
    elif want == "freed":
        check("in memory freed by the time the report was written" in text, "%s: the text\n%s" % (what, text))
    for key, n, dist in (("below", below, lambda n: x - (n.base + n.size)), ("above", above, lambda n: n.base - x)):
        if want == "inside":
            continue
        if n is None:
            check(key not in fa, "%s: %s %r, expected none" % (what, key, fa.get(key)))
            continue
        got = fa.get(key) or {}
        check(got.get("base") == "0x%x" % n.base, "%s: %s %r, expected %s at 0x%x" % (what, key, got, n.name, n.base))
        field = "past_end" if key == "below" else "before_start"
        check(got.get(field) == dist(n), "%s: %s.%s %r, expected %d" % (what, key, field, got.get(field), dist(n)))
        if want not in ("outside", "unmapped"):
            continue                     # the text names the neighbours only where the address is in none
        if key == "below" and dist(n) > 0:
            phrase = "%d byte%s after the end of the " % (dist(n), "" if dist(n) == 1 else "s")
        elif key == "below":
            phrase = "right after the end of the "
        else:
            phrase = "%d byte%s before the start of the " % (dist(n), "" if dist(n) == 1 else "s")
        check(phrase in text, "%s: %r is not in the text\n%s" % (what, phrase, text))
    if want == "nothing_near":
        check("in no allocation culprit recorded, and none of the" in text, "%s: the text\n%s" % (what, text))


@case("alloc_kinds")
def _(b):
    res, rep, p = run(b, "kinds")
    a = table(rep)
    h.expect_exact(rep, seq=3)
    pitch = int(re.search(r"^pitch=(\d+)$", res.out_text, re.M).group(1))
    host_dev = [r for r in a["ranges"] if r.get("kind") == "host"]
    check(len(host_dev) == 1 and int(host_dev[0]["host"], 16) == p["host"] and host_dev[0]["size"] == 64,
          "the pinned host allocation, by its device view with its host pointer: %r" % host_dev)
    want = {"dev": ("device", "cuMemAlloc_v2", 4096, None), "pitched": ("pitched", "cuMemAllocPitch_v2", pitch * 3, None),
            "managed": ("managed", "cuMemAllocManaged", 256, "cuMemFree_v2"),
            "async": ("async", "cuMemAllocAsync", 512, "cuMemFreeAsync"),
            "pool": ("pool", "cuMemAllocFromPoolAsync", 1024, None)}
    for name, (kind, api, size, freed_api) in want.items():
        r = one_range(a, p[name], name)
        check(r.get("kind") == kind and r.get("api") == api and r.get("size") == size and r.get("seq") == 0 and
              r.get("thread") == rep["process"]["pid"], "%s: %r" % (name, r))
        if freed_api:
            check(r.get("freed_seq") == 2 and r.get("freed_api") == freed_api, "%s freed after launch #2: %r" % (
                name, r))
        else:
            check("freed_seq" not in r, "%s is live: %r" % (name, r))
    hr = host_dev[0]
    check(hr.get("freed_seq") == 2 and hr.get("freed_api") == "cuMemFreeHost", "host freed: %r" % hr)
    check(len(a["ranges"]) == 6 and a["recorded"] == 6 and a["not_recorded"] == 0 and not a.get("overflowed"),
          "six allocations, the refused calls not among them: %s" % json.dumps(a["ranges"], indent=1))
    check_site(a, one_range(a, p["dev"], "dev"), "dev", "cuMemAlloc")
    check_site(a, one_range(a, p["pitched"], "pitched"), "pitched", "cuMemAllocPitch")

    known = [Range("dev", p["dev"], 4096, 0), Range("pitched", p["pitched"], pitch * 3, 0),
             Range("managed", p["managed"], 256, 0, 2), Range("async", p["async"], 512, 0, 2),
             Range("pool", p["pool"], 1024, 0), Range("host", int(hr["base"], 16), 64, 0, 2, "host")]
    path = rep["_path"]
    for what, x, acc in (("inside", p["dev"] + 100, 4), ("after the end", p["dev"] + 4096 + 16, 4),
                         ("before the start", p["dev"] - 8, None), ("use after free", p["managed"] + 8, 4),
                         ("freed host memory", int(hr["base"], 16) + 10, None),
                         ("the last byte of the pool's", p["pool"] + 1023, 1),
                         ("nothing near", p["dev"] + (3 << 30), None)):
        fa, text = ask(b, path, x, acc)
        expect_answer(fa, text, known, x, 3, what)
        if acc:
            check(fa.get("access_size") == acc and "an access of %d byte" % acc in text, "%s: %r" % (what, fa))
    fa, text = ask(b, path, p["dev"] + 4094, 4)
    check(fa.get("answer") == "overrun" and "the access runs 2 bytes past its end" in text,
          "a 4-byte access at 4094 of 4096: %r\n%s" % (fa, text))
    with open(path) as f:
        check("fault_address" not in json.load(f), "--address is a question: the report file stays as it was")


@case("alloc_reuse")
def _(b):
    res, rep, p = run(b, "reuse")
    a = table(rep)
    h.expect_exact(rep, seq=3)
    x, y = p["x"], p["y"]
    if x == y:
        old = one_range(a, x, "x", live=False)
        new = one_range(a, x, "y", live=True)
        check(old["seq"] == 0 and old["freed_seq"] == 1 and new["seq"] == 2 and old["size"] == new["size"] == 4096,
              "the freed range and its reuse, each with its own launch numbers: %r %r" % (old, new))
    else:
        check(one_range(a, x, "x", live=False)["freed_seq"] == 1 and one_range(a, y, "y", live=True)["seq"] == 2,
              "x freed, y live")
    g = int(re.search(r"^granularity=(\d+)$", res.out_text, re.M).group(1))
    r0 = p["reserved"]
    known = [Range("x", x, 4096, 0, 1), Range("y", y, 4096, 2), Range("reservation", r0, 2 * g, 0, kind="reserved"),
             Range("map1", r0, g, 0, 1, "vm"), Range("map2", r0, g, 1, kind="vm")]
    for r in a["ranges"]:
        if int(r["base"], 16) not in (x, y, r0):
            known.append(Range("arg", int(r["base"], 16), r["size"], r["seq"], r.get("freed_seq")))
    # the virtual memory API hands the same address out again for sure: a piece mapped, unmapped after launch #1,
    # another mapped there before launch #2
    m1 = one_range(a, r0, "the first mapping", live=False)
    live = [q for q in ranges_at(a, r0) if "freed_seq" not in q]
    check(m1["kind"] == "vm" and m1["seq"] == 0 and m1["freed_seq"] == 1 and m1["freed_api"] == "cuMemUnmap" and
          sorted(q["kind"] for q in live) == ["reserved", "vm"] and
          [q["seq"] for q in live if q["kind"] == "vm"] == [1],
          "the unmapped piece, its successor at the same address and the reservation, apart: %s" % json.dumps(
              ranges_at(a, r0), indent=1))
    for what, at in (("x+100", x + 100), ("y+4000", y + 4000), ("y+4096+8", y + 4096 + 8),
                     ("the remapped piece", r0 + 100), ("past the remapped piece", r0 + g + 100)):
        fa, text = ask(b, rep["_path"], at)
        expect_answer(fa, text, known, at, 3, what)
    fa, _ = ask(b, rep["_path"], r0 + 100)
    check(fa["in"]["seq"] == 1 and "freed" not in fa, "the live mapping answers, not the unmapped one: %r" % fa)


@case("alloc_fork")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=1"}
    argv = [b.prog("allocs"), "fork"]
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, env, rdir)
    check(res.rc == 0 and "child status 1" in res.out_text, "the child did not fault as scripted\n" + res.describe())
    p = printed(res)
    rep = h.load_report(rdir)
    check(rep["process"]["pid"] != res.pid and rep["process"]["ppid"] == res.pid, "the report is the child's")
    a = table(rep)
    check([int(r["base"], 16) for r in a["ranges"]] == [p["child"]] and a["recorded"] == 1,
          "the child's table holds its own allocation only, not the parent's 0x%x: %s" % (
              p["parent"], json.dumps(a, indent=1)))


@case("alloc_threads")
def _(b):
    res, rep, _ = run(b, "threads", cli=False)
    a = table(rep)
    mine = [r for r in a["ranges"] if r["thread"] != rep["process"]["pid"]]
    check(len(mine) == 8 * 64 and len({r["thread"] for r in mine}) == 8, "8 threads x 64: %d ranges, %d threads" % (
        len(mine), len({r["thread"] for r in mine})))
    for t in {r["thread"] for r in mine}:
        rs = sorted((r for r in mine if r["thread"] == t), key=lambda r: r["size"])
        check([r["size"] for r in rs] == list(range(128, 192)), "thread %d's sizes: %r" % (t, [r["size"] for r in rs]))
        check(all(("freed_seq" in r) == (r["size"] % 2 == 0) for r in rs), "thread %d: the even ones freed" % t)
    check(len({r["base"] for r in mine if "freed_seq" not in r}) == 8 * 32, "live ranges have distinct addresses")


@case("alloc_expandable")
def _(b):
    res, rep, p = run(b, "expandable")
    a = table(rep)
    h.expect_exact(rep, seq=2)
    g = int(re.search(r"^granularity=(\d+)$", res.out_text, re.M).group(1))
    r0 = p["reserved"]
    res_r = one_range(a, r0, "reservation", live=True)
    check(res_r["kind"] == "reserved" and res_r["size"] == 32 * g and res_r["api"] == "cuMemAddressReserve",
          "%r" % res_r)
    pieces = sorted((r for r in a["ranges"] if r["kind"] == "vm"), key=lambda r: (int(r["base"], 16), r["seq"]))
    check([int(r["base"], 16) - r0 for r in pieces] == [0, g, 2 * g] and all(r["size"] == g for r in pieces),
          "three pieces of %d bytes: %s" % (g, json.dumps(pieces, indent=1)))
    check(pieces[0].get("freed_seq") == 1 and all("freed_seq" not in r for r in pieces[1:]), "the first unmapped")
    check(a.get("vm_handles") == {"created": 3, "released": 1, "bytes": 3 * g}, "handles %r" % a.get("vm_handles"))
    check_site(a, pieces[1], "map", "cuMemMap")
    known = [Range("reservation", r0, 32 * g, 0, kind="reserved"), Range("piece0", r0, g, 0, 1, "vm"),
             Range("piece1", r0 + g, g, 0, kind="vm"), Range("piece2", r0 + 2 * g, g, 0, kind="vm")]
    fa, text = ask(b, rep["_path"], r0 + 3 * g + 64, 8)
    expect_answer(fa, text, known, r0 + 3 * g + 64, 2, "past the mapped part")
    run_ = (fa.get("below") or {}).get("mapped_run") or {}
    check(run_ == {"base": "0x%x" % (r0 + g), "size": 2 * g, "pieces": 2} and
          json.dumps(fa.get("reserved", {}).get("offset")) == str(3 * g + 64),
          "the mapped run below and the offset in the reservation: %r" % fa)
    check("in addresses reserved but not mapped" in text and "one of 2 adjacent mappings" in text, text)
    for what, at in (("the unmapped first piece", r0 + 100), ("the middle piece", r0 + g + 5)):
        fa, text = ask(b, rep["_path"], at)
        expect_answer(fa, text, known, at, 2, what)


@case("alloc_overflow")
def _(b):
    res, rep, p = run(b, "overflow", cli=False)
    a = table(rep)
    check(a["capacity"] == 4096 and len(a["ranges"]) == 4096, "a full table: %d ranges" % len(a["ranges"]))
    check(a["recorded"] == 4096 + 5 and a["not_recorded"] == 4200 - 4096 and a["forgotten"] == 5 and
          a.get("overflowed") is True,
          "4200 live allocations, ten freed, five more: %r" % {k: a.get(k) for k in
                                                               ("recorded", "not_recorded", "forgotten")})
    freed = [r for r in a["ranges"] if "freed_seq" in r]
    check(len(freed) == 5, "the five frees made last are kept, the first five went: %d freed kept" % len(freed))
    check(len(a["sites"]) <= 2, "one allocation site is written once, not 4096 times: %d" % len(a["sites"]))
    fa, text = ask(b, rep["_path"], p["first"] + 8)
    check(fa.get("table_overflowed") is True and "the allocation table overflowed (5 freed ranges forgotten, "
          "104 allocations not recorded)" in text, "the answer says the table overflowed\n%s" % text)


@case("alloc_lookup")
def _(b):
    """Allocations made through entry points fetched with cuGetProcAddress (the CUDA runtime's and PyTorch's way)."""
    res, rep, p = run(b, "lookup", cli=False)
    a = table(rep)
    d = one_range(a, p["dev"], "cuMemAlloc")
    v = [r for r in ranges_at(a, p["reserved"])]
    check(d["size"] == 300 and d["api"] == "cuMemAlloc_v2" and
          sorted((r["kind"], r["size"], r["api"]) for r in v) == [("reserved", 4 << 20, "cuMemAddressReserve"),
                                                                  ("vm", 2 << 20, "cuMemMap")] and
          a.get("vm_handles", {}).get("created") == 1, "the ranges: %s" % json.dumps(a, indent=1))


@case("alloc_coredump")
def _(b):
    """The driver aborts after its GPU core dump, so the report is the library's hang report made a fault: it has
    the table too. The address the dump reader puts in coredump.address is answered in the verdict."""
    env = {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CUDA_GDB": os.path.join(HERE, "fake_cuda_gdb.py")}
    rdir = b.newdir("reports")
    res = h.cli_run(b, [b.prog("allocs"), "kinds"], env, rdir, ("--coredump",))
    p = printed(res)
    files = [f for f in os.listdir(rdir) if re.match(r"culprit-\d+(-hang)?\.json$", f)]
    check(len(files) == 1, "one report expected in %s: %s\n%s" % (rdir, os.listdir(rdir), res.describe()))
    with open(os.path.join(rdir, files[0])) as f:
        rep = json.load(f)
    check(rep.get("kind") == "fault" and rep.get("coredump"), "a fault report from the dump: %r" % rep.get("kind"))
    a = table(rep)
    check(len(a["ranges"]) == 6 and one_range(a, p["dev"], "dev")["size"] == 4096, "the table: %r" % a["ranges"])
    check("fault_address" not in rep, "no address from this dump, no answer")
    x = p["dev"] + 4096 + 16
    rep["coredump"]["address"] = "0x%x" % x
    rep["coredump"]["access_size"] = 4
    path = os.path.join(rdir, "with-address", "culprit-%d.json" % rep["process"]["pid"])
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        json.dump(rep, f)
    env = h._base_env(b, {})
    t = h._execute(b, [b.cli, "report", path], env, b.newdir("show"))
    text = joined(t.out_text + t.err_text)
    check(t.rc == 0 and "the faulting address 0x%x (an access of 4 bytes, from the GPU core dump):" % x in text,
          "the verdict names the dump's address\n" + text)
    with open(path) as f:
        fa = json.load(f).get("fault_address") or {}
    check(fa.get("source") == "coredump" and fa.get("access_size") == 4,
          "culprit report wrote the answer for the dump's address into the report: %r" % fa)
    known = [Range(r["kind"], int(r["base"], 16), r["size"], r["seq"], r.get("freed_seq"), r["kind"])
             for r in a["ranges"]]
    expect_answer(fa, text, known, x, (rep.get("culprit") or {}).get("seq"), "the dump's address")


@case("alloc_kernel_log")
def _(b):
    """The kernel's log of the GPU's memory fault (the simulated driver writes its Xid 31 line, FAKECUDA_KMSG)
    gives the page of the faulting address: culprit run ties the line to the report by its pid and answers the page
    by the oracle's rule, in JSON and in the verdict's words for a page. An unreadable log, or none asked for, gives
    no address, and the verdict says why."""
    for off, access in ((1 << 20, "write"), (-(1 << 24), "read")):
        log = os.path.join(b.newdir("log"), "kern.log")
        open(log, "w").close()
        env = {"FAKECUDA_FAULT": "kernel=write_oob,offset=%d,access=%s" % (off, access), "FAKECUDA_KMSG": log,
               "CULPRIT_KERNEL_LOG": log}
        res, rep, p = run(b, "kinds", env)
        g = rep.get("gpu_fault_log") or {}
        page = (p["dev"] + off) & ~0xfff
        check(g.get("address") == "0x%x" % page and g.get("pid") == rep["process"]["pid"] and
              g.get("matched") == "pid" and g.get("access") == access and g.get("granule") == 4096,
              "gpu_fault_log: %r (page 0x%x)" % (g, page))
        fa = rep.get("fault_address") or {}
        known = [Range(r["kind"], int(r["base"], 16), r["size"], r["seq"], r.get("freed_seq"), r["kind"])
                 for r in table(rep)["ranges"]]
        fault_seq = (rep.get("culprit") or {}).get("seq")
        want, r, below, above = oracle(known, page, 10 ** 18 if fault_seq is None else fault_seq)
        check(fa.get("source") == "kernel log" and fa.get("address") == "0x%x" % page and fa.get("answer") == want
              and fa.get("access") == access and fa.get("granule") == 4096, "fault_address %r, expected %s" % (
                  fa, want))
        text = joined(res.err_text)
        check("the faulting address lies in the 4096-byte page at 0x%x (a %s;" % (page, access) in res.err_text,
              "the headline\n" + text)
        if below is not None:
            n = page - (below.base + below.size)
            phrase = "the page begins %s after the end of the " % (
                "right" if n == 0 else "%d byte%s" % (n, "" if n == 1 else "s"))
            check((fa.get("below") or {}).get("past_end") == n and phrase in text,
                  "%r with past_end %d\n%s" % (phrase, n, text))
        if above is not None:
            n = above.base - page - 4096
            check((fa.get("above") or {}).get("before_start") == above.base - page and
                  ("the page ends %d bytes before the start of the " % n in text or n <= 0), text)
    for setting, words in ((os.path.join(b.newdir("nolog"), "none"), "cannot be opened"), ("off", None)):
        res, rep, p = run(b, "kinds", {"FAKECUDA_FAULT": "kernel=write_oob,offset=64", "CULPRIT_KERNEL_LOG": setting})
        g = rep.get("gpu_fault_log")
        check("fault_address" not in rep, "%s: no address: %r" % (setting, rep.get("fault_address")))
        if words is None:
            check(g is None and "the faulting address is not known" not in res.err_text, "off: %r" % g)
        else:
            check(words in str((g or {}).get("unknown")) and
                  "the faulting address is not known: the kernel's log %s cannot be opened" % setting in
                  re.sub(r" *\nculprit: +", " ", res.err_text), "%s: %r\n%s" % (setting, g, res.err_text))


@case("alloc_coredump_address")
def _(b):
    """The whole way from the dump to the answer: a misaligned store (the stand-in debugger disassembles it as a
    4-byte global store at R2:R3 + 0x2 and shows the focus lane's registers, R2:R3 the kernel's buffer, dev, plus
    4096); culprit run reads the address off them, 4098 bytes into dev's 4096, says it needs 4-byte alignment and
    what it touched. An illegal address is the warp's exception: the focus lane's registers say nothing of the
    lane that faulted, and no address is made up; nor when the focus lane had moved on. With every lane's
    registers shown, the lane outside every allocation is the faulting one (misaligned: the lane not aligned)."""
    gdb = os.path.join(HERE, "fake_cuda_gdb.py")
    env = {"FAKECUDA_FAULT": "kernel=write_oob,code=716", "CULPRIT_CUDA_GDB": gdb,
           "FAKE_CUDA_GDB_INSN": "STG.E desc[UR8][R2.64+0x2],R5", "FAKE_CUDA_GDB_OFFSET": "4096"}

    def run(env, tag):
        rdir = b.newdir(tag)
        res = h.cli_run(b, [b.prog("allocs"), "kinds"], env, rdir, ("--coredump",))
        files = [f for f in os.listdir(rdir) if re.match(r"culprit-\d+(-hang)?\.json$", f)]
        check(len(files) == 1, "one report expected in %s: %s\n%s" % (rdir, os.listdir(rdir), res.describe()))
        with open(os.path.join(rdir, files[0])) as f:
            return res, json.load(f)

    res, rep = run(env, "reports")
    p = printed(res)
    cd = rep.get("coredump") or {}
    x = p["dev"] + 4096 + 2
    check(cd.get("address") == "0x%x" % x and cd.get("access") == "store" and cd.get("access_size") == 4 and
          cd.get("space") == "global" and cd.get("alignment") == 4,
          "the dump's access: %r" % {k: cd.get(k) for k in ("address", "access", "access_size", "space", "alignment")})
    fa = rep.get("fault_address") or {}
    check(fa.get("source") == "coredump", "culprit run answered the dump's address: %r" % fa)
    text = joined(res.err_text)
    check("the faulting access: a 4-byte global store (STG.E desc[UR8][R2.64+0x2],R5) at 0x%x" % x in text and
          "is not a multiple of 4: the access needs 4-byte alignment" in text,
          "the verdict names the faulting access\n" + text)
    known = [Range(r["kind"], int(r["base"], 16), r["size"], r["seq"], r.get("freed_seq"), r["kind"])
             for r in table(rep)["ranges"]]
    expect_answer(fa, text, known, x, (rep.get("culprit") or {}).get("seq"), "the dump's address")

    # Every lane of the warp: lane 5 stored 2^36 bytes past dev, lanes 0-4 and 6-7 inside it (the focus lane 3
    # too); lanes 8-31 are not active. The table names lane 5, and what the others touched.
    lanes = {"FAKECUDA_FAULT": "kernel=write_oob", "FAKE_CUDA_GDB_LANES": "1",
             "FAKE_CUDA_GDB_INSN": "STG.E desc[UR8][R2.64],R5", "FAKE_CUDA_GDB_OFFSET": str(1 << 36)}
    res, rep = run(dict(env, **lanes), "reports-lanes")
    p = printed(res)
    cd, fa = rep.get("coredump") or {}, rep.get("fault_address") or {}
    x = p["dev"] + (1 << 36)
    check(len(cd.get("lanes") or []) == 8 and "address" not in cd, "coredump.lanes: %r" % cd.get("lanes"))
    check(fa.get("address") == "0x%x" % x and fa.get("lane") == 5 and fa.get("thread") == [5, 0, 0] and
          fa.get("block") == [1, 0, 0] and fa.get("lanes_read") == 8 and fa.get("lanes_bad") == 1 and
          fa.get("touched") == [{"base": "0x%x" % p["dev"], "size": 4096, "lanes": 7}],
          "the faulting lane: %r" % fa)
    text = joined(res.err_text)
    check("the faulting access: a 4-byte global store (STG.E desc[UR8][R2.64],R5) at 0x%x" % x in text and
          "lane 5 (thread (5,0,0), block (1,0,0)) made it: 1 of the 8 lanes whose address the dump gives was out "
          "of bounds; the other 7 accessed the allocation of 4096 bytes at 0x%x" % p["dev"] in text,
          "the verdict names the lane\n" + text)
    misaligned = dict(env, FAKE_CUDA_GDB_LANES="1")
    res, rep = run(misaligned, "reports-lanes-misaligned")
    cd, fa = rep.get("coredump") or {}, rep.get("fault_address") or {}
    x = printed(res)["dev"] + 4096 + 2
    check(cd.get("address") == "0x%x" % x and cd.get("address_lane") == 5 and fa.get("lane") == 5 and
          fa.get("lanes_bad") == 1 and fa.get("address") == "0x%x" % x, "misaligned, lane 5: %r %r" % (cd, fa))

    for tag, extra, why in (("illegal", {"FAKECUDA_FAULT": "kernel=write_oob"}, "which of its lanes"),
                            ("moved", {"FAKE_CUDA_GDB_MOVED": "1"}, "was elsewhere in the kernel")):
        res, rep = run(dict(env, **extra), "reports-" + tag)
        cd = rep.get("coredump") or {}
        check(cd.get("access") == "store" and "address" not in cd and "fault_address" not in rep and
              why in (cd.get("address_unknown") or ""), "%s: an address made up: %r" % (tag, cd))
        check(why in joined(res.err_text), "%s: the verdict says why\n%s" % (tag, res.err_text))


if __name__ == "__main__":
    sys.exit(h.main())
