"""Running a test program for the GPU suite (check.py): in its own process group, with a timeout, its output and the
report files it wrote collected; a program that does not end by itself (a hang case) stopped by a signal once it
is ready, then killed with its whole tree; whatever a run left behind swept. Standard library only."""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

# How a hang case stops the program: SIGTERM this long after it printed its "spinning" line (the timeout case:
# as soon as the timeout report is there, or at HANG_BOUND_S), and SIGKILL to its whole tree if it has not ended
# HANG_GRACE_S after that. None of these is a measurement; they only bound how long a case can take.
HANG_HOLD_S = 2.0
HANG_BOUND_S = 12.0
HANG_GRACE_S = 20.0


class Run:
    """What one execution of a program left behind."""

    def __init__(self, rc=0, stdout=b"", stderr="", timed_out=False, reports=None, argv=None, stopped=None,
                 snapshots=None, pid=0):
        self.rc = rc                  # exit status (negative: killed by that signal)
        self.stdout = stdout          # stdout bytes
        self.stderr = stderr          # stderr text
        self.timed_out = timed_out    # killed by the per-run timeout
        self.reports = reports or []  # [(path, parsed JSON or an error string)]
        self.argv = argv or []        # the command line, for the logs
        self.stopped = stopped        # the signal the harness sent to stop it (a Stop run), None if none was sent
        self.snapshots = snapshots or []  # [(path, parsed JSON)]: report files as they were seen during the run
        self.pid = pid                # process id of argv[0] (culprit itself under culprit run)
        self.stop_note = ""           # how the stop went, for the logs and the judge


class Stop:
    """How a run that does not end by itself is stopped: once stdout shows `ready`, send `sig` after `hold`
    seconds, or, with `want`, as soon as a report file satisfying want(report) appears (at `bound` seconds at the
    latest); SIGKILL the whole process tree `grace` seconds after the signal."""

    def __init__(self, ready, sig=signal.SIGTERM, hold=HANG_HOLD_S, want=None, bound=HANG_BOUND_S,
                 grace=HANG_GRACE_S):
        self.ready = ready    # bytes the program prints on stdout once it is where it must be stopped
        self.sig = sig        # the stopping signal, sent to the run's own process (culprit forwards it)
        self.hold = hold      # seconds between ready and the signal when nothing is wanted
        self.want = want      # predicate on a parsed report: signal once one is seen; None for none
        self.bound = bound    # seconds after ready to wait for want before signalling anyway
        self.grace = grace    # seconds the process has to end after the signal


COREDUMP_ENV = re.compile(r"^CUDA_(ENABLE_\w*COREDUMP\w*|COREDUMP_\w+)$")  # the driver's core dump settings


def clean_env(extra):
    """The caller's environment without culprit's (but CULPRIT_MARK: `CULPRIT_MARK=write run.sh` runs the whole
    suite with that breadcrumb), CUDA_LAUNCH_BLOCKING or the driver's core dump settings (a dump on exception
    aborts the program), plus the case's own."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("CULPRIT_") or k == "CULPRIT_MARK") and k != "CUDA_LAUNCH_BLOCKING" and
           not COREDUMP_ENV.match(k)}
    env.update(extra)
    return env


def descendants(pid):
    """The process ids below pid (children, their children, ...), read from /proc; [] where there is none."""
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, encoding="utf-8", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid):
    """SIGKILL to pid's process group and to every process below pid: torchrun starts each worker in a session
    of its own, so the group alone would leave them running."""
    below = descendants(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for p in [pid] + below:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


RUN_TOKEN = "GPU_CHECK_RUN"  # set in every run's environment, so that what a run left behind can be found
_run_counter = [0]


def sweep(token):
    """SIGKILL to every process whose environment holds RUN_TOKEN=token: whatever a run left behind once its own
    process ended (a torchrun worker whose launcher died, a program whose `culprit run` did not forward a
    signal), so that it cannot hold the GPU during later cases. Returns how many were found."""
    needle = ("%s=%s\0" % (RUN_TOKEN, token)).encode()
    found = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if needle not in f.read():
                    continue
            os.kill(int(name), signal.SIGKILL)
            found += 1
        except OSError:
            continue
    return found


def report_files(report_dir):
    """[(path, parsed JSON or an error string)] of the culprit-*.json files in report_dir, by name."""
    found = []
    if not report_dir or not os.path.isdir(report_dir):
        return found
    for name in sorted(os.listdir(report_dir)):
        if name.startswith("culprit-") and name.endswith(".json"):
            path = os.path.join(report_dir, name)
            try:
                with open(path, encoding="utf-8") as f:
                    found.append((path, json.load(f)))
            except (OSError, ValueError) as e:
                found.append((path, str(e)))
    return found


def _pump(stream, chunks):
    """Reads a pipe to its end into chunks (a reader thread of a Stop run)."""
    while True:
        try:
            data = os.read(stream.fileno(), 65536)
        except OSError:
            return
        if not data:
            return
        chunks.append(data)


def _note_left(run, left):
    if left:
        run.stop_note = (run.stop_note + "; " if run.stop_note else "") + \
            "%d process(es) it left behind were killed" % left


def _stopped_run(proc, run, stop, timeout, report_dir, token):
    """Waits for a Stop run: reads its output while it runs, keeps every new version of its report files, sends
    the stop signal when due and kills its tree at the bounds. Fills run.stdout, run.stderr and run.snapshots."""
    out, err = [], []
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)]
    for t in pumps:
        t.start()
    seen = set()
    start = time.monotonic()
    ready_at = sent_at = None
    while proc.poll() is None:
        now = time.monotonic()
        if now - start > timeout:
            kill_tree(proc.pid)
            run.timed_out = True
            break
        if sent_at is not None:
            if now - sent_at > stop.grace:
                kill_tree(proc.pid)
                run.timed_out = True
                run.stop_note = "still running %g s after %s" % (stop.grace, signal.Signals(stop.sig).name)
                break
        else:
            if ready_at is None and stop.ready in b"".join(out):
                ready_at = now
            for path, doc in report_files(report_dir):
                key = (path, json.dumps(doc, sort_keys=True))
                if isinstance(doc, dict) and key not in seen:
                    seen.add(key)
                    run.snapshots.append((path, doc))
            due = False
            if ready_at is not None:
                if stop.want is None:
                    due = now - ready_at >= stop.hold
                elif any(stop.want(doc) for _, doc in run.snapshots):
                    due = True
                elif now - ready_at >= stop.bound:
                    due = True
                    run.stop_note = "no wanted report within %g s" % stop.bound
            if due:
                try:
                    os.kill(proc.pid, stop.sig)
                    run.stopped = stop.sig
                except OSError:
                    pass
                sent_at = now
        time.sleep(0.1)
    proc.wait()
    _note_left(run, sweep(token))  # before the pumps are joined: what is left may hold the pipes open
    for t in pumps:
        t.join(timeout=10)
    run.stdout = b"".join(out)
    run.stderr = b"".join(err).decode("utf-8", "replace")


def execute(argv, env, timeout, report_dir=None, cwd=None, stop=None):
    """Runs argv in its own process group with a timeout; collects its output and any reports. With a Stop, the
    run is stopped by a signal as it says (the program would not end by itself)."""
    run = Run(argv=list(argv))
    _run_counter[0] += 1
    token = "%d.%d" % (os.getpid(), _run_counter[0])
    env = dict(env, **{RUN_TOKEN: token})
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, cwd=cwd)
    except OSError as e:
        run.rc, run.stderr = 127, "cannot start %s: %s\n" % (argv[0], e)
        return run
    run.pid = proc.pid
    if stop is not None:
        _stopped_run(proc, run, stop, timeout, report_dir, token)
    else:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            sweep(token)  # an orphan still holding the output pipes would keep communicate() waiting
            out, err = proc.communicate()
            run.timed_out = True
        run.stdout = out
        run.stderr = err.decode("utf-8", "replace")
    run.rc = proc.returncode
    _note_left(run, sweep(token))
    run.reports = report_files(report_dir)
    return run


def save_logs(logs, stem, run):
    with open(os.path.join(logs, stem + ".out"), "wb") as f:
        f.write(run.stdout)
    with open(os.path.join(logs, stem + ".err"), "w", encoding="utf-8") as f:
        f.write("$ %s\n" % " ".join(run.argv))
        f.write(run.stderr)
        f.write("\n[exit status %d%s%s%s]\n" % (
            run.rc, ", stopped by the harness with %s" % signal.Signals(run.stopped).name if run.stopped else "",
            ", timed out" if run.timed_out else "", "; " + run.stop_note if run.stop_note else ""))
    for i, (path, _) in enumerate(run.reports):
        suffix = "" if i == 0 else ".%d" % i
        shutil.copyfile(path, os.path.join(logs, stem + suffix + ".json"))


def fresh_dir(path):
    """An empty directory at path (culprit writes the run's reports there)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path
