"""The Python package's copy of the public API's numbers (python/culprit/_lib.py) against include/culprit.h: every
CULPRIT_OK / CULPRIT_E* code, every mode of enum culprit_mode and CULPRIT_API_VERSION has the same name and value
in _lib.py, and _lib.py has no code culprit.h lacks. The header is the one source; _lib.py may not drift from it.

usage: error_codes_check.py SOURCE_ROOT"""
import os
import re
import sys


def main():
    root = sys.argv[1]
    with open(os.path.join(root, "include", "culprit.h"), encoding="utf-8") as f:
        header = f.read()
    sys.path.insert(0, os.path.join(root, "python"))
    from culprit import _lib

    want = {}
    for name, value in re.findall(r"#define CULPRIT_(OK|E[A-Z]+) \(?(-?\d+)\)?", header):
        want[name] = int(value)
    enum = re.search(r"enum culprit_mode \{(.*?)\};", header, re.S).group(1)
    for name, value in re.findall(r"CULPRIT_([A-Z]+) = (\d+)", enum):
        want[name] = int(value)
    want["API_VERSION"] = int(re.search(r"#define CULPRIT_API_VERSION (\d+)", header).group(1))

    bad = ["%s: culprit.h says %d, _lib.py %r" % (n, v, getattr(_lib, n, None))
           for n, v in sorted(want.items()) if getattr(_lib, n, None) != v]
    extra = [n for n in dir(_lib) if re.fullmatch(r"E[A-Z]+", n) and n not in want]
    bad += ["%s: in _lib.py but not in culprit.h" % n for n in extra]
    if len([n for n in want if n.startswith("E")]) < 4:
        bad.append("found fewer than four CULPRIT_E* codes in culprit.h")
    for b in bad:
        print("FAIL: " + b)
    if bad:
        return 1
    print("%d names of culprit.h, the same in _lib.py" % len(want))
    return 0


if __name__ == "__main__":
    sys.exit(main())
