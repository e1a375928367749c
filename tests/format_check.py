#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check the C sources against .clang-format, the way this tree uses it.

clang-format 14 cannot write the kernel's tab alignment (of macro values,
trailing comments, line continuations) nor keep a line break it would
place elsewhere, so its output is not compared line by line.  What is
compared is what it says about the tokens: the text with every run of
white space (line breaks included) made one space, and the spaces that
only a line break put after "(" or "[" or before ")", "]" or "->"
removed.  So "if(", "a+b", "f (x)", "x ,y", "{ }" and a missing space
after a comma are caught; where lines break and how values align is left
to review.  Besides, every line must be indented with tabs (at most 7
spaces after them, to align a continuation).

  tests/format_check.py [FILE...]   (default: every tracked .c and .h)
Exit 0 when clean, 1 with the findings, 2 when clang-format is missing.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {'vmlinux.h'}


def tokens(text):
    """The text as words with their lines: runs of non-space, joined where
    only a line break could have parted them (after "(" or "[", before
    ")", "]" or "->"), then split at the spaces left."""
    text = text.replace('\\\n', ' \n')
    words, lines, line, pos, prev = [], [], 1, 0, ''
    for m in re.finditer(r'\S+', text):
        t = m.group(0)
        line += text.count('\n', pos, m.start())
        pos = m.start()
        if words and (prev.endswith(('(', '[')) or
                      t.startswith((')', ']', '->'))):
            words[-1] += t
        else:
            words.append(t)
            lines.append(line)
        prev = t
    return words, lines


def files():
    out = subprocess.run(['git', 'ls-files', '*.c', '*.h'], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit('format_check: not a git checkout; name the files')
    return [f for f in out.stdout.split() if os.path.basename(f) not in SKIP]


def check(path, exe):
    findings = []
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        src = f.read()
    for n, line in enumerate(src.split('\n'), 1):
        if re.match(r'\t* {8}', line) and not line.lstrip().startswith('*'):
            findings.append('%s:%d: indented with spaces' % (path, n))
    fmt = subprocess.run([exe, '--style=file', '--assume-filename=' + path],
                         input=src, cwd=ROOT, capture_output=True, text=True)
    if fmt.returncode:
        return findings + ['%s: clang-format failed: %s' %
                           (path, fmt.stderr.strip())]
    a, at = tokens(src)
    b, _ = tokens(fmt.stdout)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == 'equal':
            continue
        findings.append('%s:%d: "%s" -> clang-format: "%s"' % (
            path, at[min(i1, len(at) - 1)],
            ' '.join(a[max(0, i1 - 2):i2 + 2]),
            ' '.join(b[max(0, j1 - 2):j2 + 2])))
    return findings


def main():
    exe = shutil.which('clang-format') or shutil.which('clang-format-14')
    if not exe:
        print('format_check: clang-format missing (scripts/deps.sh installs it)')
        return 2
    paths = sys.argv[1:] or files()
    findings = []
    for p in paths:
        findings += check(p, exe)
    for f in findings:
        print(f)
    print('format_check: %d files, %d findings' % (len(paths), len(findings)))
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main())
