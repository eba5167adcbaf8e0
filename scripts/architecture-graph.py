#!/usr/bin/env python3
"""The workspace's crates and which may import which, drawn as a Mermaid graph from
`cargo metadata` (normal dependencies; dev-dependencies are tests' business).

  scripts/architecture-graph.py                 print the graph
  scripts/architecture-graph.py --write FILE    replace the block between the markers in FILE
  scripts/architecture-graph.py --check FILE    fail when FILE's block is not the graph of now

`make test` runs --check on docs/architecture.md, so the drawing cannot go stale."""
import json, subprocess, sys

BEGIN, END = "<!-- crate-graph: begin (scripts/architecture-graph.py --write) -->", "<!-- crate-graph: end -->"

def graph():
    meta = json.loads(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"],
                                     check=True, capture_output=True, text=True).stdout)
    names = sorted(p["name"] for p in meta["packages"])
    lines = ["```mermaid", "graph LR"]
    for p in sorted(meta["packages"], key=lambda p: p["name"]):
        deps = sorted({d["name"] for d in p["dependencies"] if d["name"] in names and d.get("kind") is None})
        for d in deps:
            lines.append(f"    {p['name'].replace('-', '_')}[{p['name']}] --> {d.replace('-', '_')}[{d}]")
    lines.append("```")
    return "\n".join(lines)

def block_of(text):
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f"architecture-graph: no {BEGIN} … {END} block")
    return start + len(BEGIN), end

args = sys.argv[1:]
if not args:
    print(graph())
elif args[0] in ("--write", "--check") and len(args) == 2:
    text = open(args[1]).read()
    start, end = block_of(text)
    drawn = "\n" + graph() + "\n"
    if args[0] == "--write":
        open(args[1], "w").write(text[:start] + drawn + text[end:])
    elif text[start:end] != drawn:
        sys.exit(f"architecture-graph: {args[1]}'s crate graph is stale; run scripts/architecture-graph.py --write {args[1]}")
    else:
        print(f"architecture-graph: {args[1]} draws the crates as they are")
else:
    sys.exit(__doc__)
