#!/usr/bin/env python3
"""Fails when a module imports a room its own room may not import.

The rules are the rooms tables of docs/architecture.md, so the page and the check cannot
disagree. A table starts after `<!-- rooms: <crate> -->`; each row names its room's modules
in backticks in the first column (`api/` is the folder, `state` a file of the crate's root)
and, in the last column, the rooms it may import in backticks, or `anything`, or `nothing`.
A room may always import itself; a top-level module in no row is a failure too (every new
module is given a room). Imports are read as scripts/import-circles.py reads them.
Usage: scripts/room-rules.py [--self-test] [architecture.md] [workspace root]"""
import os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rust_modules import modules, strip_tests, refs, resolve

TICKED = re.compile(r'`([^`]+)`')


def read_rules(doc_text):
    """{crate: {room: (set of module names, set of allowed rooms or None for anything)}}"""
    rules, crate = {}, None
    for line in doc_text.splitlines():
        marker = re.match(r'\s*<!--\s*rooms:\s*([\w-]+)\s*-->', line)
        if marker:
            crate = None if marker.group(1) == 'end' else marker.group(1)
            if crate:
                rules[crate] = {}
            continue
        if crate is None:
            continue
        if not line.startswith('|'):
            if line.strip() and rules[crate]:
                crate = None
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 2 or set(cells[0]) <= set('-: '):
            continue
        names = [n.rstrip('/') for n in TICKED.findall(cells[0])]
        if not names:
            continue
        allowed_cell = cells[-1]
        if 'anything' in allowed_cell:
            allowed = None
        else:
            allowed = {n.rstrip('/') for n in TICKED.findall(allowed_cell)}
        rules[crate][names[0]] = (set(names), allowed)
    return rules


def breaches(crate_src, rooms):
    mods = modules(crate_src)
    room_of = {}
    for room, (names, _) in rooms.items():
        for name in names:
            room_of[name] = room
    found = []
    top = lambda m: m.split('::')[0] if m else 'lib'
    for m in sorted(mods):
        if not m:
            continue  # lib.rs/main.rs: the crate's wiring
        if top(m) not in room_of:
            found.append(f"{m}: module `{top(m)}` is in no room of docs/architecture.md")
    for m, path in sorted(mods.items()):
        if not m or top(m) not in room_of:
            continue
        room = room_of[top(m)]
        allowed = rooms[room][1]
        if allowed is None:
            continue
        for r in sorted(refs(strip_tests(open(path).read()))):
            t = resolve(r, mods)
            if t is None or not t:
                continue
            target = room_of.get(top(t))
            if target is None or target == room or target in allowed:
                continue
            found.append(f"{m} -> {t}: `{room}` may import {', '.join(sorted(allowed)) or 'nothing'}")
    return found


def check(doc, root):
    rules = read_rules(open(doc).read())
    if not rules:
        print(f"room-rules: no rooms tables in {doc}")
        return 1
    failed = 0
    for crate, rooms in rules.items():
        src = os.path.join(root, crate, 'src')
        if not os.path.isdir(src):
            print(f"room-rules: {doc} has rooms for {crate}, which has no src/")
            failed += 1
            continue
        for line in breaches(src, rooms):
            print(f"{crate}: {line}")
            failed += 1
    if not failed:
        print(f"room-rules: every import keeps its room's rules ({', '.join(sorted(rules))})")
    return 1 if failed else 0


def self_test():
    """The check must be able to fail: a planted breach, and a module in no room."""
    import subprocess, tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'demo', 'src')
        os.makedirs(os.path.join(src, 'http'))
        files = {
            'lib.rs': 'pub mod api; pub mod http; pub mod state;',
            'api.rs': 'use crate::http::error::ApiError;\nfn f(_: crate::state::State) {}',
            'http/mod.rs': 'pub mod error;',
            'http/error.rs': '/// Made by crate::api\npub struct ApiError;',
            'state.rs': 'pub struct State;',
        }
        for name, text in files.items():
            open(os.path.join(src, name), 'w').write(text)
        doc = os.path.join(d, 'architecture.md')
        table = ('<!-- rooms: demo -->\n| room | may import |\n|---|---|\n'
                 '| `api/` | `http/`, `state` |\n| `http/` | nothing |\n| `state` | anything |\n'
                 '<!-- rooms: end -->\n| `extra` | the table is over: not a room |\n')
        open(doc, 'w').write(table)
        run = lambda: subprocess.run([sys.executable, __file__, doc, d], capture_output=True, text=True)
        clean = run()
        assert clean.returncode == 0, clean.stdout
        open(os.path.join(src, 'http/error.rs'), 'w').write('use crate::api;\npub struct ApiError;')
        planted = run()
        assert planted.returncode == 1 and 'http::error -> api' in planted.stdout, planted.stdout
        open(os.path.join(src, 'http/error.rs'), 'w').write('pub struct ApiError;')
        open(os.path.join(src, 'extra.rs'), 'w').write('pub struct Extra;')
        homeless = run()
        assert homeless.returncode == 1 and '`extra` is in no room' in homeless.stdout, homeless.stdout
    print("room-rules: self-test passed")


if __name__ == '__main__':
    args = sys.argv[1:]
    if args == ['--self-test']:
        self_test()
        sys.exit(0)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    doc = args[0] if args else os.path.join(here, 'docs', 'architecture.md')
    root = args[1] if len(args) > 1 else here
    sys.exit(check(doc, root))
