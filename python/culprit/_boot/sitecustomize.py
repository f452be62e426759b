"""culprit's start-up hook for Python programs run under `culprit run --diagnose`.

`culprit run --diagnose` puts this directory first on the command's PYTHONPATH and sets CULPRIT_DIAGNOSE=1, so
every Python interpreter it starts imports this module at start-up (the `site` module imports `sitecustomize`).
It loads culprit's Python package from beside it, without putting anything else on sys.path, installs the
operator diagnosis (culprit/diagnose.py: it starts once the program imports torch), and then imports the
sitecustomize module that would have run without culprit, if there is one, so the program's own start-up is
unchanged. Nothing here may fail the program: every error becomes one line on stderr.
"""


def _load_culprit():
    import importlib.util
    import os
    import sys

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mod = sys.modules.get("culprit")
    if mod is not None and os.path.dirname(os.path.abspath(getattr(mod, "__file__", "") or "")) == pkg:
        return mod
    # The package beside this hook speaks the library's interface; another installed copy might not.
    spec = importlib.util.spec_from_file_location("culprit", os.path.join(pkg, "__init__.py"),
                                                  submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["culprit"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop("culprit", None)
        raise
    return mod


def _chain():
    """Imports the next sitecustomize on sys.path (the one this module hides), as site would have."""
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.get(__name__)
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find("sitecustomize", rest)
        except Exception:
            continue
        if spec is None:
            continue
        if spec.origin and os.path.dirname(os.path.abspath(spec.origin)) == here:
            continue
        mod = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules["sitecustomize"] = me
            raise
        return
    return


def _main():
    import os
    import sys

    if os.environ.get("CULPRIT_DIAGNOSE", "") in ("1", "all"):
        try:
            _load_culprit()
            from culprit import diagnose
            diagnose.install()
        except Exception as e:  # noqa: BLE001 - the program starts whatever happens here
            try:
                sys.stderr.write("culprit: the operator diagnosis could not be set up: %r\n" % (e,))
            except Exception:
                pass
    try:
        _chain()
    except Exception as e:  # noqa: BLE001 - as site itself reports a failing sitecustomize
        try:
            sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


_main()
