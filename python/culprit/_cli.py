"""The `culprit` command of a pip-installed culprit: replaces this interpreter with the native program that the
wheel bundles under culprit/_native/bin, with the same arguments. The program's exit status, signals and stdio are
then its own; Python stays out of the way.

From the source tree (python/ on PYTHONPATH) there is no bundled program: it says how to get one.
"""

import os
import signal
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE_DIR = os.path.join(_HERE, "_native")  # bin/culprit, lib/libculprit.so, lib/culprit-sim/ (the wheel's)

EXIT_NOT_FOUND = 127  # no bundled program (the status a shell gives a command it cannot find)
EXIT_CANNOT_RUN = 126  # it is there but cannot be run


def bundled(*parts):
    """Path of a file the wheel bundles under culprit/_native (bundled("lib", "libculprit.so")), or None when this
    copy of the package has none (it was imported from the source tree)."""
    p = os.path.join(NATIVE_DIR, *parts)
    return p if os.path.isfile(p) else None


def _not_bundled():
    sys.stderr.write(
        "culprit: this copy of the culprit package (%s) has no bundled culprit program; it is probably the source "
        "tree's python/ folder. Install culprit with `pip install .` at the root of its repository (which builds "
        "it), or build it with `./build.sh` and run build/bin/culprit\n" % _HERE)
    return EXIT_NOT_FOUND


def exec_native(args):
    """Execs the bundled culprit with args (a list, without the program name). Returns an exit status only when
    that cannot be done."""
    exe = bundled("bin", "culprit")
    if exe is None:
        return _not_bundled()
    # Python ignores SIGPIPE and SIGXFSZ for itself; an ignored signal stays ignored across exec, and culprit's
    # command would inherit it (`culprit run -- CMD | head` would then see EPIPE instead of dying of SIGPIPE).
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.execv(exe, ["culprit"] + list(args))
    except OSError as e:
        sys.stderr.write("culprit: cannot run %s: %s\n" % (exe, e.strerror or e))
        return EXIT_CANNOT_RUN


def main():
    """The console script `culprit`."""
    return exec_native(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
