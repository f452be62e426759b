"""Agreement with compute-sanitizer, for check.py's --coredump rows: the lane a `culprit run --coredump` report names
as having made an illegal or misaligned access, judged against what compute-sanitizer's memcheck says of the same
program in the same suite run.

Standard library only; check.py binds its own names (bind) before any of these runs.
"""

import re

from jobs_group import _Check

# Agreement with compute-sanitizer: for an illegal or misaligned address, the lane the --coredump report names
# (fault_address: lane, thread, block) must be one of the threads compute-sanitizer's memcheck reports for the same
# program, with the same access (load = read, store = write), size and kind (out of bounds or misaligned).
# Addresses differ between the two processes, so they are not compared.
SANITIZER_ACCESS = re.compile(r"Invalid __global__ (read|write|atomic)\S* of size (\d+) bytes?")
SANITIZER_THREAD = re.compile(r"by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
SANITIZER_WHAT = re.compile(r"(?:Access to|Address) (0x[0-9a-fA-F]+) is (.+?)\s*$")
SANITIZER_NEAREST = re.compile(r"and is ([\d,]+) bytes? (after|before) the nearest allocation at 0x[0-9a-fA-F]+ of size "
                               r"([\d,]+) bytes?")
ADJACENT = 2 << 20  # src/evidence/faultpage.h: FAULTPAGE_ADJACENT
SANITIZER_LIMIT = "10000"  # --print-limit: every bad thread of the suite's kernels (its default is 100)


def sanitizer_accesses(text):
    """compute-sanitizer memcheck's invalid global accesses in text, in order: dicts of access ("read",
    "write", "atomic"), size (bytes), thread and block ((x, y, z) tuples, None when not said) and kind ("out of
    bounds" or "misaligned", None when not said)."""
    out, cur = [], None
    for line in text.splitlines():
        m = SANITIZER_ACCESS.search(line)
        if m:
            cur = {"access": m.group(1), "size": int(m.group(2)), "thread": None, "block": None, "kind": None,
                   "nearest": None}
            out.append(cur)
            continue
        if cur is None:
            continue
        m = SANITIZER_THREAD.search(line)
        if m:
            cur["thread"] = tuple(int(x) for x in m.group(1, 2, 3))
            cur["block"] = tuple(int(x) for x in m.group(4, 5, 6))
            continue
        m = SANITIZER_WHAT.search(line)
        if m:
            cur["kind"] = "misaligned" if "misaligned" in m.group(2) else "out of bounds"
            continue
        m = SANITIZER_NEAREST.search(line)
        if m:
            cur["nearest"] = (int(m.group(1).replace(",", "")), m.group(2), int(m.group(3).replace(",", "")))
    return out


def dims(v):
    return "(%s)" % ",".join(str(x) for x in v) if v else "?"


def page_agreement(fa, accesses, theirs):
    """Whether the page the kernel's log gave (fault_address with source "kernel log") agrees with
    compute-sanitizer's accesses: one of them of the same kind (read, write; an atomic is either) and, where the
    sanitizer measures an access from its nearest allocation and culprit has a neighbour of that size on that side,
    at a distance the page holds. Addresses differ between the processes; distances from an allocation do not."""
    page, granule, kind = int(fa["address"], 16), fa.get("granule") or 4096, fa.get("access")
    ours = "the %d-byte page at %s, a %s (%s)" % (granule, fa["address"], kind, fa.get("answer"))
    same = [a for a in accesses if kind is None or "atomic" in (kind, a["access"]) or a["access"] == kind]
    if not same:
        return False, "address disagrees with compute-sanitizer: culprit's %s; compute-sanitizer: %s" % (ours, theirs)
    # the sanitizer's accesses measured from an allocation culprit has as the page's neighbour on that side
    comparable = []
    for a in same:
        if a["nearest"]:
            n, side, size = a["nearest"]
            nb = fa.get("below" if side == "after" else "above") or {}
            if nb.get("size") == size:
                comparable.append((n, side, size, nb))
    for n, side, size, nb in comparable:
        if side == "after" and nb.get("past_end", -1) <= n < nb.get("past_end", -1) + granule:
            return True, "address agrees with compute-sanitizer: culprit's %s holds its access %d bytes after the " \
                "end of the %d-byte allocation" % (ours, n, size)
        if side == "before" and nb.get("before_start", -1) - granule < n <= nb.get("before_start", -1):
            return True, "address agrees with compute-sanitizer: culprit's %s holds its access %d bytes before the " \
                "start of the %d-byte allocation" % (ours, n, size)
    # A near miss (within the GPU's 2 MiB mapping granule of the allocation) is the same in both processes; far
    # ones depend on where each process's allocations landed, and on what the sanitizer puts between them.
    near = [c for c in comparable if c[0] < ADJACENT] if fa.get("answer") != "freed" else []
    if near:
        return False, "address disagrees with compute-sanitizer: culprit's %s holds none of its %d accesses (%s)" % (
            ours, len(near), theirs)
    return True, "address agrees with compute-sanitizer as far as it can be compared: culprit's %s, %s; " \
        "its distances are from allocations culprit has no neighbour like (%s)" % (ours, kind, theirs)


def address_agreement(report, text):
    """Whether the --coredump report's faulting lane agrees with compute-sanitizer's output text: (True, False,
    or None when there is nothing to compare, and the sentence for the table)."""
    accesses = [a for a in sanitizer_accesses(text) if a["thread"]]
    if not accesses:
        return None, "address not compared: compute-sanitizer reported no invalid global access"
    first = accesses[0]
    theirs = "%d threads, first %s block %s, a %d-byte %s %s" % (len(accesses), dims(first["thread"]),
                                                                   dims(first["block"]), first["size"],
                                                                   first["access"], first["kind"])
    cd = (report or {}).get("coredump") or {}
    fa = (report or {}).get("fault_address") or {}
    if fa.get("source") == "kernel log" and fa.get("address"):
        return page_agreement(fa, accesses, theirs)
    if fa.get("source") != "coredump" or fa.get("lane") is None:
        return None, "address not compared: culprit named no faulting lane (%s); compute-sanitizer: %s" % (
            h.shorten(cd.get("address_unknown") or "no address from the dump", 120), theirs)
    thread, block = tuple(fa.get("thread") or ()), tuple(fa.get("block") or ())
    kind = "misaligned" if "Misaligned" in str(cd.get("exception")) else "out of bounds"
    access = {"load": "read", "store": "write"}.get(cd.get("access"), cd.get("access"))
    size = cd.get("access_size")
    ours = "lane %s, thread %s block %s, a %s-byte %s %s" % (fa.get("lane"), dims(thread), dims(block), size,
                                                             access, kind)
    same = [a for a in accesses if a["thread"] == thread and a["block"] == block]
    if not same:
        return False, "address disagrees with compute-sanitizer: culprit's %s is not among its %s" % (ours, theirs)
    a = same[0]
    problems = []
    if access != "atomic" and a["access"] != "atomic" and a["access"] != access:
        problems.append("a %s, compute-sanitizer says a %s" % (access, a["access"]))
    if a["size"] != size:
        problems.append("%s bytes, compute-sanitizer says %d" % (size, a["size"]))
    if a["kind"] is not None and a["kind"] != kind:
        problems.append("%s, compute-sanitizer says %s" % (kind, a["kind"]))
    if problems:
        return False, "address disagrees with compute-sanitizer (%s): %s" % (ours, "; ".join(problems))
    return True, "address agrees with compute-sanitizer: %s (%d of its threads)" % (ours, len(accesses))


def judge_fault_page(out, report):
    """An illegal address (700) under `culprit run`: the report holds the kernel's log line of the GPU's memory
    fault (gpu_fault_log, its page answered as fault_address) or says why not. Where the log was readable and
    holds no line of the process, that fails: on the H200 every illegal address of the suite logged one. Reports
    of a culprit older than the kernel's log (the fixtures: no process.comm) are not held to it."""
    if ((report or {}).get("error") or {}).get("code") != 700 or "comm" not in (report.get("process") or {}):
        return
    log = report.get("gpu_fault_log")
    fa = report.get("fault_address") or {}
    if not isinstance(log, dict):
        out.fail("an illegal address, and the report has no gpu_fault_log (the kernel's log of the fault)")
    elif log.get("unknown"):
        if any(w in log["unknown"] for w in ("not readable", "cannot be", "without a usable address")):
            out.notes.append("kernel log: " + h.shorten(log["unknown"], 140))
        else:
            out.fail("the kernel's log was read and gave no line: " + h.shorten(log["unknown"], 160))
    elif not fa.get("address"):
        out.fail("gpu_fault_log gives the page %s, and the report has no fault_address" % log.get("address"))
    else:
        out.notes.append("fault page %s (%s, %s): %s, answered as %s" % (
            log.get("address"), log.get("access"), log.get("fault_type"),
            "matched by " + str(log.get("matched")), fa.get("answer")))


def judge_address(out, report, text):
    """Puts address_agreement's answer into out: a note, or a failure where culprit named a lane the sanitizer
    does not."""
    agrees, sentence = address_agreement(report, text)
    if agrees is False:
        out.fail("--coredump: " + sentence)
    else:
        out.notes.append(sentence)
    return out


def run_sanitizer_case(args, case, exe, env, logs, stem, out, run):
    """compute-sanitizer on the program of a --coredump row whose fault is an illegal or misaligned address, its
    faulting lane judged against it (judge_address)."""
    if not case.sanitize or out.status == "skip" or not run.reports or not isinstance(run.reports[0][1], dict):
        return out
    san = h.find_sanitizer()
    if not san:
        out.notes.append("address not compared: compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda)")
        return out
    srun = h.execute([san, "--tool", "memcheck", "--print-limit", SANITIZER_LIMIT, exe] + case.args, env,
                   args.timeout + 60)
    h.save_logs(logs, stem + ".sanitizer", srun)
    if srun.timed_out:
        out.notes.append("address not compared: compute-sanitizer timed out")
        return out
    text = srun.stdout.decode("utf-8", "replace") + srun.stderr
    judge_address(out, run.reports[0][1], text)
    # the run without --coredump: the page its kernel's log gave (with the dump on, the log gives no page)
    default = out.coredump_of.report if out.coredump_of else None
    if isinstance(default, dict) and (default.get("fault_address") or {}).get("source") == "kernel log":
        agrees, sentence = address_agreement(default, text)
        if agrees is False:
            out.fail("the run without --coredump: " + sentence)
        else:
            out.notes.append("the run without --coredump: " + sentence)
    return out


h = None  # check.py's names, bound by check.py (bind)


def bind(check_globals):
    global h
    h = _Check(check_globals)
