#!/usr/bin/env python3
"""The merged view at scale, over the simulated CUDA driver: a job of 1,024 real rank processes (scalejob.py: one
faults in its own kernel, four lag in a step kernel, one is killed, the others wait in the all-reduce until they
are stopped) and `culprit report DIR` on their reports. The view must stay readable: the verdict line and the
lines under it group the ranks by status and by what they waited in, as ranges. How long the merge takes and how
much memory it needs is measured by bench/merge_scale.py, not here.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness)
import rank_cases as rc  # noqa: E402  (verdict lines, the rankjob's marked lines)
import scalejob  # noqa: E402

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
LIST_MAX = 24  # pieces culprit lists before "and N more" (MERGE_LIST_MAX)


def ranges(ranks):
    """Ranks as culprit lists them: "ranks 0-127, 132-511, 513" (three or more in a row make a range), cut after
    LIST_MAX pieces with "and N more"."""
    ranks, pieces, i = sorted(ranks), [], 0
    while i < len(ranks) and len(pieces) < LIST_MAX:
        k = i
        while k + 1 < len(ranks) and ranks[k + 1] == ranks[k] + 1:
            k += 1
        if k - i >= 2:
            pieces.append("%d-%d" % (ranks[i], ranks[k]))
        else:
            pieces.extend(str(r) for r in ranks[i:k + 1])
        i = k + 1
    text = "rank%s %s" % ("s" if len(ranks) > 1 else "", ", ".join(pieces))
    return text + (" and %d more" % (len(ranks) - i) if i < len(ranks) else "")


def step_line():
    """The line of rankjob.c that launches the step kernel."""
    with open(rc.RANKJOB_SRC) as f:
        for n, line in enumerate(f, 1):
            if "cuLaunchKernel(f_step" in line:
                return n
    raise h.CaseFailed("no step launch in %s" % rc.RANKJOB_SRC)


def in_flight(rep):
    """The kernel a hang report says was running."""
    return ((rep.get("culprit") or {}).get("mangled") or (rep.get("culprit") or {}).get("kernel") or "")


@case("scale_1024_ranks")
def _(b):
    """1,024 ranks' reports in one directory: `culprit report DIR` shows one verdict line and a line per group
    (the 1,018 ranks waiting in AllReduce, the 4 that lag, the missing, the one that faulted), each group the
    ranks whose reports say the same; --json lists every rank."""
    n = 1024
    rdir = b.newdir("reports")
    try:
        lost = scalejob.make(b.dir, rdir, n, parallel=4)
    except RuntimeError as e:
        raise h.CaseFailed("making the job's reports: %s" % e)
    reps = rc.reports(rdir)
    ranks = rc.by_rank(reps)
    roles = scalejob.roles(n)
    fault_rank = [r for r, what in roles.items() if what == "fault"][0]
    missing = sorted(set(range(n)) - set(ranks))
    check(missing == sorted([r for r, what in roles.items() if what == "kill"] + lost),
          "ranks without a report %s; the killed one and those the generator saw lose theirs %s" % (missing, lost))
    # the groups the reports themselves make: what each hang report says was in flight
    waiting = sorted(r for r, rr in ranks.items() if rr[0][1].get("kind") == "hang" and
                     in_flight(rr[0][1]).startswith(scalejob.ALLREDUCE))
    lagging = sorted(r for r, rr in ranks.items() if rr[0][1].get("kind") == "hang" and
                     in_flight(rr[0][1]) == scalejob.STEP)
    check(len(waiting) + len(lagging) + len(missing) + 1 == n, "%d waiting, %d lagging, %d missing of %d" % (
        len(waiting), len(lagging), len(missing), n))
    check(lagging == sorted(r for r, what in roles.items() if what == "lag"), "lagging ranks %s" % lagging)

    res = rc.run(b, [b.cli, "report", rdir], rc.env_of(b))
    check(res.rc == 0, "culprit report DIR\n" + res.describe()[:3000])
    want = ("job of %d ranks (torchrun): rank %d faulted first: write_oob(int*, int) launched at rankjob.c:%d; "
            "%s are collateral (stopped by SIGTERM while waiting in AllReduce); %s are collateral (stopped by "
            "SIGTERM); %s %s missing (no report)" % (n, fault_rank, rc.loss_line(), ranges(waiting), ranges(lagging),
                                                     ranges(missing), "is" if len(missing) == 1 else "are"))
    line = rc.verdict_line(res.out_text)
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    # the lines under it: one per group, in the order of each group's first rank, then the full verdict
    lines = res.out_text.splitlines()
    heads = [rc.joined(lines, i, "      ") for i, l in enumerate(lines) if re.match(r"culprit:   ranks? \d", l)]
    want_heads = [
        (min(waiting), "%s (%d ranks): collateral: stopped by SIGTERM while waiting in NCCL AllReduce (sum, f32, "
                       "ring, LL); reports such as culprit-" % (ranges(waiting), len(waiting))),
        (min(lagging), "%s (%d ranks): collateral: stopped by SIGTERM with step(float*, int) launched at "
                       "rankjob.c:%d in flight, NCCL AllReduce (sum, f32, ring, LL) queued behind it; reports such as "
                       "culprit-" % (ranges(lagging), len(lagging), step_line())),
        (fault_rank, "rank %d (%s, pid %d): faulted first: CUDA_ERROR_ILLEGAL_ADDRESS (700) in write_oob(int*, int) "
                     "launched at rankjob.c:%d; report culprit-" % (
                         fault_rank, ranks[fault_rank][0][1]["process"]["hostname"],
                         ranks[fault_rank][0][1]["process"]["pid"], rc.loss_line())),
    ]
    if len(missing) == 1:
        want_heads.append((missing[0], "rank %d: missing: no report" % missing[0]))
    else:
        want_heads.append((min(missing), "%s (%d ranks): missing: no report" % (ranges(missing), len(missing))))
    want_heads = [t for _, t in sorted(want_heads)]
    check(len(heads) == len(want_heads) and all(g.startswith(w) for g, w in zip(heads, want_heads)),
          "the lines under the verdict\n  %s\nexpected (beginning with)\n  %s" % ("\n  ".join(heads),
                                                                                "\n  ".join(want_heads)))
    full = lines.index("culprit: rank %d, the first to fault:" % fault_rank) if \
        "culprit: rank %d, the first to fault:" % fault_rank in lines else -1
    check(0 < full <= 40, "the full verdict of rank %d should follow a few lines of summary (at line %d)" % (
        fault_rank, full))

    res = rc.run(b, [b.cli, "report", "--json", rdir], rc.env_of(b))
    check(res.rc == 0, "culprit report --json DIR\n" + res.describe()[:3000])
    job = json.loads(res.out_text)
    procs = job.get("processes", [])
    check(len(procs) == n and [p.get("rank") for p in procs] == list(range(n)), "%d process entries" % len(procs))
    statuses = {}
    for p in procs:
        statuses[p["status"]] = statuses.get(p["status"], 0) + 1
        check(len(p.get("reports", [])) == (0 if p["status"] == "missing" else 1), "entry %r" % p)
    check(statuses == {"collateral": len(waiting) + len(lagging), "faulted": 1, "missing": len(missing)},
          "statuses %r" % statuses)
    ff = job.get("first_fault") or {}
    check(ff.get("rank") == fault_rank and ff.get("order") == "only", "first_fault %r" % ff)


if __name__ == "__main__":
    sys.exit(h.main())
