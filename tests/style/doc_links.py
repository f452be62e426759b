"""Every relative link of the project's Markdown (README.md, docs/, and the Markdown under tests/ and bench/ but
for test fixtures) leads somewhere: the file or folder exists, and a #fragment names a heading of the target file
(as GitHub makes a heading's anchor: lower case, punctuation other than '-' and '_' dropped, spaces made '-', a
repeated heading numbered -1, -2, ...). Links to other sites, and links inside code blocks and code spans, are
not checked.

usage: doc_links.py SOURCE_ROOT [FILE...]   (with FILEs: only those, for the test's own checks)"""
import glob
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(text, spans=True):
    """text without fenced code blocks and (spans) code spans: their brackets are not links."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        out.append("" if fence else re.sub(r"`+[^`]*`+", "", line) if spans else line)
    return "\n".join(out)


def anchors(path, cache={}):
    """The anchors GitHub gives the headings of the Markdown file at path."""
    if path not in cache:
        seen, names = {}, set()
        with open(path, encoding="utf-8") as f:
            text = prose(f.read(), spans=False)  # a heading's code spans keep their text in its anchor
        for line in text.splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            names.add(slug if n == 0 else "%s-%d" % (slug, n))
        cache[path] = names
    return cache[path]


def problems(root, path):
    """The broken links of the Markdown file at path, one line each."""
    out = []
    with open(path, encoding="utf-8") as f:
        text = prose(f.read())
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
                continue
            file_part, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = "%s:%d: %s" % (os.path.relpath(path, root), lineno, target)
            if not os.path.exists(dest):
                out.append("%s: no such file" % where)
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                out.append("%s: no heading with that anchor in %s" % (where, os.path.relpath(dest, root)))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    files = argv[2:] or ([os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))) +
                         sorted(glob.glob(os.path.join(root, "tests", "**", "*.md"), recursive=True)) +
                         sorted(glob.glob(os.path.join(root, "bench", "**", "*.md"), recursive=True)))
    files = [f for f in files if "%sfixtures%s" % (os.sep, os.sep) not in f]  # test inputs, broken on purpose
    bad = [p for f in files for p in problems(root, f)]
    for p in bad:
        print(p)
    print("%d Markdown files, %d broken links" % (len(files), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
