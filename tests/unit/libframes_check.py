"""The library-frame rules twice, checked against each other: the verdict's renderer (src/render/render_parts.c,
through libframes_probe) and the Python package's summary (python/culprit/verdict.py) must call the same native
frames a library's and pick the same user frames, native and Python, over the same reports.

usage: libframes_check.py PROBE PYTHON_PACKAGE_DIR REPORT..."""
import json
import os
import subprocess
import sys


def walk(node, path, out, verdict):
    if isinstance(node, dict):
        stack, py = node.get("stack"), node.get("python")
        if isinstance(stack, list):
            lib = " ".join("1" if isinstance(f, dict) and verdict._is_lib_frame(f) else "0" for f in stack)
            user = verdict._user_native_frame(node)
            idx = next((i for i, f in enumerate(stack) if f is user), -1) if user is not None else -1
            out.append("%s stack lib%s user %d" % (path, " " + lib if lib else "", idx))
        if isinstance(py, list):
            user = verdict._user_pyframe(py)
            idx = next((i for i, f in enumerate(py) if f is user), -1) if user is not None else -1
            out.append("%s python user %d" % (path, idx))
        for k, v in node.items():
            walk(v, "%s/%s" % (path, k), out, verdict)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, "%s/%d" % (path, i), out, verdict)


def main():
    probe, pkg, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.path.insert(0, pkg)
    from culprit import verdict
    c_lines = subprocess.run([probe] + files, check=True, capture_output=True, text=True).stdout.splitlines()
    py_lines = []
    for a, path in enumerate(files, 1):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except ValueError:
            continue
        py_lines.append("file %d" % a)
        walk(doc, "", py_lines, verdict)
    stacks = sum(1 for l in c_lines if " stack " in l)
    if c_lines != py_lines:
        for a, b in zip(c_lines + [""] * len(py_lines), py_lines + [""] * len(c_lines)):
            if a != b:
                print("render_parts.c: %s\nverdict.py:     %s" % (a, b))
                break
        print("FAIL: the two sets of library-frame rules disagree")
        return 1
    if stacks == 0:
        print("FAIL: no stack in the reports given")
        return 1
    print("%d stacks of %d reports: the same library frames and user frames" % (stacks, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
