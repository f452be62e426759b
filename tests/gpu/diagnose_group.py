"""The diagnose group of the GPU suite: PyTorch faults run once under `culprit run --diagnose`, whose report and
printed verdict must name the operator behind the fault and what was wrong with its arguments (the bad tensor
and its value), and a healthy training loop whose output must not change under the diagnosis (and whose
torch.compile'd function must still be compiled). check.py runs these cases and adds them to its table.

Each fault case gives a regular expression the operator's problem must match (it is looked for in the op of the
culprit, of the candidates, and in the report's "diagnosis" list) and that the printed verdict must show (line
breaks of the wrapped text removed); the compiled case asks instead for a "compiled graph" operator whose
inputs show the bad id.
"""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
FRAMEWORKS = os.path.join(HERE, "frameworks")
SCRIPTS = os.path.join(HERE, "diagnose")


class DiagCase:
    group = "diagnose"

    def __init__(self, name, script, kernel=None, problem=None, op=None, args=None, kind="fault", env=None,
                 modules=("torch",), note=""):
        self.name = name
        self.script = script        # path under tests/gpu
        self.kernel = kernel        # an exact culprit's kernel must match this
        self.problem = problem      # the operator problem the report and the verdict must hold
        self.op = op                # or: an operator name that must be behind the culprit or a candidate...
        self.args = args            # ...whose argument summary matches this
        self.kind = kind            # fault | healthy
        self.env = dict(env or {})
        self.modules = tuple(modules)
        self.note = note
        self.healthy = kind == "healthy"
        self.mode = None


DIAG_CASES = [
    DiagCase("diag_xent3d", "frameworks/xent_seg3d.py", r"nll_loss",
             r"^target int64\[[\d,]+\] cuda:\d.* holds \d+, but input \S+ cuda:\d.* has \d+ classes",
             note="--diagnose: the seed's 3D cross-entropy label case names the target and the class count"),
    DiagCase("diag_embedding", "frameworks/embedding_oob.py", r"indexSelect|vectorized_gather|embedding",
             r"^indices? int64\[[\d,]+\] cuda:\d.* holds \d+, but (weight|self) \S+ cuda:\d.* has \d+ (rows|entries)",
             note="--diagnose: an embedding id past the table"),
    DiagCase("diag_gather", "frameworks/gather_oob.py", r"gather",
             r"^index int64\[32,5\] cuda:\d holds 50, but self float32\[32,50\] cuda:\d has 50 entries along dim 1",
             note="--diagnose: a gather position out of range"),
    DiagCase("diag_scatter_bf16", "diagnose/scatter_add_bf16.py", r"scatter",
             r"^index int64\[256,64\] cuda:\d.* holds 8, but self bfloat16\[8,64\] cuda:\d has 8 entries along dim 0",
             note="--diagnose: scatter_add_ under bf16 autocast, a routing index == experts"),
    DiagCase("diag_compiled", "diagnose/compiled_embedding.py", r"triton|poi|fused|index",
             op=r"^compiled graph", args=r"int64\[64,16\] cuda:\d \[\d+, 1007\]",
             note="--diagnose on torch.compile'd code: the compiled graph and its inputs (the bad id) are named"),
    DiagCase("diag_healthy", "diagnose/healthy_train.py", kind="healthy",
             env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
             note="--diagnose changes no output of a healthy loop; torch.compile still compiles"),
]
DIAG_CASE_BY_NAME = {c.name: c for c in DIAG_CASES}


def verdict_text(stderr):
    """The printed verdict as one line per paragraph: "culprit: " prefixes gone, wrapped lines joined."""
    out, cur = [], ""
    for line in stderr.splitlines():
        if not line.startswith("culprit:"):
            continue
        body = line[len("culprit:"):]
        if body.startswith("    ") and cur:          # a wrapped continuation
            cur += " " + body.strip()
            continue
        if cur:
            out.append(cur)
        cur = body.strip()
    if cur:
        out.append(cur)
    return out


def ops_of(report):
    """(where, op) for every operator the report names: the culprit's, the candidates', the diagnosis list."""
    found = []
    c = report.get("culprit")
    if isinstance(c, dict) and c.get("op"):
        found.append(("culprit", c["op"]))
    for k in report.get("candidates") or []:
        if k.get("op"):
            found.append(("candidate #%s" % k.get("seq"), k["op"]))
    for d in report.get("diagnosis") or []:
        found.append(("diagnosis", d))
    return found


WORDS = {"run": "culprit run --diagnose", "under": "under --diagnose", "stdout_under": "under --diagnose",
         "label": "diagnose"}


def compiled_check(o, run):
    if b"compiled yes" not in run.stdout:
        o.fail("the torch.compile'd function was not compiled under --diagnose")


def judge(h, case, base, run):
    o, done = h.judge_script_start(case, base, run, WORDS, compiled_check)
    if done:
        return o
    if base.rc == 0:
        o.fail("the script did not fail without culprit (exit status 0)")
    if run.rc == 0:
        o.fail("the script did not fail under culprit run --diagnose: the diagnosis must not change its fate")
    faults = [(p, r) for p, r in run.reports if isinstance(r, dict) and r.get("kind") == "fault"]
    if len(faults) != 1:
        o.fail("%d fault report(s), want 1" % len(faults))
        return o
    report = faults[0][1]
    verdict = report.get("verdict") or {}
    o.certainty = verdict.get("certainty", "-")
    culprit = report.get("culprit") if isinstance(report.get("culprit"), dict) else None
    o.named = (culprit or {}).get("kernel", "-")[:60] if culprit else "candidates"
    err = report.get("error") or {}
    o.surfaced = "%s %s" % (err.get("api", "?"), err.get("code", "?"))
    if culprit and case.kernel and not re.search(case.kernel, culprit.get("kernel", "")):
        o.fail("the culprit %r does not match %r" % (culprit.get("kernel"), case.kernel))
    ops = ops_of(report)
    text = verdict_text(run.stderr)
    # an ATen operator behind the culprit gives the library its CUDA tensors (op.buffers), by which a faulting
    # address or argument is named; a compiled graph's note carries none
    cop = (culprit or {}).get("op") or {}
    if (cop.get("name") or "").startswith("aten::"):
        bufs = cop.get("buffers") or []
        if not bufs:
            o.fail("the culprit's operator %s gave no buffers (op.buffers)" % cop.get("name"))
        else:
            o.notes.append("%s's buffers: %s" % (cop.get("name"), "; ".join(
                "%s, %s bytes at %s" % (b.get("label"), b.get("size"), b.get("base")) for b in bufs)))
    if case.problem:
        hits = [(w, op) for w, op in ops if re.search(case.problem, op.get("problem") or "")]
        if not hits:
            o.fail("no operator problem matches %r; the report's operators: %s" % (
                case.problem, "; ".join("%s %s: %s" % (w, op.get("name"), op.get("problem") or "-")
                                        for w, op in ops) or "none"))
        else:
            o.notes.append("%s: %s: %s" % (hits[0][0], hits[0][1].get("name"), hits[0][1].get("problem")))
        shown = [l for l in text if re.search(case.problem.lstrip("^"), l)]
        if not shown:
            o.fail("the printed verdict does not show the operator's problem (%r)" % case.problem)
    if case.op:
        named = [(w, op) for w, op in ops if w != "diagnosis" and re.search(case.op, op.get("name") or "")]
        if not named:
            o.fail("no launch the verdict names belongs to an operator matching %r (operators: %s)" % (
                case.op, ", ".join(op.get("name", "?") for _, op in ops) or "none"))
        elif case.args and not any(re.search(case.args, op.get("args") or "") for _, op in named):
            o.fail("the operator's arguments do not match %r: %s" % (case.args, named[0][1].get("args")))
        else:
            o.notes.append("%s: %s(%s)" % (named[0][0], named[0][1].get("name"), named[0][1].get("args")))
        if not any(re.search(r"operator: " + case.op.lstrip("^"), l) for l in text):
            o.fail("the printed verdict does not name the operator %r" % case.op)
    return o


def suite(h, args, cases, culprit, logs, deadline, done, total):
    """Runs each case once without culprit and once under `culprit run --diagnose`; h is check.py's namespace
    (execute, save_logs, fresh_dir, clean_env, not_runnable, Outcome, said)."""
    outcomes = []
    for case in cases:
        print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name, "python"), end=" ",
              flush=True)
        o = h.Outcome(case, "python")
        if not h.not_runnable(o, args, args.python, case.modules, deadline):
            script = os.path.join(HERE, case.script)
            env = h.clean_env(case.env)
            work = h.fresh_dir(os.path.join(logs, "work", case.name))
            base = h.execute([args.python, script], env, args.timeout, cwd=work)
            h.save_logs(logs, case.name + ".plain", base)
            report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name))
            mode = ["--mode", args.mode] if args.mode else []
            cmd = [culprit, "run", "--dir", report_dir] + mode + ["--diagnose", "--", args.python, script]
            run = h.execute(cmd, env, args.timeout * 2, report_dir, cwd=work)
            h.save_logs(logs, case.name + ".culprit", run)
            o = judge(h, case, base, run)
        outcomes.append(o)
        print(h.said(o))
    return outcomes
