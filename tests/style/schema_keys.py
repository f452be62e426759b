#!/usr/bin/env python3
"""The report's schema is one header (src/render/report_keys.h; other formats in src/render/format_keys.h).

Fails (exit 1, naming each place) when
  (a) a file of src/ hands a JSON reader or writer (json_get, json_get_str, json_get_int, json_set, json_put,
      jw_key, or a helper that passes its key on to them) a string literal as the key instead of a macro;
  (b) a key of report_keys.h is not documented in docs/report.md (spelled "key" there);
  (c) a macro of either header is defined twice, or two macros of one format spell the same key.
Usage: schema_keys.py REPO_ROOT
"""
import os
import re
import sys

# function -> indexes of its key arguments
FUNCS = {
    'json_get': (1,), 'json_get_str': (1,), 'json_get_int': (1,), 'json_set': (1,), 'json_put': (1,),
    'jw_key': (1,), 'addr_field': (1,), 'addr_put_range': (1, 3), 'merge_uint': (1,), 'sym_get': (1,),
    'sym_set_str': (2,), 'devq_add_seqs': (1,), 'devq_put_str': (1,), 'promote_candidate': (2,),
    'promote_because': (2,), 'emit_stream_place': (1,), 'trace_dims': (1,), 'deliver_int': (1,), 'deliver_str': (1,),
}
HEADERS = ('src/render/report_keys.h', 'src/render/format_keys.h')


def strip_comments(t):
    """t with comments blanked (newlines kept, so line numbers hold); strings are left as they are."""
    out, i, n = [], 0, len(t)
    while i < n:
        if t.startswith('/*', i):
            j = t.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', t[i:j]))
            i = j
        elif t.startswith('//', i):
            j = t.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif t[i] in '"\'':
            q, j = t[i], i + 1
            while j < n and t[j] != q:
                j += 2 if t[j] == '\\' else 1
            out.append(t[i:j + 1])
            i = j + 1
        else:
            out.append(t[i])
            i += 1
    return ''.join(out)


def split_args(t, start):
    args, depth, i, b = [], 0, start, start
    while i < len(t):
        c = t[i]
        if c in '([{':
            depth += 1
        elif c in ')]}':
            if depth == 0:
                args.append(t[b:i])
                return args
            depth -= 1
        elif c == ',' and depth == 0:
            args.append(t[b:i])
            b = i + 1
        elif c in '"\'':
            j = i + 1
            while j < len(t) and t[j] != c:
                j += 2 if t[j] == '\\' else 1
            i = j
        i += 1
    return args


def literal_keys(root):
    bad = []
    call = re.compile(r'\b(' + '|'.join(FUNCS) + r')\s*\(')
    for dp, _, fs in os.walk(os.path.join(root, 'src')):
        for f in sorted(fs):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, root)
            t = strip_comments(open(path, encoding='utf-8', errors='replace').read())
            for m in call.finditer(t):
                args = split_args(t, m.end())
                for k in FUNCS[m.group(1)]:
                    if k < len(args) and re.search(r'"', args[k]):
                        bad.append('%s:%d: %s() is given the key %s as a string; use its macro from %s' %
                                   (rel, t.count('\n', 0, m.start()) + 1, m.group(1), args[k].strip(),
                                    'src/render/format_keys.h' if m.group(1) in ('trace_dims', 'deliver_int',
                                                                                 'deliver_str') else
                                    'src/render/report_keys.h'))
    return bad


def macros(root, header):
    text = strip_comments(open(os.path.join(root, header), encoding='utf-8').read())
    return [(m.group(1), m.group(2), m.group(3), text.count('\n', 0, m.start()) + 1)
            for m in re.finditer(r'^\s*#\s*define\s+(([A-Z]+)_\w+)\s+"([^"]*)"', text, re.M)]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    bad = literal_keys(root)
    names = {}
    for h in HEADERS:
        values = {}
        for name, prefix, value, line in macros(root, h):
            if name in names:
                bad.append('%s:%d: %s is defined twice (also %s)' % (h, line, name, names[name]))
            names[name] = '%s:%d' % (h, line)
            other = values.get((prefix, value))
            if other:
                bad.append('%s:%d: %s spells "%s", as %s does' % (h, line, name, value, other))
            values[(prefix, value)] = name
    doc = open(os.path.join(root, 'docs/report.md'), encoding='utf-8').read()
    n = 0
    for name, prefix, value, line in macros(root, HEADERS[0]):
        n += 1
        if prefix != 'RK':
            bad.append('%s:%d: %s: the report\'s keys are RK_ macros' % (HEADERS[0], line, name))
        if '"%s"' % value not in doc:
            bad.append('%s:%d: %s ("%s") is not documented in docs/report.md' % (HEADERS[0], line, name, value))
    if n == 0:
        bad.append('%s defines no key' % HEADERS[0])
    for b in bad:
        print(b)
    print('%d problems, %d report keys' % (len(bad), n))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
