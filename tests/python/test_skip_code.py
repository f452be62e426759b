"""The exit code of a pytest run under conftest.py's hook: a file whose every test was skipped exits 77 (CTest's
SKIP_RETURN_CODE: shown as skipped, not passed), one with a test that passed or failed exits as pytest says. Each
case is a pytest child on a file written here, with this directory's conftest.py loaded as a plugin."""

import os
import subprocess
import sys

import pytest

from conftest import HERE, SKIP_EXIT_CODE

CASES = {
    "all_skipped": ("import pytest\n\n\ndef test_a():\n    pytest.skip('no torch')\n\n\n"
                    "@pytest.mark.skip(reason='no GPU')\ndef test_b():\n    pass\n", SKIP_EXIT_CODE),
    "module_skipped": ("import pytest\n\npytest.importorskip('culprit_no_such_module')\n\n\ndef test_a():\n"
                       "    pass\n", SKIP_EXIT_CODE),
    "one_passed": ("import pytest\n\n\ndef test_a():\n    pytest.skip('no torch')\n\n\ndef test_b():\n"
                   "    pass\n", 0),
    "one_failed": ("import pytest\n\n\ndef test_a():\n    pytest.skip('no torch')\n\n\ndef test_b():\n"
                   "    assert False\n", 1),
    "nothing_skipped": ("def test_a():\n    pass\n", 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exit_code(name, tmp_path):
    src, want = CASES[name]
    path = tmp_path / ("test_%s.py" % name)
    path.write_text(src)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                        "--rootdir", str(tmp_path), str(path)], cwd=str(tmp_path), env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == want, "%s: exit %d, want %d\n%s%s" % (name, p.returncode, want, p.stdout, p.stderr)
