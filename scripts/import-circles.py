#!/usr/bin/env python3
"""Fails on an import circle between the modules (files) of any crate of the workspace.

A module's imports are its `crate::a::b…` paths (in `use` lines or written in place), each
resolved to the longest module file that exists; test modules and comments do not count, nor
does a parent declaring its children. A circle is a strongly connected group of two or more
modules, printed with its edges. Usage: scripts/import-circles.py [workspace root]
(issue 46; docs/architecture.md says which room may import which)."""
import os, re, sys, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rust_modules import modules, strip_tests, refs, resolve
def self_test():
    """The check must be able to fail: a crate with a circle (and one with only a parent using
    its child and a doc comment naming a module) is judged as it should be."""
    import subprocess, tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'demo', 'src')
        os.makedirs(os.path.join(src, 'web'))
        files = {
            'lib.rs': 'pub mod state; pub mod web;',
            'state.rs': 'use crate::web::metrics::Metrics;\npub struct State;',
            'web/mod.rs': 'pub mod metrics;\nuse crate::web::metrics::Metrics;',
            'web/metrics.rs': '/// See crate::web\npub struct Metrics;\nfn f(_: &crate::state::State) {}',
        }
        for name, text in files.items():
            open(os.path.join(src, name), 'w').write(text)
        run = lambda: subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
        found = run()
        assert found.returncode == 1 and 'state -> web::metrics' in found.stdout, found.stdout
        open(os.path.join(src, 'web/metrics.rs'), 'w').write('/// See crate::state\npub struct Metrics;')
        clean = run()
        assert clean.returncode == 0, clean.stdout
    print("import-circles: self-test passed")

if sys.argv[1:] == ['--self-test']:
    self_test()
    sys.exit(0)
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
crates = {}
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if os.path.isdir(src):
        crates[crate] = src

total = 0
for crate, src in crates.items():
    mods = modules(src)
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        text = strip_tests(open(path).read())
        for r in refs(text):
            t = resolve(r, mods)
            if t is None or t == m:
                continue
            # A parent using its own children is wiring (its `mod` lines), not an import back.
            if m == '' or t.startswith(m + '::'):
                continue
            edges[m].add(t)
    # Tarjan SCC
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index: strong(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: sccs.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index: strong(v)
    for comp in sccs:
        total += 1
        print(f"{crate}: circle among {', '.join(comp)}")
        for a in comp:
            for b in sorted(edges[a] & set(comp)):
                print(f"    {a} -> {b}")
if total == 0:
    print(f"import-circles: none in {len(crates)} crates")
sys.exit(1 if total else 0)
