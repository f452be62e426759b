"""A culprit report told in a few lines, for Python programs: the kernel that faulted, its launch number, the Python
line that launched it, where the error surfaced, the device assert, the operator and its problem, the report's path.

It is what culprit.lightning attaches to the exception Lightning re-raises, and what any program can print from
culprit.last_report(). It is not the full verdict of `culprit run` and `culprit report` (src/render/render.c, with
every candidate, the history and the native stacks); it follows the same rules where both show a thing (which
Python frame is the user's, which device assert belongs to the kernel). Standard library only, no culprit library
needed:

    import culprit, culprit.verdict
    try:
        loss.item()
    except RuntimeError:
        report = culprit.last_report()
        if report:
            print(culprit.verdict.summary(report, path=culprit.last_report_path()))
        raise
"""

import shlex

__all__ = ["summary", "kernel_name", "launch_site"]

PREFIX = "culprit: "
NAME_WIDTH = 160    # kernel names longer than this lose their parameter list, then their middle
TEXT_WIDTH = 300    # an operator's arguments, a reason: cut beyond this
MAX_LISTED = 6      # candidates listed by name; the others are counted
STOP_TRIGGERS = ("SIGINT", "SIGTERM", "SIGQUIT", "SIGABRT")  # hang reports written as the process was stopped


# ---- pieces of a report ----------------------------------------------------------------------------------------


def _dict(x):
    return x if isinstance(x, dict) else {}


def _list(x):
    return [i for i in x if isinstance(i, dict)] if isinstance(x, list) else []


def _int(x):
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _cut(text, width):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _elide(name, width=NAME_WIDTH):
    """A long C++ name made readable: its parameter list becomes (...), then its middle is cut, so its start and
    its end stay."""
    if len(name) <= width:
        return name
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            if name[i] == ")":
                depth += 1
            elif name[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:
                        name = name[:i] + "(...)"
                    break
    if len(name) <= width:
        return name
    keep = width - 3
    return name[:keep - keep // 3] + "..." + name[len(name) - keep // 3:]


def _opener(s, end, open_, close):
    """Index of the bracket opening the group that closes at s[end - 1], or -1."""
    depth = 0
    for i in range(end - 1, -1, -1):
        if s[i] == close:
            depth += 1
        elif s[i] == open_:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _base_name(name):
    """The bare identifier of a kernel name, as src/base/demangle.c's demangle_base_name finds it: `k` in both
    `void k(const int *, int, int)` and `ns::k<float>(int const*, int)`."""
    s = name.rstrip()
    end = len(s)
    if end and s[end - 1] == "]":
        o = _opener(s, end, "[", "]")
        if o > 0:
            end = len(s[:o].rstrip())
    if end and s[end - 1] == ")":
        o = _opener(s, end, "(", ")")
        if o > 0:
            end = o
    end = len(s[:end].rstrip())
    if end and s[end - 1] == ">":
        o = _opener(s, end, "<", ">")
        if o > 0:
            end = o
    i = end
    while i > 0 and s[i - 1] not in " :*&":
        i -= 1
    return s[i:end]


def kernel_name(launch):
    """The launch's kernel as the report names it (demangled where the library could), shortened when long."""
    launch = _dict(launch)
    k, m = launch.get("kernel"), launch.get("mangled")
    if isinstance(k, str) and k:
        return _elide(k)
    if isinstance(m, str) and m:
        return _elide(m)
    return "(CUDA graph)" if launch.get("kind") == "graph" else "(unnamed kernel)"


def _is_lib_pyframe(frame):
    """A frame of an installed package or the standard library rather than of the user's program: the rule of
    src/render/render_parts.c (render_is_lib_pyframe), held to it by tests/unit/libframes_check.py."""
    f = frame.get("file")
    return (not isinstance(f, str) or "/site-packages/" in f or "/dist-packages/" in f or "/lib/python3" in f
            or f.startswith("<frozen") or f.endswith("/culprit/diagnose.py"))


def _user_pyframe(frames):
    frames = _list(frames)
    for f in frames:
        if not _is_lib_pyframe(f):
            return f
    return frames[0] if frames else None


def _pyframe_text(f):
    line = _int(f.get("line"))
    fn = f.get("function") or "?"
    return "%s:%d in %s" % (f.get("file") or "?", line, fn) if line else "%s in %s" % (f.get("file") or "?", fn)


_LIB_MODULES = ("libcuda.so", "libcudart.so", "libcudart_static", "libculprit.so", "libnvidia-", "libc.so", "libc-",
                "libpthread.so", "libpthread-", "libdl.so", "ld-linux", "ld64.so", "libgcc_s.so", "libpython",
                "python3", "libffi.so", "_ctypes.")


def _is_lib_frame(frame):
    """A native frame inside the CUDA runtime or driver, culprit, the C runtime or the interpreter: the rule of
    src/render/render_parts.c (render_is_lib_frame), held to it by tests/unit/libframes_check.py."""
    mod = frame.get("module")
    if isinstance(mod, str) and mod.rsplit("/", 1)[-1].startswith(_LIB_MODULES):
        return True
    fn, f = frame.get("function"), frame.get("file")
    if isinstance(fn, str) and fn.startswith(("libcudart_static_", "__device_stub__", "cudart::")):
        return True  # the CUDA runtime linked into the program, and nvcc's launch stubs
    if isinstance(fn, str) and not isinstance(f, str) and fn[:4] == "cuda" and "A" <= fn[4:5] <= "Z":
        return True
    return isinstance(f, str) and ("/include/crt/" in f or f.endswith(("/cuda_runtime.h", "/cuda_runtime_api.h",
                                                                        ".stub.c")))


def _native_text(f):
    fn = f.get("function")
    line = _int(f.get("line"))
    where = ("%s:%d" % (f["file"], line) if line else f["file"]) if isinstance(f.get("file"), str) else None
    if fn and where:
        return "%s at %s" % (fn, where)
    if fn or where:
        return fn or where
    return "%s+%s" % (f.get("module") or "?", f.get("offset") or f.get("pc") or "?")


def _user_native_frame(obj):
    stack = _list(_dict(obj).get("stack"))
    kernel = _dict(obj).get("kernel")
    for i, f in enumerate(stack):
        if _is_lib_frame(f) or (kernel and f.get("function") == kernel and i + 1 < len(stack)):
            continue
        return f
    return None


def launch_site(obj):
    """Where a launch (or the error object) came from: the user's innermost Python frame as "file:line in function",
    else the first native frame outside CUDA, culprit and the C runtime; None when the report has neither."""
    obj = _dict(obj)
    f = _user_pyframe(obj.get("python"))
    if f:
        return _pyframe_text(f)
    f = _user_native_frame(obj)
    return _native_text(f) if f else None


def _error_text(err):
    err = _dict(err)
    name, code, msg = err.get("name"), _int(err.get("code")), err.get("message")
    if name and code is not None:
        head = "%s (%d)" % (name, code)
    elif name or code is not None:
        head = name or "CUDA error %d" % code
    else:
        head = "a sticky CUDA error"
    return "%s: %s" % (head, msg) if msg else head


def _surfaced(err):
    """The error and where it surfaced: "CUDA_ERROR_ASSERT (710): device-side assert triggered; it surfaced in
    cuMemcpyDtoHAsync_v2 at x.py:33 in main"."""
    err = _dict(err)
    text = _error_text(err)
    api, where = err.get("api"), launch_site(err)
    if api == "exit":
        return text + "; culprit found it as the process exited"
    if api and where:
        return "%s; it surfaced in %s at %s" % (text, api, where)
    if api or where:
        return "%s; it surfaced %s" % (text, "in " + api if api else "at " + where)
    return text


def _dims(v):
    return "[%s]" % ",".join(str(x) for x in v) if isinstance(v, list) and v else None


def _assert_text(report, launch):
    """The first device assert of the report that names the launch's kernel (by bare name, as render.c matches)."""
    want = _base_name(str(_dict(launch).get("kernel") or _dict(launch).get("mangled") or ""))
    if not want:
        return None
    for a in _list(report.get("device_asserts")):
        k = a.get("kernel")
        if not isinstance(k, str) or _base_name(k) != want:
            continue
        line = _int(a.get("line"))
        text = "device assert: `%s` failed at %s%s" % (a.get("assertion") or "?", a.get("file") or "?",
                                                       ":%d" % line if line is not None else "")
        for key in ("block", "thread"):
            d = _dims(a.get(key))
            if d:
                text += ", %s %s" % (key, d)
        return text
    return None


def _op_lines(launch, indent="  "):
    """The operator behind a launch ("op": name, arguments, what broke its contract), as render_op.c shows it."""
    op = _dict(_dict(launch).get("op"))
    if not op.get("name"):
        return []
    args = op.get("args")
    lines = ["%soperator: %s" % (indent, _cut("%s(%s)" % (op["name"], args) if args else op["name"], TEXT_WIDTH))]
    if op.get("problem"):
        lines.append("%swhat was wrong: %s" % (indent, _cut(op["problem"], TEXT_WIDTH)))
    return lines


def _holds(d, seq):
    """Whether entry d of the report's "diagnosis" covers launch seq (last null: the operator was still running)."""
    first, last = _int(d.get("first")), _int(d.get("last"))
    return first is not None and seq is not None and seq >= first and (last is None or seq <= last)


def _diagnosis_lines(report, culprit, cands):
    """The operators whose arguments the diagnosis found wrong, as render_op.c's render_diagnosis says them: the
    one already shown with the culprit left out, one that holds a candidate pointed at."""
    lines = []
    for d in _list(report.get("diagnosis")):
        name, problem = d.get("name"), d.get("problem")
        if not name or not problem:
            continue
        if isinstance(culprit, dict) and _dict(culprit.get("op")).get("problem") == problem and \
                _holds(d, _int(culprit.get("seq"))):
            continue
        cand = next((s for s in (_int(c.get("seq")) for c in cands) if _holds(d, s)), None)
        if cand is not None:
            lines.append("  the diagnosis points at launch #%d: it belongs to %s, whose arguments broke its contract, "
                         "so it is the likely culprit" % (cand, name))
            continue
        first, last = _int(d.get("first")), _int(d.get("last"))
        if first is None:
            span = "no launch number"
        elif last is None:
            span = "launches from #%d" % first
        elif last < first:
            span = "no launch"
        elif last == first:
            span = "launch #%d" % first
        else:
            span = "launches #%d..#%d" % (first, last)
        lines.append("  the diagnosis found %s (%s): %s" % (name, span, _cut(problem, TEXT_WIDTH)))
    return lines


def _launch_line(launch):
    """ "launch #102 via cuLaunchKernel, grid [4,1,1] block [128,1,1], stream 0x0" """
    seq = _int(launch.get("seq"))
    parts = ["launch #%d" % seq if seq is not None else "launch"]
    if launch.get("api"):
        parts[0] += " via %s" % launch["api"]
    g, b = _dims(launch.get("grid")), _dims(launch.get("block"))
    if g and b:
        parts.append("grid %s block %s" % (g, b))
    if launch.get("stream"):
        parts.append("stream %s" % launch["stream"])
    return ", ".join(parts)


def _unsafe(ch):
    """Whether a terminal would obey ch rather than show it: C0 and C1 controls, DEL, the bidirectional overrides
    and isolates, and lone surrogates (a string read from JSON may hold them). The same set as src/render's."""
    o = ord(ch)
    return (o < 0x20 or 0x7f <= o <= 0x9f or o in (0x061c, 0x200e, 0x200f) or 0x202a <= o <= 0x202e or
            0x2066 <= o <= 0x2069 or 0xd800 <= o <= 0xdfff)


def _safe(text):
    """text fit for a terminal: what _unsafe refuses is shown as an escape (\\n, \\x1b, \\u202e)."""
    if not any(_unsafe(c) for c in text):
        return text
    out = []
    for c in text:
        if not _unsafe(c):
            out.append(c)
        elif c in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[c])
        elif ord(c) < 0x80:
            out.append("\\x%02x" % ord(c))
        else:
            out.append("\\u%04x" % ord(c))
    return "".join(out)


def _shell_word(a):
    """a as a shell reads it back: shlex's quoting, or bash's $'...' with escapes when a holds what a terminal
    must not get raw (a newline, an escape sequence)."""
    if not any(_unsafe(c) for c in a):
        return shlex.quote(a)
    out = []
    for c in a:
        if c in "'\\":
            out.append("\\" + c)
        elif c in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[c])
        elif _unsafe(c) or ord(c) >= 0x80:
            out.extend("\\x%02x" % b for b in c.encode("utf-8", "surrogatepass"))
        else:
            out.append(c)
    return "$'%s'" % "".join(out)


def _argv(report):
    argv = _dict(report.get("process")).get("argv")
    if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
        return " ".join(_shell_word(a) for a in argv)
    return "CMD..."


# ---- the summary -----------------------------------------------------------------------------------------------


def _who(report, rank):
    if rank is None:
        rank = _int(_dict(report.get("process")).get("rank"))
    return "rank %s: " % rank if rank is not None else ""


def _culprit_lines(report, culprit, who):
    lines = ["%sthe kernel that faulted: %s" % (who, kernel_name(culprit)), "  " + _launch_line(culprit)]
    where = launch_site(culprit)
    if where:
        lines.append("  launched from %s" % where)
    node = culprit.get("node")
    if culprit.get("kind") == "graph" and isinstance(node, dict):
        at = launch_site(node)
        lines.append("  the graph's node that faulted: %s (launch #%s)%s" % (
            kernel_name(node), node.get("seq", "?"), ", captured at %s" % at if at else ""))
    lines.append("  " + _surfaced(report.get("error")))
    a = (_assert_text(report, node) if isinstance(node, dict) else None) or _assert_text(report, culprit)
    if a:
        lines.append("  " + a)
    lines += _op_lines(culprit)
    lines += _diagnosis_lines(report, culprit, [])
    reason = _dict(report.get("verdict")).get("reason")
    if reason:
        lines.append("  how culprit knows: %s" % _cut(reason, TEXT_WIDTH))
    return lines


def _candidate_lines(report, cands, who):
    verdict = _dict(report.get("verdict"))
    seqs = [s for s in (_int(c.get("seq")) for c in cands) if s is not None]
    win = _dict(verdict.get("window"))
    lo = _int(win.get("first")) if _int(win.get("first")) is not None else (min(seqs) if seqs else None)
    hi = _int(win.get("last")) if _int(win.get("last")) is not None else (max(seqs) if seqs else None)
    span = " (#%d..#%d)" % (lo, hi) if lo is not None and hi is not None else ""
    lines = ["%sone of %d candidate launch%s%s faulted; culprit could not tell which:" % (
        who, len(cands), "" if len(cands) == 1 else "es", span)]
    for c in cands[:MAX_LISTED]:
        seq = _int(c.get("seq"))
        where = launch_site(c)
        lines.append("  #%s %s%s" % (seq if seq is not None else "?", kernel_name(c),
                                     ", launched from %s" % where if where else ""))
        if _dict(c.get("op")).get("problem"):
            lines += _op_lines(c, "    ")
    if len(cands) > MAX_LISTED:
        lines.append("  (%d more in the report)" % (len(cands) - MAX_LISTED))
    lines.append("  " + _surfaced(report.get("error")))
    lines += _diagnosis_lines(report, None, cands)
    if verdict.get("reason"):
        lines.append("  why: %s" % _cut(verdict["reason"], TEXT_WIDTH))
    if lo is not None and hi is not None:
        lines.append("  to pin it, run it again with blocking launches there: culprit run --mode blocking "
                     "--launches %d:%d -- %s" % (lo, hi, _argv(report)))
    return lines


def _fault_lines(report, who):
    verdict = _dict(report.get("verdict"))
    culprit = report.get("culprit")
    cands = _list(report.get("candidates"))
    if isinstance(culprit, dict):
        return _culprit_lines(report, culprit, who)
    if cands or verdict.get("certainty") == "candidates":
        return _candidate_lines(report, cands, who)
    lines = ["%sculprit could not name the kernel that faulted: %s" % (
        who, _cut(verdict.get("reason") or "the report gives no reason", TEXT_WIDTH))]
    lines.append("  " + _surfaced(report.get("error")))
    return lines + _diagnosis_lines(report, None, [])


def _hang_lines(report, who):
    hang = _dict(report.get("hang"))
    trigger = hang.get("trigger") or "?"
    verdict = _dict(report.get("verdict"))
    culprit = report.get("culprit")
    cands = _list(report.get("candidates"))
    if trigger == "timeout" and hang.get("timeout_s"):
        trigger = "no progress for %s s" % hang["timeout_s"]
    head = "%shang report (%s)" % (who, trigger)
    if isinstance(culprit, dict):
        lines = ["%s: the launch in flight: %s" % (head, kernel_name(culprit)), "  " + _launch_line(culprit)]
        where = launch_site(culprit)
        if where:
            lines.append("  launched from %s" % where)
        return lines + _op_lines(culprit)
    if cands:
        seqs = [s for s in (_int(c.get("seq")) for c in cands) if s is not None]
        span = " (#%d..#%d)" % (min(seqs), max(seqs)) if seqs else ""
        return ["%s: one of %d launch%s%s was in flight" % (head, len(cands), "" if len(cands) == 1 else "es", span)]
    if verdict.get("certainty") == "idle":
        return ["%s: no launch was unfinished; the report says where each thread waited" % head]
    return ["%s: the launch in flight is not known: %s" % (head, _cut(verdict.get("reason") or "no reason given",
                                                                        TEXT_WIDTH))]


def summary(report, path=None, rank=None):
    """The report (a dict, as culprit.last_report() returns it; schema culprit.report/1, docs/report.md) as a few
    lines, each starting with "culprit: ". path: the report's file, shown last; rank: the rank to name (default:
    the report's process.rank, when a launcher started the process).

    >>> print(culprit.verdict.summary(culprit.last_report(), path=culprit.last_report_path()))
    culprit: the kernel that faulted: void at::native::(anonymous namespace)::nll_loss2d_forward_kernel<...>(...)
    culprit:   launch #102 via cuLaunchKernel, grid [4,1,1] block [128,1,1], stream 0x0
    culprit:   launched from /home/me/xent_seg3d.py:32 in main
    culprit:   CUDA_ERROR_ASSERT (710): device-side assert triggered; it surfaced in cuMemcpyDtoHAsync_v2 at ...
    culprit:   how culprit knows: stream 0x0 completed launch #101; #102 is the next launch on it
    culprit: report: /home/me/culprit-reports/culprit-5001.json
    """
    if not isinstance(report, dict) or not str(report.get("schema", "")).startswith("culprit.report/"):
        lines = ["%snot a culprit report" % _who({}, rank)]
    else:
        kind = report.get("kind") or "fault"
        who = _who(report, rank)
        if kind == "hang":
            lines = _hang_lines(report, who)
        elif kind == "exit":
            lines = ["%sthis process saw no CUDA error (an exit record)" % who]
        else:
            lines = _fault_lines(report, who)
    if path:
        lines.append("report: %s" % path)
    # every line terminal-safe: a kernel name, a file name or argv may hold a newline or an escape sequence
    return "\n".join(PREFIX + _safe(str(line)) for line in lines)
