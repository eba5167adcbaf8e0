#!/usr/bin/env python3
"""Fails when a non-test source file passes 800 lines or a function passes 120 (issue 46).

Test code does not count: `tests/` folders, `*_tests.rs` files and `#[cfg(test)] mod … { }`
blocks. A file or function may stay longer only where a comment says why it cannot be split:
`// shape: <why>` in the file's first lines, or on the lines just above the function.
Usage: scripts/code-shape.py [--report] [workspace root]; --self-test checks the check."""
import os, re, sys

FILE_LIMIT, FN_LIMIT = 800, 120
ROOT = "."
FN_START = re.compile(r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+(\w+)')

def strip(text):
    """Blank out comments and string/char literals (keeping newlines) so braces count true."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == 'r' and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i-1].isalnum() or text[i-1] == '_')):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            j += 1
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(' ' * len(m.group(0))); i += len(m.group(0))
            else:
                out.append(c); i += 1
        else:
            out.append(c); i += 1
    return ''.join(out)

def block_end(lines, start):
    """Index of the line closing the first `{` at or after `start` (None for `fn f();`)."""
    depth, opened = 0, False
    for k in range(start, len(lines)):
        for ch in lines[k]:
            if ch == '{':
                depth += 1; opened = True
            elif ch == '}':
                depth -= 1
                if opened and depth == 0:
                    return k
            elif ch == ';' and not opened and depth == 0:
                return None
    return None

def test_ranges(lines):
    ranges = []
    for k, line in enumerate(lines):
        if re.match(r'\s*#\[cfg\((?:all\()?test', line):
            for j in range(k + 1, min(k + 4, len(lines))):
                if re.match(r'\s*(pub\s+)?mod\s+\w+\s*\{', lines[j]):
                    end = block_end(lines, j)
                    if end is not None:
                        ranges.append((k, end))
                    break
    return ranges

def excused(raw_lines, k):
    for j in range(k - 1, max(-1, k - 6), -1):
        line = raw_lines[j].strip()
        if '// shape:' in line:
            return True
        if not (line.startswith('//') or line.startswith('#[') or line.startswith('///')):
            break
    return False

def check(path):
    raw = open(path, encoding='utf-8').read()
    raw_lines = raw.split('\n')
    lines = strip(raw).split('\n')
    tests = test_ranges(lines)
    in_test = lambda k: any(a <= k <= b for a, b in tests)
    problems = []
    counted = sum(1 for k in range(len(lines)) if not in_test(k))
    if counted > FILE_LIMIT and not any('// shape:' in l for l in raw_lines[:15]):
        problems.append(f'{os.path.relpath(path, ROOT)}: {counted} lines (limit {FILE_LIMIT})')
    for k, line in enumerate(lines):
        m = FN_START.match(line)
        if not m or in_test(k):
            continue
        end = block_end(lines, k)
        if end is None:
            continue
        length = end - k + 1
        if length > FN_LIMIT and not excused(raw_lines, k):
            problems.append(f'{os.path.relpath(path, ROOT)}:{k + 1}: fn {m.group(1)} is {length} lines (limit {FN_LIMIT})')
    return problems

def sources(root):
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, 'src')
        if not os.path.isdir(src) or crate == 'target':
            continue
        for d, _, files in os.walk(src):
            if os.sep + 'tests' in d[len(src):]:
                continue
            for f in sorted(files):
                if f.endswith('.rs') and not f.endswith('_tests.rs') and f != 'tests.rs':
                    yield os.path.join(d, f)

def self_test():
    import tempfile, subprocess
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'demo', 'src'); os.makedirs(src)
        body = '\n'.join('    let _x = "}";' for _ in range(125))
        long_fn = f'pub fn long() {{\n{body}\n}}\n'
        open(os.path.join(src, 'lib.rs'), 'w').write(long_fn)
        run = lambda: subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
        r = run()
        assert r.returncode == 1 and 'fn long is 127 lines' in r.stdout, r.stdout
        open(os.path.join(src, 'lib.rs'), 'w').write('// shape: one table of cases\n' + long_fn)
        assert run().returncode == 0
        tests = '#[cfg(test)]\nmod tests {\n' + long_fn + '\n' + '//\n' * 900 + '}\n'
        open(os.path.join(src, 'lib.rs'), 'w').write('fn short() {}\n' + tests)
        r = run()
        assert r.returncode == 0, r.stdout
        open(os.path.join(src, 'lib.rs'), 'w').write('fn short() {}\n' + '//\n' * 801)
        r = run()
        assert r.returncode == 1 and 'lines (limit 800)' in r.stdout, r.stdout
    print('code-shape: self-test passed')

if __name__ == '__main__':
    args = sys.argv[1:]
    if args == ['--self-test']:
        self_test(); sys.exit(0)
    report = '--report' in args
    args = [a for a in args if a != '--report']
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    ROOT = os.path.abspath(root)
    problems = [p for path in sources(root) for p in check(path)]
    for p in problems:
        print(p)
    if problems and not report:
        print(f'code-shape: {len(problems)} over the limits; split them or say why with `// shape:`')
        sys.exit(1)
    if not problems:
        print('code-shape: every file within 800 lines, every function within 120')
