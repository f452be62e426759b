#!/usr/bin/env python3
"""A job of many ranks on the simulated CUDA driver, for the merge at scale (scale_cases.py, bench/merge_scale.py):
every rank is a real process, progs/rankjob.c with libculprit.so preloaded and torchrun's variables for its rank,
writing its reports into one directory, a few at a time. What happens to the ranks of an N-rank job:

- rank N/2 faults in its own kernel (write_oob): a fault report;
- ranks N/8 .. N/8+3 never finish a step kernel (they lag behind) and are stopped by SIGTERM: hang reports with
  step(float*, int) in flight and the all-reduce queued behind it;
- rank N*700/1024 is killed with SIGKILL (it leaves nothing: missing);
- every other rank waits in the all-reduce until SIGTERM stops it: hang reports, waiting in NCCL AllReduce.

Each rank is signalled once it waits in its first synchronize.

    python3 scalejob.py --build BUILD --ranks N --dir DIR [--parallel P]

prints how long it took. Standard library only.
"""

import argparse
import concurrent.futures
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

BAD, STEP, ALLREDUCE = "_Z9write_oobPii", "_Z4stepPfi", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
RUN_ID = "scale"          # TORCHELASTIC_RUN_ID: one job
READY_S = 30              # for one rank to queue its first step


def roles(n):
    """{rank: role} for the ranks that are not simply waiting in the all-reduce."""
    out = {n // 2: "fault", n * 700 // 1024: "kill"}
    for r in range(n // 8, n // 8 + 4):
        out.setdefault(r, "lag")
    return out


def role(n, rank):
    return roles(n).get(rank, "wait")


def waiting(pid):
    """Whether the process's main thread sleeps (in the synchronize of its first step, once it is ready: the
    simulated driver runs the launches before the hung one first, as a GPU would have)."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "S"
    except (OSError, IndexError):
        return False


class Job:
    """What every rank needs: the build's paths and the shared directory."""

    def __init__(self, build, rdir, n):
        build = os.path.abspath(build)
        self.prog = os.path.join(build, "tests", "fake", "progs", "rankjob")
        self.lib = os.path.join(build, "lib", "libculprit.so")
        self.sim = os.path.join(build, "lib", "culprit-sim")
        self.rdir = rdir
        self.n = n
        self.lost = []  # ranks that should have left a report and did not (see make)
        self.ready = tempfile.mkdtemp(prefix="scale-ready-")
        for path in (self.prog, self.lib):
            if not os.path.exists(path):
                raise RuntimeError("%s is missing (build the project first)" % path)

    def env(self, rank, what):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CULPRIT_", "FAKECUDA_", "SLURM_", "OMPI_", "PMI_", "PMIX_", "TORCHELASTIC_"))
               and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "LD_PRELOAD", "NCCL_DEBUG",
                             "NCCL_DEBUG_FILE")}
        env.update(LD_PRELOAD=self.lib, LD_LIBRARY_PATH=self.sim, CULPRIT_DIR=self.rdir, CULPRIT_CRUMB_EVERY="1",
                   LC_ALL="C", RANK=str(rank), LOCAL_RANK=str(rank % 8), WORLD_SIZE=str(self.n),
                   LOCAL_WORLD_SIZE="8", GROUP_RANK=str(rank // 8), TORCHELASTIC_RUN_ID=RUN_ID,
                   RANKJOB_READY=os.path.join(self.ready, "r"))
        if what == "fault":
            env["FAKECUDA_FAULT"] = "kernel=" + BAD
        elif what == "lag":
            env["FAKECUDA_HANG"] = "kernel=" + STEP
        else:
            env["FAKECUDA_HANG"] = "kernel=" + ALLREDUCE
        return env

    def rank(self, rank):
        """Runs one rank to its end; returns an error message or None."""
        what = role(self.n, rank)
        p = subprocess.Popen([self.prog, "1"], env=self.env(rank, what), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            if what != "fault":
                ready = os.path.join(self.ready, "r-%d" % rank)
                deadline = time.monotonic() + READY_S
                while not (os.path.exists(ready) and waiting(p.pid)):
                    if p.poll() is not None or time.monotonic() > deadline:
                        return "rank %d (%s) did not wait in its first step: exit %s" % (rank, what, p.poll())
                    time.sleep(0.002)
                p.send_signal(signal.SIGKILL if what == "kill" else signal.SIGTERM)
            _, err = p.communicate(timeout=READY_S)
        except BaseException:
            p.kill()
            p.wait()
            raise
        want = {"fault": 1, "kill": -signal.SIGKILL}.get(what, -signal.SIGTERM)
        if p.returncode != want:
            return "rank %d (%s) exited with %s, expected %s\n%s" % (rank, what, p.returncode, want,
                                                                      err.decode("utf-8", "replace")[-2000:])
        tag = {"fault": "", "kill": None}.get(what, "-hang")
        if tag is not None and not glob.glob(os.path.join(self.rdir, "culprit-*-%d%s.json" % (p.pid, tag))):
            self.lost.append(rank)  # the merged view must call it missing, like the killed one
        return None


def make(build, rdir, n, parallel=4):
    """Runs the N ranks, PARALLEL at a time; raises RuntimeError naming the first rank that went wrong. Returns
    the ranks stopped by SIGTERM that left no hang report nonetheless: a SIGTERM that lands while the rank's
    thread holds the dynamic loader's lock (its first call of a driver function, which the library resolves with
    dladdr) finds the library's watcher blocked on that lock and the process ends without its report (about 1
    rank in 500 here); such a rank is missing, as a killed one."""
    job = Job(build, rdir, n)
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        for problem in pool.map(job.rank, range(n)):
            if problem:
                raise RuntimeError(problem)
    return sorted(job.lost)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--parallel", type=int, default=4)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    t0 = time.monotonic()
    lost = make(a.build, a.dir, a.ranks, a.parallel)
    print("%d ranks' reports in %s in %.1f s" % (a.ranks, a.dir, time.monotonic() - t0))
    if lost:
        print("stopped by SIGTERM without a hang report: ranks %s" % ", ".join(map(str, lost)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
