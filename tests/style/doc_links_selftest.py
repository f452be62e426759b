"""doc_links.py against tests/style/fixtures/links.md: the links it must accept (a heading with a code span, a
repeated heading's -1 anchor, a folder, another site, anything in code) and exactly the three it must refuse."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_links  # noqa: E402

fixture = os.path.join(HERE, "fixtures", "links.md")
got = [p.split(": ", 1)[1] for p in doc_links.problems(HERE, fixture)]
want = ["missing.md: no such file",
        "#the-options: no heading with that anchor in fixtures/links.md",
        "#repeated-2: no heading with that anchor in fixtures/links.md"]
for p in got:
    print(p)
if got != want:
    print("expected:\n  " + "\n  ".join(want))
    print("1 failed")
    sys.exit(1)
print("1 passed, 0 failed")
