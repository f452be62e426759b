"""docs/usage.md is the one place with the table of `culprit run`'s options and the table of environment variables;
this checks them against the code. Every option `culprit run --help` lists is a row of the options table and every
row is an option the help lists; every CULPRIT_* variable the code names (the library's and the command's getenv
calls, the option parser's table, the Python package) is a row of an environment table.

usage: options_table.py CULPRIT_BINARY SOURCE_ROOT"""
import glob
import os
import re
import subprocess
import sys


def section(text, title):
    """The lines of the section of docs/usage.md whose heading is title, up to the next heading of its level."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == title)
    level = len(title) - len(title.lstrip("#"))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level), len(lines))
    return lines[start + 1:end]


def first_cells(lines):
    """The first cell of every row of the tables in lines, without the header rows."""
    cells = []
    for l in lines:
        if l.startswith("|") and not l.startswith("|---"):
            cells.append(l.split("|")[1].strip())
    return cells


def main():
    binary, root = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "docs", "usage.md"), encoding="utf-8") as f:
        usage = f.read()
    bad = []

    helptext = subprocess.run([binary, "run", "--help"], check=True, capture_output=True, text=True).stdout
    in_help = set()
    for l in helptext.splitlines():
        m = re.match(r"^  (-[-\w]+(?:, -[-\w]+)*)", l)
        if m:
            in_help.update(o.strip() for o in m.group(1).split(","))
    in_table = set()
    for cell in first_cells(section(usage, "## The options of `culprit run`")):
        in_table.update(re.findall(r"`(-[-\w]+)", cell))
        in_table.update(re.findall(r", `?(-\w)\b", cell))
    for o in sorted(in_help - in_table):
        bad.append("%s is in `culprit run --help` but not in docs/usage.md's options table" % o)
    for o in sorted(in_table - in_help):
        bad.append("%s is in docs/usage.md's options table but not in `culprit run --help`" % o)

    sources = glob.glob(os.path.join(root, "src", "*", "*.[ch]")) + glob.glob(os.path.join(root, "python", "culprit",
                                                                                          "**", "*.py"), recursive=True)
    named = set()
    for path in sources:
        with open(path, encoding="utf-8", errors="replace") as f:
            named.update(re.findall(r"[\"'](CULPRIT_[A-Z0-9_]+)[\"']", f.read()))
    rows = set()
    for cell in first_cells(section(usage, "## Environment variables")):
        rows.update(re.findall(r"`(CULPRIT_[A-Z0-9_]+)`", cell))
    for v in sorted(named - rows):
        bad.append("%s is read by the code but is not a row of docs/usage.md's environment tables" % v)

    for b in bad:
        print("FAIL: " + b)
    if not in_help or not named:
        print("FAIL: found no options in the help or no variables in the code")
        return 1
    if bad:
        return 1
    print("%d options and %d variables, each in docs/usage.md's tables" % (len(in_help), len(named)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
