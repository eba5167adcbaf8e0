"""A crate's modules (files) and the `crate::…` paths each one imports, as the import checks
read them (scripts/import-circles.py, scripts/room-rules.py)."""
import os, re

def modules(src):
    mods = {}
    for d, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'): continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] == 'mod': rel = rel[:-1]
            if rel in (['lib'], ['main']): rel = []
            mods['::'.join(rel)] = path
    return mods

def strip_tests(text):
    # Drop `#[cfg(test)] mod tests { ... }` blocks: test code may import anything.
    out, i = [], 0
    for m in re.finditer(r'#\[cfg\((?:all\()?test[^\]]*\]\s*mod\s+\w+\s*\{', text):
        if m.start() < i: continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {'{': 1, '}': -1}.get(text[j], 0); j += 1
        i = j
    out.append(text[i:])
    return ''.join(out)

def refs(text):
    # Comments (doc comments too) name modules without importing them.
    text = re.sub(r'(?m)^\s*//.*$', '', text)
    found = set()
    for m in re.finditer(r'\bcrate((?:::\w+)+)', text):
        found.add(m.group(1)[2:])
    for m in re.finditer(r'\buse\s+crate::\{([^;]*)\};', text, re.S):
        for part in re.split(r',\s*(?![^{]*\})', m.group(1)):
            part = part.strip()
            name = re.match(r'(\w+(?:::\w+)*)', part)
            if name: found.add(name.group(1))
    return found

def resolve(path, mods):
    parts = path.split('::')
    for n in range(len(parts), 0, -1):
        cand = '::'.join(parts[:n])
        if cand in mods: return cand
    return None
