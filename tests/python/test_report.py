"""last_report() after a fault scripted in the simulated driver, driven from Python through ctypes (fakegpu.py):
launch 3 faults; in record mode the error surfaces at cuCtxSynchronize, in blocking mode at the launch itself,
and either way the report names launch 3."""

import json
import os

FAULT = {"FAKECUDA_FAULT": "launch=3"}


def check_report(rep, path, reports_dir):
    assert path and os.path.dirname(path) == str(reports_dir)
    assert os.path.basename(path).startswith("culprit-") and path.endswith(".json")
    assert rep["schema"] == "culprit.report/1"
    assert rep["error"]["code"] == 700
    assert rep["verdict"]["certainty"] == "exact"
    assert rep["culprit"]["seq"] == 3
    assert rep["culprit"]["kernel"] == "k1"


def test_record_mode(run_py, tmp_path):
    r = run_py("""
        import json, culprit, fakegpu
        gpu = fakegpu.Gpu()
        k = gpu.kernels("k1", "k2")
        rcs = [gpu.launch(k["k1"]), gpu.launch(k["k2"])]
        before = culprit.last_report()
        rcs += [gpu.launch(k["k1"]), gpu.launch(k["k2"])]
        rcs.append(gpu.sync())
        print(json.dumps({"rcs": rcs, "before": before, "path": culprit.last_report_path(),
                          "report": culprit.last_report()}))
    """, env=FAULT).ok()
    res = json.loads(r.out)
    assert res["rcs"] == [0, 0, 0, 0, 700]
    assert res["before"] is None
    check_report(res["report"], res["path"], tmp_path / "reports")
    assert res["report"]["error"]["api"].startswith("cuCtxSynchronize")
    assert "culprit: blocking mode" not in r.err


def test_blocking_mode_fails_at_the_launch(run_py, tmp_path):
    r = run_py("""
        import json, culprit, fakegpu
        gpu = fakegpu.Gpu()
        k = gpu.kernels("k1", "k2")
        rcs = []
        with culprit.blocking():
            for name in ("k1", "k2", "k1"):
                rcs.append(gpu.launch(k[name]))
        print(json.dumps({"rcs": rcs, "path": culprit.last_report_path(), "report": culprit.last_report()}))
    """, env=FAULT).ok()
    res = json.loads(r.out)
    assert res["rcs"] == [0, 0, 700]  # the failing launch call itself returns the error
    check_report(res["report"], res["path"], tmp_path / "reports")
    assert res["report"]["error"]["api"] == "cuLaunchKernel"


def test_blocking_filters(run_py):
    # Launch 3 (k1) faults. Blocking only for k2, or only for launches 4.., leaves the error to the sync;
    # blocking for k1 in window 2..3 catches it at the launch.
    code = """
        import json, culprit, fakegpu
        gpu = fakegpu.Gpu()
        k = gpu.kernels("k1", "k2")
        rcs = []
        with culprit.blocking(%s):
            for name in ("k1", "k2", "k1"):
                rcs.append(gpu.launch(k[name]))
        rcs.append(gpu.sync())
        print(json.dumps({"rcs": rcs, "seq": culprit.last_report()["culprit"]["seq"]}))
    """
    for args, rcs in [('"k2"', [0, 0, 0, 700]), ("launches=range(4, 100)", [0, 0, 0, 700]),
                      ('"k1", launches=(2, 3)', [0, 0, 700, 700])]:
        res = json.loads(run_py(code % args, env=FAULT).ok().out)
        assert res == {"rcs": rcs, "seq": 3}, args


def test_unreadable_report(run_py):
    # The report was written, then removed, replaced by garbage or by JSON that is no report: last_report() is
    # None each time and says why with the path (CulpritWarning), unlike "no report yet" (None, silent).
    r = run_py("""
        import json, os, warnings, culprit, fakegpu
        warnings.simplefilter("always")
        gpu = fakegpu.Gpu()
        f = gpu.kernels("k1")["k1"]
        with warnings.catch_warnings(record=True) as before:
            nothing = culprit.last_report()
        [gpu.launch(f) for _ in range(3)]
        gpu.sync()
        path = culprit.last_report_path()
        seen = []
        for content in (None, b"{truncated", b"[1, 2]"):
            if content is None:
                os.remove(path)
            else:
                with open(path, "wb") as out:
                    out.write(content)
            with warnings.catch_warnings(record=True) as w:
                got = culprit.last_report()
            seen.append([got, [(x.category.__name__, str(x.message)) for x in w]])
        print(json.dumps({"before": [nothing, len(before)], "path": path, "seen": seen}))
    """, env=FAULT).ok()
    res = json.loads(r.out)
    assert res["before"] == [None, 0]
    path = res["path"]
    (gone, w_gone), (garbage, w_garbage), (array, w_array) = res["seen"]
    assert gone is None and w_gone == [["CulpritWarning", "culprit: the report %s cannot be read: "
                                        "No such file or directory" % path]]
    assert garbage is None and len(w_garbage) == 1 and w_garbage[0][0] == "CulpritWarning"
    assert w_garbage[0][1].startswith("culprit: %s is not a culprit report (not JSON: " % path)
    assert array is None and w_array == [["CulpritWarning", "culprit: %s is not a culprit report (JSON, but not an "
                                          "object)" % path]]


def test_main_diagnostic_after_fault(run_py, tmp_path):
    script = tmp_path / "fault.py"
    script.write_text("import fakegpu, runpy\n"
                      "gpu = fakegpu.Gpu()\n"
                      "f = gpu.kernels('k1')['k1']\n"
                      "[gpu.launch(f) for _ in range(3)]\n"
                      "gpu.sync()\n"
                      "runpy.run_module('culprit', run_name='__main__')\n")
    r = run_py(args=[str(script)], env=FAULT)
    assert "mode: record (0 pushed)" in r.out
    assert "launches: 3" in r.out
    assert "last report: %s" % (tmp_path / "reports" / "culprit-") in r.out


def paused_then_fault(run_py, paused_code, fault="launch=3"):
    """Launches in a culprit.paused() scope (paused_code, with gpu and k), then a blocking launch of k1 that
    returns the error (it faulted, or an earlier launch did). Returns the report."""
    r = run_py("""
        import json, culprit, fakegpu
        gpu = fakegpu.Gpu()
        k = gpu.kernels("k1", "k2")
        with culprit.paused():
            %s
        with culprit.blocking(kernels="k1"):
            rc = gpu.launch(k["k1"])
        print(json.dumps({"rc": rc, "report": culprit.last_report()}))
    """ % paused_code.replace("\n", "\n            "), env={"FAKECUDA_FAULT": fault}).ok()
    res = json.loads(r.out)
    assert res["rc"] == 700
    return res["report"]


def test_paused_launches_then_a_synchronize(run_py):
    # The context synchronize after the paused launches proves them complete: the blocking launch is the culprit
    # (it once stayed "candidates": the synchronize came before any recorded launch, so it covered nothing).
    rep = paused_then_fault(run_py, 'gpu.launch(k["k2"])\ngpu.launch(k["k2"])\ngpu.sync()')
    assert rep["verdict"]["certainty"] == "exact", rep["verdict"]
    assert rep["culprit"]["kernel"] == "k1"


def test_paused_launches_then_a_stream_synchronize(run_py):
    # So does a synchronize of the stream they ran on (what .item() ends with).
    rep = paused_then_fault(run_py, 'gpu.launch(k["k2"])\ngpu.launch(k["k2"])\ngpu.stream_sync()')
    assert rep["verdict"]["certainty"] == "exact", rep["verdict"]
    assert rep["culprit"]["kernel"] == "k1"


def test_paused_launches_not_known_complete(run_py):
    # Without it, an unrecorded launch may be the one that faulted: candidates, and the report says why.
    rep = paused_then_fault(run_py, 'gpu.launch(k["k2"])\ngpu.launch(k["k2"])')
    assert rep["verdict"]["certainty"] == "candidates", rep["verdict"]
    assert "did not record" in rep["verdict"]["reason"]


def test_paused_launch_after_the_synchronize(run_py):
    # A synchronize covers only the launches before it: the paused launch after it (the one that faults here)
    # keeps the verdict at candidates.
    rep = paused_then_fault(run_py, 'gpu.launch(k["k2"])\ngpu.sync()\ngpu.launch(k["k2"])', fault="launch=2")
    assert rep["verdict"]["certainty"] == "candidates", rep["verdict"]
    assert "did not record" in rep["verdict"]["reason"]
