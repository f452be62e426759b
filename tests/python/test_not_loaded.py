"""Without libculprit.so: import works, every scope is a no-op that warns once, the program runs normally."""

import json

import culprit


def test_in_this_interpreter():
    # pytest's own interpreter has no preload.
    assert culprit.loaded() is False
    assert culprit.status() == "absent"
    assert culprit.mode() is None
    assert culprit.depth() is None
    assert culprit.launches() is None
    assert culprit.last_report() is None
    assert culprit.last_report_path() is None


def test_scopes_do_nothing_and_warn_once(run_py):
    r = run_py("""
        import json, warnings
        warnings.simplefilter("always")            # even so: one warning, from culprit itself
        with warnings.catch_warnings(record=True) as w:
            import culprit
            steps = []
            with culprit.blocking("*nll*"):
                steps.append(culprit.mode())
                with culprit.paused():
                    with culprit.recording():
                        steps.append("inner")

            @culprit.blocking(launches=range(1, 10))
            def f(x):
                return x + 1

            @culprit.paused()
            async def g():
                return 7

            import asyncio
            steps.append(f(1))
            steps.append(asyncio.run(g()))
            try:
                with culprit.blocking():
                    raise KeyError("boom")
            except KeyError:
                steps.append("raised")
        print(json.dumps({"steps": steps, "loaded": culprit.loaded(),
                          "warnings": [(x.category.__name__, str(x.message), x.filename) for x in w]}))
    """, preload=False).ok()
    res = json.loads(r.out)
    assert res["steps"] == [None, "inner", 2, 7, "raised"]
    assert res["loaded"] is False
    assert len(res["warnings"]) == 1, res["warnings"]
    cat, msg, filename = res["warnings"][0]
    assert cat == "CulpritWarning"
    assert "not loaded" in msg and "culprit run -- python" in msg
    assert filename == "<string>"  # points at the user's line, not at the package
    assert "culprit:" not in r.err  # no exit message


def test_warning_names_the_script(run_py, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import culprit\nwith culprit.blocking():\n    pass\n")
    r = run_py(args=[str(script), "--lr", "3"], preload=False).ok()
    assert "culprit run -- python %s --lr 3" % script in r.err
    assert r.err.count("CulpritWarning") == 1


def test_main_diagnostic(run_py):
    r = run_py(args=["-m", "culprit"], preload=False)
    assert r.rc == 1
    assert "library not loaded" in r.out and "culprit run -- python" in r.out
