#!/usr/bin/env python3
"""Jobs started by real launchers over the simulated CUDA driver: Open MPI's mpirun (a culprit per rank, and one
culprit around mpirun) and Slurm's srun on a one-node cluster the case starts itself (minislurm.py). The job is
four copies of progs/rankjob.c, every rank given the same environment as launchers do, its part scripted in
RANKJOB_SCRIPT: rank 2's loss kernel faults, ranks 0, 1 and 3 wait in the all-reduce for it. Once rank 2 has
written its fault report the case kills rank 3 with SIGKILL (as the kernel's OOM killer would: it leaves no
report), then ends the job as a scheduler does (SIGTERM to mpirun, scancel for Slurm). The merged view must
say: rank 2 faulted first in its kernel, ranks 0 and 1 are collateral (stopped by SIGTERM while waiting in
AllReduce), rank 3 is missing.

A case whose launcher is not installed is skipped (status 77) with the reason. Same harness and command line
as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness)
import rank_cases as rc  # noqa: E402  (the job helpers: reports, verdict lines, the job's JSON)
import minislurm  # noqa: E402

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check

ALLREDUCE = rc.ALLREDUCE
SCRIPT = "2:FAKECUDA_FAULT=kernel=%s 0-1,3:FAKECUDA_HANG=kernel=%s" % (h.BAD, ALLREDUCE)
NPROC, KILLED, FAULTED = 4, 3, 2
WAIT_S = 20      # for each step of the job: the ranks ready, rank 2's report, its culprit run's end, rank 3's death
END_S = 30       # for the launcher to end once stopped (CTest's limit, 240 s, leaves room for the cleanup)


def want_line(launcher):
    return ("job of 4 ranks (%s): rank 2 faulted first: write_oob(int*, int) launched at rankjob.c:%d; ranks 0, 1 "
            "are collateral (stopped by SIGTERM while waiting in AllReduce); rank 3 is missing (no report)" % (
                launcher, rc.loss_line()))


class Launched:
    """The launcher, started in a session of its own (so that a failed case can end it and all it started), its
    output in files (no pipe to fill)."""

    def __init__(self, b, argv, env):
        self.argv = argv
        self.outf = os.path.join(b.newdir("out"), "stdout")
        self.errf = os.path.join(os.path.dirname(self.outf), "stderr")
        with open(self.outf, "wb") as out, open(self.errf, "wb") as err:
            self.p = subprocess.Popen(argv, env=env, cwd=b.newdir("cwd"), stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=err, start_new_session=True, preexec_fn=h._no_core)

    def text(self):
        with open(self.outf, "rb") as o, open(self.errf, "rb") as e:
            return o.read().decode("utf-8", "replace"), e.read().decode("utf-8", "replace")

    def describe(self):
        out, err = self.text()
        return "%s: exit %s\n--- stdout\n%s--- stderr\n%s---" % (" ".join(self.argv), self.p.returncode, out, err)

    def finish(self, what):
        """Waits for the launcher's end (END_S at most, then it and its session are killed and the case fails)."""
        try:
            self.p.wait(timeout=END_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise h.CaseFailed("%s did not end within %d s of being stopped\n%s" % (what, END_S, self.describe()))

    def kill(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except OSError:
            pass
        self.p.wait()


def fault_reports(rdir):
    return [f for f in glob.glob(os.path.join(rdir, "culprit-*.json")) if re.search(r"-\d+\.json$", f)]


def wait_for(what, cond, launched):
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if launched.p.poll() is not None:
            raise h.CaseFailed("the launcher ended while waiting for %s\n%s" % (what, launched.describe()))
        if time.monotonic() > deadline:
            raise h.CaseFailed("%s did not happen within %d s\n%s" % (what, WAIT_S, launched.describe()))
        time.sleep(0.05)


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie no one has reaped yet is gone too
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def is_culprit(pid):
    """Whether pid is a `culprit` process (a rank's parent: a culprit per rank), not a launcher's."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip() == "culprit"
    except OSError:
        return False


def play(b, argv, env, rdir, stop):
    """Runs the job: starts argv, waits until every rank has queued its first step and rank 2's fault report is
    written (and, with a culprit per rank, rank 2's culprit run has ended: it symbolizes and shows the report
    after the rank exits), kills rank 3 with SIGKILL, waits until it is gone, calls stop(launched, fault_report)
    to end the job as a scheduler would, and waits for the launcher. Returns the Launched."""
    ready = os.path.join(b.newdir("ready"), "rank")
    env = dict(env, RANKJOB_SCRIPT=SCRIPT, RANKJOB_READY=ready)
    launched = Launched(b, argv, env)
    try:
        wait_for("every rank's first step", lambda: len(glob.glob(ready + "-[0-9]")) == NPROC, launched)
        pids = {}
        for r in range(NPROC):
            with open("%s-%d" % (ready, r)) as f:
                pids[r] = [int(x) for x in f.read().split()]  # the rank's pid and its parent's
        wait_for("rank 2's fault report", lambda: fault_reports(rdir), launched)
        own = pids[FAULTED][1]
        if is_culprit(own):
            wait_for("the end of rank 2's culprit run (pid %d)" % own, lambda: gone(own), launched)
        victim = pids[KILLED][0]
        os.kill(victim, signal.SIGKILL)
        wait_for("rank 3's death (pid %d)" % victim, lambda: gone(victim), launched)
        stop(launched, fault_reports(rdir)[0])
        launched.finish(argv[0])
    except BaseException:
        launched.kill()
        raise
    check(launched.p.returncode != 0, "the launcher should fail (a rank failed)\n" + launched.describe())
    return launched


def check_job(b, rdir, launcher, run_ids, launched):
    """The reports of ranks 0, 1 and 2 (none of rank 3), their launcher fields and job, and the merged view of
    `culprit report DIR` (text and JSON)."""
    reps = rc.reports(rdir)
    rc.check_names(reps, launcher)
    rc.check_ranks(reps, NPROC, launcher, launcher)
    ranks = rc.by_rank(reps)
    kinds = {r: [rep.get("kind") for _, rep in ranks[r]] for r in ranks}
    check(kinds == {0: ["hang"], 1: ["hang"], 2: ["fault"]}, "report kinds by rank %r (rank 3, killed, leaves none)"
          "\n%s" % (kinds, launched.describe()))
    jobs = {rep["process"].get("job") for rep in reps.values()}
    check(len(jobs) == 1 and (list(jobs)[0] or "").startswith(launcher + ":"),
          "the ranks should name one %s job: %r" % (launcher, jobs))
    got_ids = len({rep["process"].get("run_id") for rep in reps.values()})
    check(got_ids == run_ids, "%d run ids, expected %d" % (got_ids, run_ids))
    for r in (0, 1):
        hang = ranks[r][0][1].get("hang", {})
        check(hang.get("trigger") == "SIGTERM", "rank %d: hang %r" % (r, hang))
    fault = ranks[2][0][1]
    h.check_error(fault, 700, "cuCtxSynchronize")
    h.expect_frame(fault["culprit"].get("stack"), rc.RANKJOB_SRC, rc.loss_line(), "rank 2's culprit stack")
    res = rc.run(b, [b.cli, "report", rdir], rc.env_of(b))
    check(res.rc == 0, "culprit report DIR\n" + res.describe())
    line = rc.verdict_line(res.out_text)
    check(line == want_line(launcher), "verdict line\n  %s\nexpected\n  %s" % (line, want_line(launcher)))
    lines = rc.rank_lines(res.out_text)
    check((lines.get(3) or "").startswith("rank 3: missing: no report"), "rank 3's line %r" % lines.get(3))
    check(re.match(r"rank 0 \(.*\): collateral: stopped by SIGTERM while waiting in NCCL AllReduce \(sum, f32, "
                   r"ring, LL\); report culprit-.*-hang\.json$", lines.get(0) or ""), "rank 0's line %r" % lines.get(0))
    job = rc.check_job_json(b, rdir, {0: "collateral", 1: "collateral", 2: "faulted", 3: "missing"}, 2)
    check(job.get("launcher") == launcher and job.get("world_size") == NPROC,
          "job JSON %r" % {k: job.get(k) for k in ("launcher", "world_size")})
    return res


def mpirun_argv():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise h.CaseSkipped("Open MPI's mpirun is not installed (Debian: apt-get install openmpi-bin)")
    version = subprocess.run([mpirun, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    if b"Open MPI" not in version.stdout and b"OpenRTE" not in version.stdout:
        raise h.CaseSkipped("mpirun here is not Open MPI's: %s" % version.stdout.decode("utf-8", "replace")[:80])
    argv = [mpirun, "--oversubscribe"]   # four ranks on however many cores
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    # Open MPI ends the whole job at the first rank that exits non-zero (rank 2, at once), before the case can
    # kill rank 3; with the first setting the job goes on until it is stopped, as a job the scheduler stops. Open
    # MPI sends SIGKILL 1 s after the SIGTERM that stops a job, which on a loaded machine cut a rank's hang report
    # short (2 runs in 16 with 16 at once on 2 cores; none in 16 with 3 s, which mpirun then always waits).
    return argv + ["--mca", "orte_abort_on_non_zero_status", "0", "--mca", "odls_base_sigkill_timeout", "3",
                   "-np", str(NPROC)]


def sigterm(launched, _fault):
    launched.p.send_signal(signal.SIGTERM)


@case("launch_mpirun_per_rank")
def _(b):
    """mpirun -np 4 culprit run --dir D -- rankjob: a culprit per rank, one directory; each command shows its own
    rank, `culprit report D` the job."""
    rdir = b.newdir("shared")
    argv = mpirun_argv() + [b.cli, "run", "--dir", rdir, "--", b.prog("rankjob"), "3"]
    launched = play(b, argv, rc.env_of(b), rdir, sigterm)
    _, err = launched.text()
    check("'culprit report %s' merges the reports of every rank written there" % rdir in err and "job of" not in err,
          "each rank's culprit run shows its own rank and says how to see the job\n" + launched.describe())
    check_job(b, rdir, "openmpi", 3, launched)


@case("launch_mpirun_around")
def _(b):
    """culprit run --dir D -- mpirun -np 4 rankjob: one culprit around the launcher; the end of the run shows the
    merged view (mpirun passes the SIGTERM culprit run forwards to it on to the ranks)."""
    rdir = b.newdir("reports")
    argv = [b.cli, "run", "--dir", rdir, "--"] + mpirun_argv() + [b.prog("rankjob"), "3"]
    launched = play(b, argv, rc.env_of(b), rdir, sigterm)
    _, err = launched.text()
    line = rc.verdict_line(err)
    check(line == want_line("openmpi"), "the merged view at the end of the run\n  %s\nexpected\n  %s\n%s" % (
        line, want_line("openmpi"), launched.describe()))
    check("culprit: rank 2, the first to fault:" in err, "rank 2's full verdict is missing\n" + launched.describe())
    check_job(b, rdir, "openmpi", 1, launched)


@case("launch_srun")
def _(b):
    """srun -n 4 culprit run --dir D -- rankjob on a one-node Slurm cluster started for the case; scancel ends
    the job step (SIGTERM to every task)."""
    why = minislurm.missing()
    if why:
        raise h.CaseSkipped(why)
    cluster = minislurm.Cluster(b.newdir("slurm"))
    try:
        cluster.start()
    except minislurm.ClusterError as e:
        raise h.CaseFailed("the test cluster did not start: %s" % e)
    try:
        rdir = b.newdir("shared")
        argv = [minislurm.find("srun"), "-n", str(NPROC), b.cli, "run", "--dir", rdir, "--", b.prog("rankjob"), "3"]

        def scancel(_launched, fault):
            job = rc.reports(rdir)[os.path.basename(fault)]["process"].get("job", "")
            check(re.match(r"slurm:\d+\.\d+$", job), "rank 2's report names the job %r" % job)
            cluster.cancel(job.split(":")[1].split(".")[0])

        launched = play(b, argv, cluster.env(rc.env_of(b)), rdir, scancel)
        _, err = launched.text()
        check(re.search(r"task 3: Killed", err), "srun did not see rank 3 killed\n" + launched.describe())
        check_job(b, rdir, "slurm", 3, launched)
    finally:
        cluster.stop()
    check(not cluster.strays(), "processes of the test cluster still run after it was stopped: %r" % cluster.strays())


if __name__ == "__main__":
    sys.exit(h.main())
