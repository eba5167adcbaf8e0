#!/usr/bin/env python3
"""Fails on a dead internal link in the project's Markdown: a relative link to a file that is
not there, or an anchor (`file.md#part`, `#part`) that no heading of the file makes, as GitHub
makes them (lower case, punctuation dropped, spaces as dashes, `-1`, `-2` for repeats).
Links to other sites, mail addresses and code spans are not checked.
Usage: scripts/doc-links.py [root]; --self-test checks the check."""
import os, re, sys, tempfile

SKIP_DIRS = {".git", "node_modules", "target", ".tools", "test-results", "playwright-report"}
LINK = re.compile(r'(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)|!\[[^\]]*\]\(([^)\s]+)\)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r'`([^`]*)`', r'\1', text)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = text.strip().lower()
    text = ''.join(c for c in text if c.isalnum() or c in ' -_')
    return text.replace(' ', '-')


def without_fences(text):
    """The text with fenced code blocks blanked (keeping their lines)."""
    return re.sub(r'^(```|~~~).*?^\1', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S | re.M)


def without_code(text):
    """The text with fenced blocks and code spans blanked, so links in code are not links."""
    return re.sub(r'`[^`\n]*`', '', without_fences(text))


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        with open(path, encoding='utf-8') as f:
            for line in without_fences(f.read()).splitlines():
                m = HEADING.match(line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                out.add(base if n == 0 else f"{base}-{n}")
        cache[path] = out
    return cache[path]


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            if name.endswith('.md'):
                yield os.path.join(folder, name)


def dead_links(root):
    dead = []
    for path in sorted(markdown_files(root)):
        with open(path, encoding='utf-8') as f:
            text = without_code(f.read())
        for number, line in enumerate(text.splitlines(), 1):
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
                    continue  # http:, https:, mailto: …
                file_part, _, anchor = target.partition('#')
                where = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                shown = f"{os.path.relpath(path, root)}:{number}: {target}"
                if not os.path.exists(where):
                    dead.append(f"{shown} (no such file)")
                elif anchor and where.endswith('.md') and anchor not in anchors(where):
                    dead.append(f"{shown} (no such heading in {os.path.relpath(where, root)})")
    return dead


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, 'docs'))
        with open(os.path.join(root, 'docs', 'a.md'), 'w') as f:
            f.write("# The `/v1` API\n## Limits & errors\n## Limits & errors\n"
                    "[ok](#the-v1-api) [ok](#limits--errors-1) [ok](../README.md#start)\n"
                    "[site](https://example.com/x#y) `[code](nowhere.md)`\n"
                    "```\n[fenced](nowhere.md)\n```\n")
        with open(os.path.join(root, 'README.md'), 'w') as f:
            f.write("# Start\n[gone](docs/b.md) [bad anchor](docs/a.md#nope) ![pic](docs/a.md)\n")
        dead = dead_links(root)
        assert len(dead) == 2, dead
        assert "docs/b.md (no such file)" in dead[0], dead
        assert "docs/a.md#nope (no such heading" in dead[1], dead
    print("doc-links: self-test passed")


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        self_test()
        sys.exit(0)
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    dead = dead_links(root)
    for d in dead:
        print(f"dead link: {d}", file=sys.stderr)
    if dead:
        print(f"doc-links: {len(dead)} dead internal link(s)", file=sys.stderr)
        sys.exit(1)
    print(f"doc-links: every internal link and anchor of {sum(1 for _ in markdown_files(root))} Markdown files resolves")
