#!/usr/bin/env python3
"""Scenario tests of a report directory others may write into, over the simulated CUDA driver: what culprit run
reads back from it (its reports, NCCL's logs, the GPU core dumps) is only what this run wrote, and nothing
planted there (a link, another user's file, a report carrying a run id read from /proc) is written through,
read, or shown as the run's verdict; the default report directory is not redirected by a planted link either.

Another user is played by files given to uid 65534 (nobody): CI runs as root, which may hand a file to another
user. Run as another user, those checks are skipped and said so; the others run all the same.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import glob
import json
import os
import re
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
FAULT4 = {"FAKECUDA_FAULT": "launch=4"}
NOBODY = 65534
GDB = os.path.join(HERE, "fake_cuda_gdb.py")
ROOT = os.geteuid() == 0


def shared_dir(b, label):
    """A directory everyone may write into, as a group's or a job's shared one often is."""
    d = b.newdir(label)
    os.chmod(d, 0o777)
    return d


def as_nobody(path):
    """Makes path (not followed) another user's, as if that user had put it there."""
    os.lchown(path, NOBODY, NOBODY)


def note_skipped(what):
    print("note: not run as root: %s is not checked (it needs a file of another user)" % what)


def wrapper(b, script, then):
    """argv running python script (with os, json, sys and socket imported) inside culprit run, then exec'ing
    `then` in the same process (so the pid the script sees is the program's)."""
    code = "import os, json, sys, socket\n%s\nsys.stdout.flush()\nos.execv(%r, %r)\n" % (script, then[0], list(then))
    return [sys.executable, "-c", code]


def only_report(rdir, res):
    """The one report in rdir (under --coredump a hang report, named so, that the dump made a fault)."""
    files = glob.glob(os.path.join(rdir, "culprit-*.json"))
    check(len(files) == 1, "expected one report, found %s\n%s" % (files, res.describe()))
    with open(files[0]) as f:
        return json.load(f)


def fault_report(b):
    """A real fault report of the simulated driver, as a template for forged ones."""
    rdir = b.newdir("template")
    res = h.cli_run(b, [b.prog("linked"), "legacy", "ctxsync", "5"], FAULT4, rdir)
    check(res.rc == 1, "the template run did not fault\n" + res.describe())
    rep = h.load_report(rdir)
    rep.pop("_path")
    rep["culprit"]["kernel"] = "forged_kernel(int)"
    rep["verdict"]["reason"] = "forged"
    return rep


@case("shared_forged_report")
def _(b):
    # A report planted in a shared --dir while the run went on, carrying the run id culprit used to make from
    # what /proc shows (host, pid, start time), was shown as the run's verdict and fired --error-exitcode. The
    # run id now holds 64 random bits only the run's own processes see; a report without it, a link, or another
    # user's file is not this run's.
    rep = fault_report(b)
    rdir = shared_dir(b, "shared")
    tmpl = os.path.join(b.newdir("forge"), "rep.json")
    with open(tmpl, "w") as f:
        json.dump(rep, f)
    elsewhere = os.path.join(b.newdir("elsewhere"), "culprit-1.json")
    script = r"""
rid = os.environ.get("CULPRIT_RUN_ID", "")
m = __import__("re").match(r"^(.*-\d+-\d+)-[0-9a-f]{16}$", rid)
public = m.group(1) if m else rid          # what anyone can read from /proc: host, pid, start time
rep = json.load(open(%(tmpl)r))
def plant(name, run_id, path=None):
    r = json.loads(json.dumps(rep))
    r["process"]["pid"] = 99000 + len(name)
    if run_id is None:
        r["process"].pop("run_id", None)
    else:
        r["process"]["run_id"] = run_id
    with open(path or os.path.join(%(rdir)r, name), "w") as f:
        json.dump(r, f)
plant("culprit-99001.json", public)
plant("culprit-99002.json", None)
plant("culprit-99003.json", rid)           # given to another user below (as root)
plant("x", rid, %(elsewhere)r)             # a file of the run's own user elsewhere, linked to
os.symlink(%(elsewhere)r, os.path.join(%(rdir)r, "culprit-99004.json"))
if os.geteuid() == 0:
    os.lchown(os.path.join(%(rdir)r, "culprit-99003.json"), %(nobody)d, %(nobody)d)
else:
    os.unlink(os.path.join(%(rdir)r, "culprit-99003.json"))
print("run id [%%s]" %% rid)
""" % {"tmpl": tmpl, "rdir": rdir, "elsewhere": elsewhere, "nobody": NOBODY}
    res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "healthy"]), None, rdir, ("--error-exitcode", "9"))
    m = re.search(r"run id \[(.*)\]", res.out_text)
    check(m and re.search(r"-\d+-\d+-[0-9a-f]{16}$", m.group(1)), "the run id holds no random part: %r\n%s" % (
        m and m.group(1), res.describe()))
    check("forged" not in res.err_text, "a planted report was shown as the run's verdict\n" + res.describe())
    check(res.rc == 0 and "no sticky CUDA error" in res.err_text,
          "a planted report decided the run's end (exit %s)\n%s" % (res.rc, res.describe()))
    text = h.joined(res.err_text)
    check("1 report(s) carry no run id of this culprit run" in text and "culprit-99002.json" in text,
          "the report without a run id is not said to be passed over\n" + res.describe())
    want = 2 if ROOT else 1
    check(("%d file(s) named like reports were not read (symbolic links, or files of another user" % want) in text,
          "the link (and another user's file) are not said to be passed over\n" + res.describe())
    if not ROOT:
        note_skipped("a report of another user carrying the run id")
    # two runs never share the random part
    res2 = h.cli_run(b, wrapper(b, 'print("run id [%s]" % os.environ.get("CULPRIT_RUN_ID"))',
                                [b.prog("linked"), "healthy"]), None, b.newdir("reports"))
    m2 = re.search(r"run id \[(.*)\]", res2.out_text)
    check(m2 and m2.group(1)[-16:] != m.group(1)[-16:], "two runs have one random part: %r, %r" % (
        m.group(1), m2 and m2.group(1)))


# An unprivileged user's process, as the program below plants: what can it learn of the run id, and what does a
# report forged with it do? It reads /proc for culprit's pid and start time (anyone may), tries the run's
# environment (the kernel refuses another user), and plants a report for each start second it may have been.
ATTACKER = r"""
import json, os, socket, sys
cpid, ppid = int(sys.argv[1]), int(sys.argv[2])
rep = json.loads(sys.stdin.read())
try:
    env = open("/proc/%d/environ" % ppid, "rb").read().split(b"\0")
    rid = [e[15:].decode() for e in env if e.startswith(b"CULPRIT_RUN_ID=")]
    print("the run id was read: %r" % rid)
except OSError:
    rid = []
host = "".join(c if c.isalnum() or c in ".-" else "_" for c in socket.gethostname()[:63]) or "host"
ticks = os.sysconf("SC_CLK_TCK")
start = int(open("/proc/%d/stat" % cpid).read().rsplit(")", 1)[1].split()[19]) // ticks
btime = [int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime")][0]
for n, t in enumerate(range(btime + start - 2, btime + start + 3)):
    for k, run_id in enumerate(rid + ["%s-%d-%d" % (host, cpid, t)]):
        rep["process"]["run_id"] = run_id
        with open(os.path.join(sys.argv[3], "culprit-%d.json" % (99100 + 10 * n + k)), "w") as f:
            json.dump(rep, f)
"""


@case("shared_forged_unprivileged")
def _(b):
    # The same forgery by a process of another user, as it would be on a shared machine: it sees culprit's pid and
    # start time in /proc, not the run's environment, and its reports are not shown as the run's verdict.
    setpriv = "/usr/bin/setpriv"
    if not ROOT or not os.access(setpriv, os.X_OK) or not os.access("/usr/bin/python3", os.X_OK):
        raise h.CaseSkipped("needs root, %s and /usr/bin/python3 to run a process as another user" % setpriv)
    rep = fault_report(b)
    os.chmod(b.work, 0o711)  # the other user reaches the shared directory, as under /tmp
    rdir = shared_dir(b, "shared")
    script = r"""
import subprocess
res = subprocess.run([%(setpriv)r, "--reuid=%(nobody)d", "--regid=%(nobody)d", "--clear-groups",
                      "/usr/bin/python3", "-c", %(attacker)r, str(os.getppid()), str(os.getpid()), %(rdir)r],
                     input=%(rep)r, text=True, capture_output=True, env={"PATH": "/usr/bin:/bin"})
print("attacker: %%d %%s %%s" %% (res.returncode, res.stdout, res.stderr))
""" % {"setpriv": setpriv, "nobody": NOBODY, "attacker": ATTACKER, "rdir": rdir, "rep": json.dumps(rep)}
    res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "healthy"]), None, rdir, ("--error-exitcode", "9"))
    check("attacker: 0 " in res.out_text and "the run id was read" not in res.out_text,
          "the other user's process did not run as it should\n" + res.describe())
    check(len(glob.glob(os.path.join(rdir, "culprit-991*.json"))) >= 5, "nothing was planted: %s" % os.listdir(rdir))
    check("forged" not in res.err_text, "another user's forged report was shown as the run's verdict\n" +
          res.describe())
    check(res.rc == 0 and "no sticky CUDA error" in res.err_text,
          "another user's report decided the run's end (exit %s)\n%s" % (res.rc, res.describe()))


@case("shared_nccl_log")
def _(b):
    # NCCL's log of a process is read back from the run directory into its report: a link planted under its name
    # in a shared directory put another file's lines into the report, and another user's file would be read as
    # NCCL's words. Only a regular file of the user's own is read.
    secret = os.path.join(b.newdir("secret"), "secret.txt")
    with open(secret, "w") as f:
        f.write("SECRET-LINE of another file\n")
    host = socket.gethostname().split(".")[0]
    for how in ("link", "other user"):
        if how == "other user" and not ROOT:
            note_skipped("an NCCL log of another user")
            continue
        rdir = shared_dir(b, "shared")
        script = r"""
name = os.path.join(%(rdir)r, "nccl-%(host)s-%%d.log" %% os.getpid())
if %(link)r:
    os.symlink(%(secret)r, name)
else:
    open(name, "w").write("SECRET-LINE of another user\n")
    os.lchown(name, %(nobody)d, %(nobody)d)
""" % {"rdir": rdir, "host": host, "secret": secret, "link": how == "link", "nobody": NOBODY}
        res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "legacy", "ctxsync", "5"]), FAULT4, rdir)
        check(res.rc == 1 and "the kernel that faulted: step" in res.err_text, "%s: no verdict\n%s" % (
            how, res.describe()))
        rep = h.load_report(rdir)
        check("SECRET-LINE" not in json.dumps(rep.get("nccl_log")), "%s: a planted NCCL log was read into the "
              "report: %r" % (how, rep.get("nccl_log")))
    # the user's own log is still read
    rdir = b.newdir("mine")
    script = r"""
open(os.path.join(%(rdir)r, "nccl-%(host)s-%%d.log" %% os.getpid()), "w").write("vm:1:1 [0] NCCL WARN mine\n")
""" % {"rdir": rdir, "host": host}
    h.cli_run(b, wrapper(b, script, [b.prog("linked"), "legacy", "ctxsync", "5"]), FAULT4, rdir)
    rep = h.load_report(rdir)
    check(rep.get("nccl_log") == ["vm:1:1 [0] NCCL WARN mine"], "the user's own NCCL log: %r" % rep.get("nccl_log"))


@case("shared_default_dir")
def _(b):
    # Without --dir the reports go to culprit-reports/ in the working directory: in one others write into (/tmp),
    # a culprit-reports link of another user's sent the run's reports where that user chose.
    prog = [b.prog("linked"), "legacy", "ctxsync", "5"]
    env = h._base_env(b, FAULT4)
    if ROOT:
        cwd, theirs = shared_dir(b, "cwd"), b.newdir("theirs")
        os.chmod(theirs, 0o777)
        as_nobody(theirs)
        os.symlink(theirs, os.path.join(cwd, "culprit-reports"))
        as_nobody(os.path.join(cwd, "culprit-reports"))
        res = h._execute(b, [b.cli, "run", "--"] + prog, env, cwd)
        check(res.rc == 2 and "culprit-reports in the current directory is not a directory of yours" in res.err_text,
              "a link of another user's was followed\n" + res.describe())
        check(os.listdir(theirs) == [], "something was written into the other user's directory: %s" %
              os.listdir(theirs))
        # a directory of another user's under that name, the same
        os.unlink(os.path.join(cwd, "culprit-reports"))
        os.mkdir(os.path.join(cwd, "culprit-reports"), 0o777)
        as_nobody(os.path.join(cwd, "culprit-reports"))
        res = h._execute(b, [b.cli, "run", "--"] + prog, env, cwd)
        check(res.rc == 2 and "not a directory of yours" in res.err_text and
              os.listdir(os.path.join(cwd, "culprit-reports")) == [],
              "another user's culprit-reports was written into\n" + res.describe())
    else:
        note_skipped("a culprit-reports link of another user")
    # the user's own link to a directory of theirs is still the place, and the run makes its own directory there
    cwd, mine = b.newdir("cwd"), b.newdir("mine")
    os.symlink(mine, os.path.join(cwd, "culprit-reports"))
    res = h._execute(b, [b.cli, "run", "--"] + prog, env, cwd)
    runs = os.listdir(mine)
    check(res.rc == 1 and len(runs) == 1 and runs[0].startswith("run-") and
          glob.glob(os.path.join(mine, runs[0], "culprit-*.json")),
          "the user's own culprit-reports link was not used: %s\n%s" % (runs, res.describe()))
    check(os.stat(os.path.join(mine, runs[0])).st_mode & 0o777 == 0o700, "the run's directory is not 0700")


@case("shared_coredump")
def _(b):
    # --coredump pointed the driver at DIR/gpucore-%h-%p.nvcudmp, with none of the checks reports get: a link
    # planted there had the dump written into another file (the simulated driver opens it O_CREAT|O_TRUNC), and
    # every gpucore-*.nvcudmp in the directory, old or planted, was given to the debugger. The driver now writes
    # into a directory culprit made for the run (0700, inside the run directory), and only this run's dumps, at
    # most COREDUMP_MAX_DUMPS, are read.
    env = {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0", "CULPRIT_CUDA_GDB": GDB,
           "FLAKY_STATE": os.path.join(b.newdir("state"), "runs")}
    rdir = shared_dir(b, "shared")
    victim = os.path.join(b.newdir("victim"), "precious")
    with open(victim, "w") as f:
        f.write("precious\n")
    planted = os.path.join(rdir, "gpucore-planted-1.nvcudmp")
    with open(planted, "wb") as f:
        f.write(b"not a dump\n")
    script = r"""
os.symlink(%(victim)r, os.path.join(%(rdir)r, "gpucore-%%s-%%d.nvcudmp" %% (socket.gethostname(), os.getpid())))
print("dump file [%%s]" %% os.environ.get("CUDA_COREDUMP_FILE"))
""" % {"victim": victim, "rdir": rdir}
    res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "flaky", "40"]), env, rdir, ("--coredump",))
    check(open(victim, "rb").read() == b"precious\n",
          "the dump was written through a planted link\n" + res.describe())
    m = re.search(r"dump file \[(.*)\]", res.out_text)
    core = os.path.dirname(m.group(1)) if m else ""
    check(m and os.path.dirname(core) == os.path.realpath(rdir) and os.path.basename(core).startswith(
        "coredumps-"), "the driver's dump file is not in a directory of the run's own: %r" % (m and m.group(1)))
    st = os.lstat(core)
    check(st.st_mode & 0o777 == 0o700 and st.st_uid == os.geteuid(), "the dump directory is mode %o, uid %d" % (
        st.st_mode & 0o777, st.st_uid))
    dumps = glob.glob(os.path.join(core, "gpucore-*.nvcudmp"))
    check(len(dumps) == 1, "no dump in the run's dump directory: %s" % os.listdir(core))
    rep = only_report(rdir, res)
    check((rep.get("coredump") or {}).get("file") == dumps[0], "the dump was not tied to the report: %r" %
          rep.get("coredump"))
    check(planted not in res.err_text and "gpucore-planted" not in res.err_text,
          "a planted dump was given to the debugger\n" + res.describe())

    # the run's own processes filling its dump directory: the debugger reads at most 16, the process's own first
    env["FLAKY_STATE"] = os.path.join(b.newdir("state"), "runs")
    rdir = b.newdir("reports")
    script = r"""
d = os.path.dirname(os.environ["CUDA_COREDUMP_FILE"])
for i in range(40):
    open(os.path.join(d, "gpucore-other-%d.nvcudmp" % (1000 + i)), "wb").write(b"not a dump\n")
"""
    res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "flaky", "40"]), env, rdir, ("--coredump",))
    rep = only_report(rdir, res)
    check((rep.get("coredump") or {}).get("exception") == "Warp Illegal Address",
          "the process's own dump was not read first: %r\n%s" % (rep.get("coredump"), res.describe()))
    read = set(re.findall(r"gpucore-other-(\d+)\.nvcudmp", res.err_text))
    check(len(read) == 15, "%d of the other dumps were given to the debugger, not 15\n%s" % (len(read),
                                                                                           res.describe()))
    check("25 more GPU core dump(s) in" in h.joined(res.err_text) and "culprit reads at most 16 of one run" in
          h.joined(res.err_text), "the dumps left unread are not counted\n" + res.describe())

    # a run without a dump leaves no dump directory behind
    rdir = b.newdir("reports")
    res = h.cli_run(b, [b.prog("linked"), "healthy"], None, rdir, ("--coredump",))
    check(res.rc == 0 and not glob.glob(os.path.join(rdir, "coredumps-*")),
          "an empty dump directory was left: %s" % os.listdir(rdir))


@case("shared_rerun_dir")
def _(b):
    # --rerun puts the rerun's reports (and, with --coredump, its dump directory) into rerun-PID below the run
    # directory: in a shared one, a rerun-PID made beforehand by another user was taken as it was.
    if not ROOT:
        raise h.CaseSkipped("not run as root: a directory of another user cannot be made here")
    env = {"FAKECUDA_FAULT": "kernel=write_oob", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0",
           "FLAKY_STATE": os.path.join(b.newdir("state"), "runs")}
    rdir = shared_dir(b, "shared")
    script = r"""
d = os.path.join(%(rdir)r, "rerun-%%d" %% os.getpid())
if not os.path.exists(d):
    os.mkdir(d)
    os.chmod(d, 0o777)
    os.lchown(d, %(nobody)d, %(nobody)d)
    print("planted [%%s]" %% d)
""" % {"rdir": rdir, "nobody": NOBODY}
    res = h.cli_run(b, wrapper(b, script, [b.prog("linked"), "flaky", "40"]), env, rdir, ("--rerun",))
    m = re.search(r"planted \[(.*)\]", res.out_text)
    check(m, "nothing planted\n" + res.describe())
    check(os.listdir(m.group(1)) == [], "the rerun wrote into another user's directory: %s" % os.listdir(m.group(1)))
    check("is already there and not a private directory of yours: no rerun" in h.joined(res.err_text),
          "the refused rerun directory is not said\n" + res.describe())


if __name__ == "__main__":
    sys.exit(h.main())
