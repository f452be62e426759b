"""ctypes binding to the preloaded libculprit.so: the exported culprit_api_* functions of include/culprit.h.

This module never loads the library. culprit is preloaded (LD_PRELOAD), so its symbols are in the process's
global scope, and `ctypes.CDLL(None)` (dlopen of the main program) finds them; without the preload there is
nothing to find and the package runs as a no-op.
"""

import ctypes
import os
import threading

OK = 0
ENOTLOADED = -1  # the library is not preloaded in this process
EINVAL = -2      # bad mode, pattern or window
ESTACK = -3      # push beyond 64 levels, or pop with nothing pushed
EDISABLED = -4   # loaded but disabled (bad configuration or CULPRIT_MODE=off)

RECORD, BLOCKING, OFF, PRECISE = 0, 1, 2, 3
MODE_NAMES = {RECORD: "record", BLOCKING: "blocking", OFF: "off", PRECISE: "precise"}

PATTERN_MAX = 255      # longest kernel pattern the library accepts (bytes)
LAUNCH_MAX = 2**64 - 1  # "no upper bound" for a launch window
STACK_MAX = 64          # deepest nesting of pushes
API_VERSION = 1         # the interface spoken here: CULPRIT_API_VERSION of include/culprit.h

_SIGNATURES = {
    "culprit_api_version": (ctypes.c_int, []),
    "culprit_api_push": (ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_ulonglong]),
    "culprit_api_pop": (ctypes.c_int, []),
    "culprit_api_mode": (ctypes.c_int, []),
    "culprit_api_depth": (ctypes.c_int, []),
    "culprit_api_last_report": (ctypes.c_char_p, []),
    "culprit_api_launches": (ctypes.c_ulonglong, []),
}

# Entry points a library may lack (added after interface 1 began): looked up, and None when missing.
_OPTIONAL = {
    "culprit_api_op_begin": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
    "culprit_api_op_begin_buffers": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                                     ctypes.c_char_p]),
    "culprit_api_op_end": (ctypes.c_int, []),
    "culprit_api_captures": (ctypes.c_int, []),
}


class Api:
    """The library's entry points, each a ctypes function with its prototype."""

    def __init__(self, handle):
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(handle, name)  # AttributeError when missing
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name[len("culprit_api_"):], fn)
        if self.version() != API_VERSION:
            raise Mismatch(self.version())
        for name, (restype, argtypes) in _OPTIONAL.items():
            fn = getattr(handle, name, None)
            if fn is not None:
                fn.restype = restype
                fn.argtypes = argtypes
            setattr(self, name[len("culprit_api_"):], fn)
        self.has_ops = self.op_begin is not None and self.op_end is not None


class Mismatch(Exception):
    """The preloaded library speaks another interface than this package."""


mismatch = None  # the library's interface version when it is not this package's, else None


_api = None
_looked = False
_look_lock = threading.Lock()


def api():
    """The library's entry points, or None when libculprit.so is not in this process (looked up once)."""
    global _api, _looked, mismatch
    if _looked:
        return _api
    with _look_lock:
        if not _looked:
            try:
                _api = Api(ctypes.CDLL(None))
            except (OSError, AttributeError):
                _api = None  # not preloaded, or a library too old to have the whole API
            except Mismatch as e:
                _api, mismatch = None, e.args[0]
            _looked = True
    return _api


def last_report_path():
    """Path of the report the library wrote in this process, or None."""
    a = api()
    if a is None:
        return None
    p = a.last_report()
    return os.fsdecode(p) if p else None
