"""Long runs: a scope opened and closed once per training step, hundreds of times, must leave the mode in force
before it exactly, and an outer scope must stay in force however many inner scopes come and go. (The library
keeps its mode frames in a ring of 256 slots; these tests cross it.)"""

import json

STEPS = 1000


def run_json(run_py, code):
    r = run_py(code).ok()
    return json.loads(r.out.splitlines()[-1])


def test_step_scopes_restore_the_configured_mode(run_py):
    res = run_json(run_py, """
        import json, culprit
        bad = []
        @culprit.blocking("*nll*")
        def step(i):
            pass
        for i in range(%d):
            step(i)
            if culprit.mode() != "record" or culprit.depth() != 0:
                bad.append((i + 1, culprit.mode(), culprit.depth()))
                break
        print(json.dumps(bad))
    """ % STEPS)
    assert res == [], "after %d scopes the mode was %s at depth %d" % tuple(res[0])


def test_outer_scope_survives_inner_scopes(run_py):
    res = run_json(run_py, """
        import json, culprit
        bad = []
        with culprit.blocking():
            for i in range(%d):
                with culprit.paused():
                    pass
                if culprit.mode() != "blocking" or culprit.depth() != 1:
                    bad.append((i + 1, culprit.mode(), culprit.depth()))
                    break
        print(json.dumps(bad))
    """ % STEPS)
    assert res == [], "after %d inner scopes the mode was %s at depth %d" % tuple(res[0])
