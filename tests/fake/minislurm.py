"""A one-node Slurm cluster for the launcher tests (launcher_cases.py): munged, slurmctld and slurmd from Debian's
packages, run in the foreground from a temporary directory with a slurm.conf made for it (ports of its own, its
own munge key and socket, state, spool and logs there), and stopped with everything they started. It needs root
(slurmd starts the tasks) and nothing else of the machine's: no systemd, no /etc/slurm, no running munge.

    c = Cluster(workdir); c.start(); ... srun with c.env(env) ...; c.stop()

Standard library only.
"""

import ctypes
import os
import signal
import socket
import subprocess
import time

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("srun", "sinfo", "squeue", "scancel")
PACKAGES = "munge slurmctld slurmd slurm-client"  # Debian 12's names
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # where the daemons are, when PATH leaves these out


def find(prog):
    """The program's path through PATH and the sbin directories, or None."""
    for d in os.environ.get("PATH", "").split(os.pathsep) + list(SBIN):
        path = os.path.join(d, prog)
        if d and os.access(path, os.X_OK):
            return path
    return None


def missing():
    """Why no cluster can be started here, or None."""
    absent = [p for p in DAEMONS + CLIENTS if not find(p)]
    if absent:
        return "Slurm or munge is not installed (no %s; Debian: apt-get install %s)" % (", ".join(absent), PACKAGES)
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (slurmd starts the tasks as their user)"
    return None


def free_port():
    """A TCP port nobody listens on now (the kernel's choice)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class ClusterError(Exception):
    pass


PR_SET_CHILD_SUBREAPER = 36  # prctl: orphans of our descendants become our children, not init's


def subreaper():
    """Makes this process the reaper of what the daemons leave (slurmstepd detaches from slurmd), so that stop()
    can wait for them instead of leaving zombies to an init that may not reap. Best effort."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def reap():
    """Waits for every child that has ended (those subreaper() gave us)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class Cluster:
    """The cluster: one node, named after this host, with 8 CPUs whatever the machine has (so that -n 4 runs on a
    2-core machine), one partition."""

    def __init__(self, workdir, cpus=8):
        self.dir = workdir
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(workdir, "slurm.conf")
        self.sock = os.path.join(workdir, "munge.sock")
        self.procs = {}  # daemon name: Popen
        self.cpus = cpus

    def _write(self):
        for sub in ("state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        key = os.path.join(self.dir, "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(os.urandom(1024))
        d = self.dir
        conf = """# made by the culprit tests for one run; nothing here outlives it
ClusterName=culpritfake
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/linear
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
MinJobAge=2
InactiveLimit=0
SlurmctldTimeout=10
SlurmdTimeout=10
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""".format(node=self.node, ctld_port=free_port(), slurmd_port=free_port(), sock=self.sock, d=d, cpus=self.cpus)
        with open(self.conf, "w") as f:
            f.write(conf)
        return key

    def env(self, base):
        """base with SLURM_CONF naming this cluster (what srun, sinfo and scancel read)."""
        return dict(base, SLURM_CONF=self.conf)

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")
        try:
            # a session of its own, so that stop() can end it and whatever it started in one step
            self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, env=self.env(os.environ))
        finally:
            log.close()

    def _wait(self, what, done, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise ClusterError("%s exited with %s while waiting for %s\n%s" % (name, p.returncode, what,
                                                                                     self.logs()))
            if done():
                return
            time.sleep(0.2)
        raise ClusterError("%s did not happen within %d s\n%s" % (what, timeout, self.logs()))

    def _node_state(self):
        r = subprocess.run([find("sinfo"), "-h", "-n", self.node, "-o", "%T"], env=self.env(os.environ),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10)
        return r.stdout.decode("utf-8", "replace").strip()

    def start(self, timeout=40):
        """Starts the daemons and waits until the node takes jobs; on failure stops what started and raises
        ClusterError with the daemons' logs."""
        key = self._write()
        subreaper()
        try:
            self._spawn("munged", [find("munged"), "--foreground", "--force", "--key-file=" + key,
                                   "--socket=" + self.sock, "--pid-file=" + os.path.join(self.dir, "munged.pid"),
                                   "--seed-file=" + os.path.join(self.dir, "munged.seed"),
                                   "--log-file=" + os.path.join(self.dir, "log", "munged.log")])
            self._wait("munged's socket", lambda: os.path.exists(self.sock), 10)
            self._spawn("slurmctld", [find("slurmctld"), "-D", "-i", "-f", self.conf])
            self._spawn("slurmd", [find("slurmd"), "-D", "-f", self.conf, "-N", self.node])
            self._wait("the node to be idle", lambda: self._node_state() == "idle", timeout)
        except (ClusterError, OSError, subprocess.SubprocessError):
            self.stop()
            raise

    def jobs(self):
        """The ids of the jobs the cluster still has."""
        r = subprocess.run([find("squeue"), "-h", "-o", "%i"], env=self.env(os.environ), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=10)
        return r.stdout.decode().split()

    def cancel(self, job):
        """scancel JOB: Slurm's end of a job (SIGCONT and SIGTERM to every task, SIGKILL after KillWait)."""
        subprocess.run([find("scancel"), str(job)], env=self.env(os.environ), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10)

    def strays(self):
        """Processes the daemons started that outlived them (slurmstepd, tasks): they carry this cluster's
        SLURM_CONF in their environment, which nothing else on the machine does."""
        mark = ("SLURM_CONF=" + self.conf).encode()
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if mark in f.read().split(b"\0"):
                        out.append(int(pid))
            except OSError:
                continue
        return out

    def stop(self):
        """Cancels what is left of the jobs, stops the daemons (SIGTERM, then SIGKILL after 10 s), kills any
        process of theirs still running and waits for them. Returns the pids it had to kill. Safe to call twice."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                for job in self.jobs():
                    self.cancel(job)
                deadline = time.monotonic() + 10
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(0.2)
            except (OSError, subprocess.SubprocessError):
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
        strays = self.strays()
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while self.strays() and time.monotonic() < deadline:
            reap()
            time.sleep(0.1)
        reap()
        return strays

    def logs(self, lines=15):
        """The last lines of each daemon's logs, for a failure message."""
        out = []
        logdir = os.path.join(self.dir, "log")
        for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else ():
            with open(os.path.join(logdir, name), "rb") as f:
                tail = f.read().decode("utf-8", "replace").splitlines()[-lines:]
            out.append("--- %s\n%s" % (name, "\n".join(tail)))
        return "\n".join(out)
