"""The GPU suite's self-test, its --coredump part: the judges of `culprit run --coredump` rows (C and PyTorch
cases, a debugger that died, reports tied to their dumps) and the faulting lane's agreement with
compute-sanitizer, against the report fixtures in tests/gpu/fixtures and made-up runs. check_selftest.py runs it.
"""
from check import *  # noqa: F401,F403 - the judges, cases and helpers under test
from check_selftest import (  # check_selftest.py's fixtures and messages
    DUMP_STARTS, MSG_700, MSG_ASSERT, MSG_MISALIGNED, MSG_STREAMS, MSG_TRAP, PY_ASSERT, _set, fixture, fixture_at)


def _both(*changes):
    """Changes for fixture_at applied one after the other."""
    def change(report):
        for c in changes:
            c(report)
    return change


def _candidates_again(report):
    """A change for fixture_at: the culprit the dump chose put back among the candidates (the verdict before it)."""
    report["candidates"] = [report.pop("culprit")] + report.pop("candidates_before_coredump")
    report["verdict"]["certainty"] = "candidates"


def coredump_selftests():
    """(title, case, launch line, fault line, base, run, expected status, reason text) for the C cases'
    --coredump runs, on reports recorded on an H200 (tests/gpu/fixtures/cd_*.json)."""
    def under(name, filename, change=None, rc=-6, stderr="", extra=()):
        return Run(rc=rc, stderr=DUMP_STARTS + "culprit: verdict ...\n" + stderr,
                   reports=[fixture_at(name, filename, change)] + list(extra))

    oob = lambda **kw: under("cd_oob.json", "culprit-1605-hang.json", **kw)
    streams = lambda **kw: under("cd_streams4.json", "culprit-1857-hang.json", **kw)
    base = Run(rc=1, stderr=MSG_700)
    streams_base = Run(rc=1, stderr=MSG_STREAMS)
    not_read = ("culprit: GPU core dump /tmp/d/gpucore-vm-1605.nvcudmp not read: cuda-gdb was not found (install the "
                "CUDA toolkit's debugger, or set CULPRIT_CUDA_GDB)\n")
    return [
        ("coredump: oob exact, the dump at the CULPRIT-FAULT line", "oob", 80, 37, base, oob(), "pass",
         "certainty exact"),
        ("coredump: misaligned exact, the dump at its line", "misaligned", 45, 18, Run(rc=1, stderr=MSG_MISALIGNED),
         under("cd_misaligned.json", "culprit-1668-hang.json"), "pass", "certainty exact"),
        ("coredump: trap (SIGTRAP) exact, code 719", "trap", 38, 16, Run(rc=1, stderr=MSG_TRAP),
         under("cd_trap.json", "culprit-1731-hang.json"), "pass", "certainty exact"),
        ("coredump: assert exact, code 710", "assert", 54, 27, Run(rc=1, stderr=MSG_ASSERT),
         under("cd_assert.json", "culprit-1794-hang.json"), "pass", "certainty exact"),
        ("coredump: streams4, cuda-gdb crashed, gather_rows on 5 candidates", "streams4", 67, 36, streams_base,
         streams(), "pass", "candidates: 5 of the 40 run the dump's kernel (#6, #14, #22, #30, #38)"),
        ("coredump: a counted dump without the faulting warp says why", "streams4", 67, 36, streams_base,
         streams(change=_both(_set("coredump.warps_in_dump", 24),
                              _set("coredump.address_unknown", "the dump holds 24 warps, none of them the faulting one"))),
         "pass", "no address from the dump (24 warps in it): the dump holds 24 warps, none of them"),
        ("coredump: a counted dump, no address and no word why", "streams4", 67, 36, streams_base,
         streams(change=_set("coredump.warps_in_dump", 24)), "fail",
         "neither an address nor why the dump gives none (coredump.address_unknown); warps in the dump: 24"),
        ("coredump: cuda-gdb crashed before any source line", "streams4", 67, 36, streams_base,
         streams(change=_set("coredump.source_line", None)), "pass",
         "cuda-gdb crashed on the dump before it named a source line"),
        ("coredump: a trap dump the parser did not know (still a hang report)", "trap", 38, 16,
         Run(rc=1, stderr=MSG_TRAP), under("cd_trap_unparsed.json", "culprit-1731-hang.json"), "fail",
         "kind 'hang', expected 'fault'"),
        ("coredump: the dump at another line", "oob", 80, 36, base, oob(), "fail",
         "the dump's source line is oob.cu:37, expected oob.cu:36 (CULPRIT-FAULT)"),
        ("coredump: no source line, and cuda-gdb did not crash", "oob", 80, 37, base,
         oob(change=_set("coredump.source_line", None)), "fail", "the dump's source line is missing"),
        ("coredump: the dump names another kernel", "oob", 80, 37, base,
         oob(change=_set("coredump.kernel", "sum_loss(float const*, float*, int)")), "fail",
         "coredump.kernel 'sum_loss(float const*, float*, int)' does not match 'scatter_grad'"),
        ("coredump: the dump names no kernel", "oob", 80, 37, base, oob(change=_set("coredump.kernel", None)),
         "fail", "coredump.kernel missing"),
        ("coredump: no coredump object", "oob", 80, 37, base, oob(change=_set("coredump", None), stderr=not_read),
         "fail", "no \"coredump\" object (culprit on the dump: GPU core dump /tmp/d/gpucore-vm-1605.nvcudmp not "
         "read: cuda-gdb was not found"),
        ("coredump: the process was not aborted", "oob", 80, 37, base, oob(rc=1), "fail",
         "exit status 1, expected -6"),
        ("coredump: no report", "oob", 80, 37, base, Run(rc=-6, stderr=DUMP_STARTS + not_read), "fail",
         "0 reports, expected one (culprit on the dump: GPU core dump"),
        ("coredump: a hang report and a fault report", "oob", 80, 37, base,
         oob(extra=[fixture_at("oob_exact.json", "culprit-1605.json")]), "fail", "2 reports, expected one"),
        ("coredump: the report file named for another process", "oob", 80, 37, base,
         under("cd_oob.json", "culprit-1606-hang.json"), "fail",
         "report file culprit-1606-hang.json, expected culprit-1605-hang.json or culprit-1605.json"),
        ("coredump: the culprit is another launch", "oob", 80, 37, base,
         oob(change=_set("culprit.kernel", "sum_loss(float const*, float*, int)")), "fail",
         "culprit: kernel 'sum_loss(float const*, float*, int)' is not scatter_grad"),
        ("coredump: the launching line wrong", "oob", 79, 37, base, oob(), "fail",
         "culprit: launch line oob.cu:34, expected oob.cu:79"),
        ("coredump: another error code", "misaligned", 45, 18, Run(rc=1, stderr=MSG_MISALIGNED),
         under("cd_misaligned.json", "culprit-1668-hang.json", change=_set("error.code", 700)), "fail",
         "error.code 700, expected 716"),
        ("coredump: one candidate runs the dump's kernel, not narrowed", "oob", 80, 37, base,
         oob(change=_candidates_again), "fail",
         "only candidate #11 runs the dump's kernel: the dump should have made it the culprit"),
        ("coredump: the faulty launch missing from the candidates", "streams4", 67, 36, streams_base,
         streams(change=lambda r: r.update(candidates=[c for c in r["candidates"] if "gather" not in c["kernel"]])),
         "fail",
         "the faulty launch is not among the 35 candidates"),
        ("coredump: the gather candidates at another line", "streams4", 66, 36, streams_base, streams(), "fail",
         "the faulty launch is not among the 40 candidates"),
        ("coredump: no device", "oob", 80, 37, Run(rc=SKIP_STATUS), Run(rc=SKIP_STATUS), "skip", "no CUDA device"),
    ]


def py_coredump_selftests():
    """(title, case, launch line, base, run, expected status, reason text) for the PyTorch --coredump runs: the
    real torch_gather report of a run without --coredump, with the "coredump" object culprit adds to an exact
    verdict (no source line: PyTorch has no device line info) (tests/gpu/fixtures/py_cd_gather.json)."""
    gather, xent = PY_CASE_BY_NAME["torch_gather"], PY_CASE_BY_NAME["torch_xent3d"]
    base = Run(rc=1, stderr=PY_ASSERT)

    def under(change=None, rc=-6, filename="culprit-2306.json"):
        return Run(rc=rc, stderr=DUMP_STARTS + "culprit: verdict ...\n",
                   reports=[fixture_at("py_cd_gather.json", filename, change)])

    return [
        ("py coredump: torch_gather exact, the dump names the gather kernel", gather, 24, base, under(), "pass",
         "certainty exact"),
        ("py coredump: the abort's hang report, made a fault", gather, 24, base,
         under(filename="culprit-2306-hang.json"), "pass", "certainty exact"),
        ("py coredump: the process was not aborted", gather, 24, base, under(rc=1), "fail",
         "exit status 1, expected -6"),
        ("py coredump: still a hang report", gather, 24, base, under(change=_set("kind", "hang"),
                                                                    filename="culprit-2306-hang.json"),
         "fail", "kind 'hang', expected 'fault'"),
        ("py coredump: no coredump object", gather, 24, base, under(change=_set("coredump", None)), "fail",
         "no \"coredump\" object"),
        ("py coredump: the dump names no kernel", gather, 24, base, under(change=_set("coredump.kernel", None)),
         "fail", "coredump.kernel missing"),
        ("py coredump: the dump's kernel is not the case's", xent, 24, base, under(), "fail",
         "does not match 'nll_loss'"),
        ("py coredump: the culprit at another python line", gather, 25, base, under(), "fail",
         "python line wrong: launch frames at gather_oob.py:24, gather_oob.py:31, expected gather_oob.py:25"),
        ("py coredump: candidates where exact is required", gather, 24, base,
         under(change=_set("verdict.certainty", "candidates")), "fail", "the faulty launch is not among the 0"),
        ("py coredump: no device", gather, 24, Run(rc=SKIP_STATUS, stderr="skipped: no CUDA device\n"),
         Run(rc=SKIP_STATUS), "skip", "skipped: no CUDA device"),
    ]


def run_coredump_selftests():
    """The --coredump judges' self-tests, the table's --coredump rows and its one-run line, as (title, ok,
    detail)."""
    results = []
    for title, name, line, fault_line, base, run, want_status, want_text in coredump_selftests():
        case = coredump_row(prepared(CASE_BY_NAME[name], None))
        case.fault_line = fault_line
        o = judge_c_coredump(case, "static", line, base, run)
        text = " ".join(o.reasons + o.notes + [o.path, "certainty " + o.certainty])
        results.append((title, o.status == want_status and want_text in text, "got %s: %s" % (o.status, text)))
    for title, case, line, base, run, want_status, want_text in py_coredump_selftests():
        o = judge_py_coredump(coredump_row(case), line, base, run)
        text = " ".join(o.reasons + o.notes + [o.path, "certainty " + o.certainty])
        results.append((title, o.status == want_status and want_text in text, "got %s: %s" % (o.status, text)))

    # the table: a default run settled by the blocking rerun, its --coredump row exact; streams4 as candidates
    default = judge(prepared(CASE_BY_NAME["streams4"], None), "static", 67, Run(rc=1, stderr=MSG_STREAMS),
                    Run(rc=1, stderr=MSG_STREAMS, reports=[fixture("streams4_candidates.json")]))
    judge_rerun(default, 67, Run(rc=1, stderr=MSG_STREAMS),
                Run(rc=1, stderr=MSG_STREAMS, reports=[fixture("streams4_rerun_exact.json")]))
    oob = judge(CASE_BY_NAME["oob"], "static", 80, Run(rc=1, stderr=MSG_700),
                Run(rc=1, stderr=MSG_700, reports=[fixture("oob_exact.json")]))
    rows = []
    for name, fault_line, launch, fixture_name, filename, default_o in (
            ("oob", 37, 80, "cd_oob.json", "culprit-1605-hang.json", oob),
            ("streams4", 36, 67, "cd_streams4.json", "culprit-1857-hang.json", default)):
        case = coredump_row(CASE_BY_NAME[name])
        case.fault_line = fault_line
        o = judge_c_coredump(case, "static", launch, Run(rc=1, stderr=MSG_700),
                             Run(rc=-6, reports=[fixture_at(fixture_name, filename)]))
        o.coredump_of = default_o
        rows.append(o)
    lines = table([oob, default] + rows)
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:6]]
    ok = [c[0] for c in cells] == ["oob", "streams4", "oob --coredump", "streams4 --coredump"] and \
        [c[4] for c in cells] == ["exact", "candidates -> exact", "exact", "candidates"] and \
        [c[-1] for c in cells] == ["pass"] * 4 and cells[2][6] == "dump oob.cu:37 (700)" and \
        "oob --coredump/static: the dump made the verdict exact: launch #11 of 4 candidates runs its kernel" in \
        lines and \
        lines[-2:] == ["one run: default exact 1/2, --coredump exact 1/2", "4 passed, 0 failed"]
    results.append(("table: --coredump rows, and the one-run line before the closing one", ok, "\n".join(lines)))
    ok = table([oob])[-1] == "1 passed, 0 failed" and not any(l.startswith("one run") for l in table([oob])) and \
        one_run_line(rows, "precise") == "one run (--mode precise): default exact 1/2, --coredump exact 1/2"
    results.append(("table: no one-run line without --coredump rows; the mode named with one", ok, ""))
    return results


# compute-sanitizer's memcheck on tests/gpu/oob.cu and misaligned.cu on an H200 (CUDA 13.0), abridged.
SAN_OOB = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at scatter_grad(float *, const long *, int, int)+0x110 in oob.cu:37
=========     by thread (123,0,0) in block (0,0,0)
=========     Access to 0x83f140805ec0 is out of bounds
=========     and is 4,397,807,459,521 bytes after the nearest allocation at 0x7ff14ec00000 of size 512 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main in oob.cu:80 [0x8e60] in gpu_oob_static
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaMemcpy.
gpu_oob: CUDA error at cudaMemcpy(&host_total, total, sizeof(float), cudaMemcpyDeviceToHost) (oob.cu:82): unspecified launch failure
========= ERROR SUMMARY: 2 errors
"""
SAN_MISALIGNED = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at read_field(const unsigned char *, int *, int, int)+0x120 in misaligned.cu:18
=========     by thread (32,0,0) in block (0,0,0)
=========     Access to 0x7f660a800206 is misaligned
=========     and is inside the nearest allocation at 0x7f660a800000 of size 16,384 bytes
=========
========= Invalid __global__ read of size 4 bytes
=========     at read_field(const unsigned char *, int *, int, int)+0x120 in misaligned.cu:18
=========     by thread (33,0,0) in block (0,0,0)
=========     Access to 0x7f660a800216 is misaligned
=========     and is inside the nearest allocation at 0x7f660a800000 of size 16,384 bytes
=========
========= ERROR SUMMARY: 1025 errors
"""


def _lane_report(lane=27, thread=(123, 0, 0), access="load", size=4, exception="Warp Illegal Address"):
    """A --coredump report whose fault_address names a lane, as culprit writes it."""
    return {"coredump": {"exception": exception, "access": access, "access_size": size},
            "fault_address": {"address": "0x835b7fe05ec0", "source": "coredump", "lane": lane,
                              "thread": list(thread), "block": [0, 0, 0], "lanes_read": 32, "lanes_bad": 1}}


def address_selftests():
    """The agreement of a --coredump report's faulting lane with compute-sanitizer, as (title, ok, detail)."""
    results = []
    acc = sanitizer_accesses(SAN_OOB)
    ok = acc == [{"access": "read", "size": 4, "thread": (123, 0, 0), "block": (0, 0, 0), "kind": "out of bounds",
                  "nearest": (4397807459521, "after", 512)}]
    results.append(("sanitizer: an out-of-bounds read parsed", ok, repr(acc)))
    acc = sanitizer_accesses(SAN_MISALIGNED)
    ok = [(a["thread"], a["kind"]) for a in acc] == [((32, 0, 0), "misaligned"), ((33, 0, 0), "misaligned")]
    results.append(("sanitizer: misaligned reads parsed", ok, repr(acc)))
    mis = _lane_report(lane=1, thread=(33, 0, 0), exception="Warp Misaligned Address")
    unknown = {"coredump": {"exception": "Warp Misaligned Address", "access": "load", "access_size": 4,
                            "address_unknown": "the faulting instruction wrote over a register its address is made "
                                               "of"}}
    for title, report, text, want, words in (
            ("the faulting lane agrees", _lane_report(), SAN_OOB, True,
             "address agrees with compute-sanitizer: lane 27, thread (123,0,0) block (0,0,0), a 4-byte read out of "
             "bounds"),
            ("a misaligned lane agrees", mis, SAN_MISALIGNED, True, "address agrees"),
            ("another thread", _lane_report(lane=0, thread=(96, 0, 0)), SAN_OOB, False,
             "is not among its 1 threads, first (123,0,0)"),
            ("a store where the sanitizer saw a read", _lane_report(access="store"), SAN_OOB, False,
             "a write, compute-sanitizer says a read"),
            ("another size", _lane_report(size=8), SAN_OOB, False, "8 bytes, compute-sanitizer says 4"),
            ("misaligned where the sanitizer saw out of bounds",
             _lane_report(exception="Warp Misaligned Address"), SAN_OOB, False,
             "misaligned, compute-sanitizer says out of bounds"),
            ("no lane named: not compared", unknown, SAN_MISALIGNED, None,
             "address not compared: culprit named no faulting lane (the faulting instruction wrote over"),
            ("no invalid access from the sanitizer", _lane_report(), "========= ERROR SUMMARY: 0 errors\n", None,
             "compute-sanitizer reported no invalid global access")):
        agrees, sentence = address_agreement(report, text)
        results.append(("sanitizer agreement: " + title, agrees is want and words in sentence, sentence))
    # the page of the kernel's log: SAN_OOB's read lies 4,397,807,459,521 bytes after the 512-byte allocation
    n = 4397807459521
    for title, past_end, size, access, want, words in (
            ("the page holds the sanitizer's access", n - 1217, 512, "read", True, "holds its access %d bytes after" % n),
            ("the page starts at it", n, 512, "read", True, "holds its access"),
            ("far from it: where allocations landed differs between processes", n + 1, 512, "read", True,
             "as far as it can be compared"),
            ("a write where the sanitizer saw a read", n - 1217, 512, "write", False, "a write (outside)"),
            ("no neighbour of that size: the kind alone", n - 1217, 4096, "read", True,
             "as far as it can be compared")):
        report = {"fault_address": {"address": "0x83f140805000", "source": "kernel log", "granule": 4096,
                                    "access": access, "answer": "outside",
                                    "below": {"base": "0x7ff14ec00000", "size": size, "past_end": past_end}}}
        agrees, sentence = address_agreement(report, SAN_OOB)
        results.append(("page agreement: " + title, agrees is want and words in sentence, sentence))
    # tests/gpu/underrun.cu: 4 threads write 16..4 bytes before a 2 MiB mapping
    san = "".join("""========= Invalid __global__ write of size 4 bytes
=========     at shift_left(float *, const float *, int, int)+0x100 in underrun.cu:30
=========     by thread (%d,0,0) in block (0,0,0)
=========     Access to 0x7f91c49ffff%x is out of bounds
=========     and is %d bytes before the nearest allocation at 0x7f91c4a00000 of size 2,097,152 bytes
""" % (t, t * 4, 16 - 4 * t) for t in range(4))
    for title, before, want, words in (
            ("an underrun's page ends at the mapping", 4096, True, "holds its access 16 bytes before the start"),
            ("a page a page too low", 8192, False, "holds none of its 4 accesses"),
            ("a page a page too high", 0, False, "holds none")):
        report = {"fault_address": {"address": "0x7fea209ff000", "source": "kernel log", "granule": 4096,
                                    "access": "write", "answer": "unmapped",
                                    "above": {"base": "0x7fea20a00000", "size": 2097152, "before_start": before}}}
        agrees, sentence = address_agreement(report, san)
        results.append(("page agreement: " + title, agrees is want and words in sentence, sentence))
    comm = {"pid": 7, "comm": "gpu_oob_static"}
    page = {"source": "/dev/kmsg", "xid": 31, "address": "0x83f140805000", "granule": 4096, "access": "read",
            "matched": "pid"}
    for title, report, status, words in (
            ("an illegal address without the kernel's log fails", {"error": {"code": 700}, "process": comm}, "fail",
             "no gpu_fault_log"),
            ("a log that gave no line fails",
             {"error": {"code": 700}, "process": comm,
              "gpu_fault_log": {"unknown": "the kernel logged no memory fault (Xid 31) of this process"}}, "fail",
             "gave no line"),
            ("an unreadable log is a note",
             {"error": {"code": 700}, "process": comm,
              "gpu_fault_log": {"unknown": "the kernel's log (/dev/kmsg) is not readable by this user"}}, "pass",
             "kernel log: the kernel's log (/dev/kmsg) is not readable"),
            ("a page without an answer fails", {"error": {"code": 700}, "process": comm, "gpu_fault_log": page},
             "fail", "no fault_address"),
            ("a page answered is a note",
             {"error": {"code": 700}, "process": comm, "gpu_fault_log": page,
              "fault_address": {"address": "0x83f140805000", "answer": "nothing_near"}}, "pass",
             "fault page 0x83f140805000 (read"),
            ("an older culprit's report is not held to it", {"error": {"code": 700}, "process": {"pid": 7}}, "pass",
             ""),
            ("an assert is not held to it", {"error": {"code": 710}, "process": comm}, "pass", "")):
        o = Outcome(CASE_BY_NAME["oob"], "static")
        judge_fault_page(o, report)
        said = " ".join(o.reasons + o.notes)
        results.append(("fault page rule: " + title, o.status == status and words in said, said))
    b2 = {"seq": 9, "stream": "0x2"}
    kept = {"certainty": "candidates", "reason": "2 stream(s) had unfinished work; narrowed by the page of the "
            "faulting address to the unfinished launches of one stream: ..."}
    for title, report, status, words in (
            ("one stream's candidates kept is a note",
             {"gpu_fault_log": page, "verdict": kept, "candidates": [b2, dict(b2, seq=11)],
              "candidates_before_fault_page": [{"seq": 10, "stream": "0x1"}]}, "pass", "kept 2 launches of stream 0x2"),
            ("both streams still candidates fails",
             {"gpu_fault_log": page, "verdict": {"certainty": "candidates", "reason": "2 stream(s)"},
              "candidates": [b2, {"seq": 10, "stream": "0x1"}]}, "fail", "on 2 streams"),
            ("a line tied by name is a note only",
             {"gpu_fault_log": dict(page, matched="name"), "verdict": {"certainty": "candidates"},
              "candidates": [b2, {"seq": 10, "stream": "0x1"}]}, "pass", "page not judged"),
            ("an exact verdict is left to the exact judge",
             {"gpu_fault_log": page, "verdict": {"certainty": "exact"}, "culprit": b2}, "pass", "")):
        o = Outcome(CASE_BY_NAME["page_streams"], "static")
        judge_page_stream(o, report)
        said = " ".join(o.reasons + o.notes)
        results.append(("page stream rule: " + title, o.status == status and words in said, said))
    o = judge_address(Outcome(CASE_BY_NAME["oob"], "static"), _lane_report(lane=0, thread=(96, 0, 0)), SAN_OOB)
    results.append(("sanitizer agreement: a disagreement fails the row", o.status == "fail", " ".join(o.reasons)))
    o = judge_address(Outcome(CASE_BY_NAME["oob"], "static"), _lane_report(), SAN_OOB)
    results.append(("sanitizer agreement: an agreement is a note under the table",
                    o.status == "pass" and o.notes[0].startswith("address agrees"), " ".join(o.notes)))
    want = {c.name for c in CASES if c.sanitize}
    ok = {"oob", "misaligned", "streams4", "underrun", "after_free"} <= want and not want & {"assert", "trap"}
    results.append(("the illegal and misaligned address cases are compared with compute-sanitizer", ok,
                    repr(sorted(want))))
    return results
