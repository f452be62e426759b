"""libculprit.so preloaded but disabled (bad configuration, CULPRIT_MODE=off): like not loaded, with a message
that says so."""

import json

import pytest

CODE = """
    import json, warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        import culprit
        seen = []
        with culprit.blocking():
            seen.append(culprit.mode())
        with culprit.paused():
            seen.append(culprit.depth())
        try:
            with culprit.recording():
                raise ValueError("x")
        except ValueError:
            seen.append("raised")
    print(json.dumps({"seen": seen, "loaded": culprit.loaded(), "status": culprit.status(),
                      "launches": culprit.launches(), "report": culprit.last_report(),
                      "warnings": [str(x.message) for x in w]}))
"""


@pytest.mark.parametrize("env", [{"CULPRIT_RING": "bogus"}, {"CULPRIT_MODE": "off"}], ids=["bad_ring", "mode_off"])
def test_disabled(run_py, env):
    r = run_py(CODE, env=env).ok()
    res = json.loads(r.out)
    assert res["seen"] == [None, None, "raised"]
    assert res["loaded"] is False
    assert res["status"] == "disabled"
    assert res["launches"] is None and res["report"] is None
    assert len(res["warnings"]) == 1, res["warnings"]
    assert "loaded but disabled" in res["warnings"][0]
    if "CULPRIT_RING" in env:
        assert "CULPRIT_RING='bogus' is not valid" in r.err  # the library's own line, printed once
        assert r.err.count("CULPRIT_RING='bogus'") == 1


def test_main_diagnostic_disabled(run_py):
    r = run_py(args=["-m", "culprit"], env={"CULPRIT_RING": "bogus"})
    assert r.rc == 1
    assert "loaded but disabled" in r.out
