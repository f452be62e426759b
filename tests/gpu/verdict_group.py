"""The verdict group of the GPU suite: the verdict where users already look. A PyTorch fault's exception text must
name the culprit kernel and the line that launched it (the line culprit adds to CUDA's error text): under plain
`culprit run -- python`, in a multiprocessing pool's exception re-raised in the parent, and in torchrun's "Root
Cause (first observed failure)" summary, with and without torch's @record; a healthy program's output must not
change. Each case runs once without culprit (whose text must not have the line) and once under `culprit run`.
check.py runs these cases and adds them to its table.
"""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "verdict")

DOC_710 = "device-side assert triggered"  # the runtime's text; PyTorch prefixes "CUDA error: "
# the line culprit adds (aftermath/errtext.c), as the exception shows it
EXC_LINE = re.compile(r"culprit: (?:the kernel that faulted: (?P<k>.+?), launched at (?P<site>\S+)|"
                      r"one of \d+ candidate launches faulted \(the first: (?P<k2>.+?), launched at (?P<site2>\S+)\))"
                      r"; report: (?P<path>\S+)$")
ROOT_CAUSE = "Root Cause (first observed failure)"


class VerdictCase:
    group = "verdict"
    healthy = False

    def __init__(self, name, script, how, args=(), kernel=r"nll_loss", note=""):
        self.name = name
        self.script = script        # file in tests/gpu/verdict
        self.how = how              # python | pool | torchrun | healthy
        self.args = list(args)      # the script's arguments
        self.kernel = kernel        # the kernel the line must name
        self.modules = ("torch",)
        self.note = note
        self.healthy = how == "healthy"
        self.mode = None


VERDICT_CASES = [
    VerdictCase("exc_python", "rank_fault.py", "python",
                note="the exception's text names the culprit kernel and launch line (python, record mode)"),
    VerdictCase("exc_pool", "pool_fault.py", "pool",
                note="a multiprocessing pool's exception re-raised in the parent names the culprit"),
    VerdictCase("exc_torchrun", "rank_fault.py", "torchrun",
                note="torchrun's Root Cause names the culprit; the worker has no @record (culprit's error file)"),
    VerdictCase("exc_torchrun_record", "rank_fault.py", "torchrun", args=["--record"],
                note="torchrun's Root Cause names the culprit; the worker's @record wrote the exception"),
    VerdictCase("exc_healthy", "healthy.py", "healthy", note="a healthy program's output is unchanged"),
]
VERDICT_CASE_BY_NAME = {c.name: c for c in VERDICT_CASES}


def marker_line(script):
    with open(os.path.join(SCRIPTS, script)) as f:
        for i, line in enumerate(f, 1):
            if "CULPRIT-LAUNCH" in line:
                return i
    return None


def exception_lines(text):
    """The culprit lines that follow the documented text in an exception (torchrun indents its summary)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines[:-1]):
        if line.rstrip().endswith(DOC_710):
            m = EXC_LINE.match(lines[i + 1].strip())
            if m:
                found.append(m)
    return found


def judge_line(o, case, m, run):
    kernel = m.group("k") or m.group("k2")
    site = m.group("site") or m.group("site2")
    o.named = kernel[:60]
    o.certainty = "exact" if m.group("k") else "candidates"
    o.line = site
    want = "%s:%s" % (case.script, marker_line(case.script))
    if not re.search(case.kernel, kernel):
        o.fail("the exception names %r, not a kernel matching %r" % (kernel, case.kernel))
    if site != want:
        o.fail("the exception says launched at %s, want %s" % (site, want))
    if m.group("path") not in [p for p, _ in run.reports]:
        o.fail("the exception's report %s is not among the run's reports" % m.group("path"))


WORDS = {"run": "culprit run", "under": "under it", "stdout_under": "under culprit", "label": "culprit"}


def judge(h, case, base, run):
    o, done = h.judge_script_start(case, base, run, WORDS)
    if done:
        return o
    if base.rc == 0 or run.rc == 0 or base.rc != run.rc:
        o.fail("exit status %d without culprit, %d under it (both must fail alike)" % (base.rc, run.rc))
    plain_text = base.stdout.decode("utf-8", "replace") + base.stderr
    if DOC_710 not in plain_text:
        o.fail("without culprit the fault did not show PyTorch's %r" % DOC_710)
    if exception_lines(plain_text):
        o.fail("without culprit the exception already has a culprit line")
    out = run.stdout.decode("utf-8", "replace")
    if case.how == "pool":
        where = out[out.find("REMOTE "):] if "REMOTE " in out else ""
        what = "the parent's re-raised exception"
    elif case.how == "torchrun":
        where = run.stderr[run.stderr.find(ROOT_CAUSE):] if ROOT_CAUSE in run.stderr else ""
        what = "torchrun's Root Cause summary"
        if where and "error_file: <N/A>" in where:
            o.fail("the Root Cause has no error file (error_file: <N/A>)")
    else:
        where = run.stderr
        what = "the exception's text"
    if not where:
        o.fail("%s was not printed" % what)
        return o
    found = exception_lines(where)
    if not found:
        o.fail("%s has no culprit line after %r" % (what, DOC_710))
        return o
    judge_line(o, case, found[0], run)
    return o


def command(h, args, case, culprit=None, report_dir=None):
    script = os.path.join(SCRIPTS, case.script)
    if case.how == "torchrun":
        import jobs_group
        cmd = jobs_group.torchrun_cmd(args.python) + ["--standalone", "--nproc-per-node", "1", script] + case.args
    else:
        cmd = [args.python, script] + case.args
    if culprit:
        mode = ["--mode", args.mode] if args.mode else []
        cmd = [culprit, "run", "--dir", report_dir] + mode + ["--"] + cmd
    return cmd


def suite(h, args, cases, culprit, logs, deadline, done, total):
    """Runs each case once without culprit and once under `culprit run`; h is check.py's namespace (execute,
    save_logs, fresh_dir, clean_env, not_runnable, Outcome, said)."""
    outcomes = []
    for case in cases:
        print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name, "python"), end=" ",
              flush=True)
        o = h.Outcome(case, "python")
        if not h.not_runnable(o, args, args.python, case.modules, deadline):
            env = {k: v for k, v in h.clean_env({}).items()
                   if not re.match(r"^(RANK|LOCAL_RANK|WORLD_SIZE|TORCHELASTIC_\w+|MASTER_\w+)$", k)}
            work = h.fresh_dir(os.path.join(logs, "work", case.name))
            base = h.execute(command(h, args, case), env, args.timeout * 2, cwd=work)
            h.save_logs(logs, case.name + ".plain", base)
            report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name))
            run = h.execute(command(h, args, case, culprit, report_dir), env, args.timeout * 2, report_dir,
                            cwd=work)
            h.save_logs(logs, case.name + ".culprit", run)
            o = judge(h, case, base, run)
        outcomes.append(o)
        print(h.said(o))
    return outcomes
