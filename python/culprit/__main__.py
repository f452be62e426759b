"""`python -m culprit`: says whether the culprit library is in this interpreter, its mode and its last report.

    $ culprit run -- python -m culprit
    culprit 0.1.0: library loaded and active
    mode: record (0 pushed)
    launches: 0
    last report: none

Exit status 0 when the library is active, 1 otherwise.

With arguments it is the `culprit` command itself (the program a pip install bundles), so `python -m culprit run
-- python train.py` works where the console script is not on PATH.
"""

import sys

import culprit
from culprit import _cli


def main():
    if len(sys.argv) > 1:
        return _cli.exec_native(sys.argv[1:])
    st = culprit.status()
    head = "culprit %s: " % culprit.__version__
    if st == "absent" and culprit._lib.mismatch is not None:
        print(head + "the loaded libculprit.so speaks interface %d, this package %d: use the package of the same "
                     "build" % (culprit._lib.mismatch, culprit._lib.API_VERSION))
        return 1
    if st == "absent":
        print(head + "library not loaded; run the program under culprit: culprit run -- python your_script.py")
        return 1
    if st == "disabled":
        print(head + "library loaded but disabled (CULPRIT_MODE=off, or a bad CULPRIT_* setting: see the "
                     "'culprit: ...' line on stderr)")
        return 1
    print(head + "library loaded and active")
    print("mode: %s (%d pushed)" % (culprit.mode(), culprit.depth()))
    print("launches: %d" % culprit.launches())
    print("last report: %s" % (culprit.last_report_path() or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
