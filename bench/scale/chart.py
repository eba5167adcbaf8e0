#!/usr/bin/env python3
"""The scale benchmark's figures as a Markdown table and an SVG chart (issue 48).

    bench/scale/chart.py scale-sqlite.jsonl scale-pg.jsonl --svg docs/img/scale-curves.svg

Reads the JSON lines `scale-bench` prints (one per backend and size) and prints the table of
docs/benchmarks.md; with --svg, also draws each page's p95 against N (log scale), one panel
per backend, with the 100 ms goal marked. Only the standard library: nothing to install.
"""

import argparse
import json
import math
import sys

PAGES = [
    ("overview", "/projects (overview)"),
    ("project_all", "project page, range all"),
    ("project_90d", "project page, 90 days"),
    ("scan", "scan page"),
    ("finding", "finding page"),
    ("v1_findings", "/v1 findings, first page"),
    ("v1_findings_page_50", "/v1 findings, page 50"),
    ("push_ms", "push (2,000 findings)"),
]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"]
GOAL_MS = 100.0


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows.extend(json.loads(line) for line in f if line.strip().startswith("{"))
    return rows


def latest(rows):
    """The last line for each backend and size: a later file re-measures what an earlier one
    had (the table and the chart both show only the later figure)."""
    return list({(r["backend"], r["projects"]): r for r in rows}.values())


def table(rows):
    sizes = sorted({r["projects"] for r in rows})
    backends = sorted({r["backend"] for r in rows}, reverse=True)
    cols = [(b, n) for b in backends for n in sizes]
    by = {(r["backend"], r["projects"]): r for r in rows}
    head = "| measure | " + " | ".join(f"{b} N = {n:,}" for b, n in cols) + " |"
    out = [head, "|---" * (len(cols) + 1) + "|"]

    def cell(b, n, f):
        r = by.get((b, n))
        return f(r) if r else "–"

    out.append("| database size | " + " | ".join(
        cell(b, n, lambda r: f"{r['db_bytes'] / 2**20:,.0f} MiB") for b, n in cols) + " |")
    out.append("| scans stored | " + " | ".join(
        cell(b, n, lambda r: f"{r['scans']:,}") for b, n in cols) + " |")
    for key, name in PAGES:
        q = "p50 / p99" if key == "push_ms" else "p50 / p95"
        hi = "p99" if key == "push_ms" else "p95"
        out.append(f"| {name}, {q} (ms) | " + " | ".join(
            cell(b, n, lambda r: f"{r[key]['p50']:.1f} / {r[key][hi]:.1f}") for b, n in cols) + " |")
    out.append("| housekeeping pass, catching up / the next (s) | " + " | ".join(
        cell(b, n, lambda r: f"{r['housekeeping_s']:.1f} / {r['housekeeping_again_s']:.1f}")
        for b, n in cols) + " |")
    return "\n".join(out)


def svg(rows):
    backends = sorted({r["backend"] for r in rows}, reverse=True)
    sizes = sorted({r["projects"] for r in rows})
    top = max([GOAL_MS * 1.5] + [r[k]["p95"] for r in rows for k, _ in PAGES if k in r])
    w, h, pad, legend = 360, 260, 48, 200
    width = len(backends) * (w + pad) + legend
    x0 = math.log10(min(sizes)) - 0.15
    x1 = math.log10(max(sizes)) + 0.15
    y1 = math.log10(top) + 0.1
    y0 = math.log10(min([1.0] + [r[k]["p95"] for r in rows for k, _ in PAGES if k in r])) - 0.1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h + 2 * pad}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{h + 2 * pad}" fill="white"/>']
    for i, backend in enumerate(backends):
        ox = pad + i * (w + pad)

        def px(n):
            return ox + (math.log10(n) - x0) / (x1 - x0) * w

        def py(ms):
            return pad + h - (math.log10(max(ms, 0.1)) - y0) / (y1 - y0) * h

        parts.append(f'<text x="{ox + w / 2}" y="{pad - 20}" text-anchor="middle" '
                     f'font-size="13" font-weight="bold">{backend}: p95 against projects</text>')
        parts.append(f'<rect x="{ox}" y="{pad}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
        for n in sizes:
            parts.append(f'<line x1="{px(n):.1f}" y1="{pad + h}" x2="{px(n):.1f}" y2="{pad + h + 4}" stroke="#999"/>'
                         f'<text x="{px(n):.1f}" y="{pad + h + 16}" text-anchor="middle">{n:,}</text>')
        for ms in [1, 10, 100, 1000, 10000]:
            if y0 <= math.log10(ms) <= y1:
                parts.append(f'<line x1="{ox}" y1="{py(ms):.1f}" x2="{ox + w}" y2="{py(ms):.1f}" stroke="#eee"/>'
                             f'<text x="{ox - 4}" y="{py(ms) + 4:.1f}" text-anchor="end">{ms:,} ms</text>')
        parts.append(f'<line x1="{ox}" y1="{py(GOAL_MS):.1f}" x2="{ox + w}" y2="{py(GOAL_MS):.1f}" '
                     f'stroke="#c00" stroke-dasharray="5,3"/>'
                     f'<text x="{ox + w - 4}" y="{py(GOAL_MS) - 4:.1f}" text-anchor="end" fill="#c00">goal: 100 ms</text>')
        for (key, _), colour in zip(PAGES, COLOURS):
            points = sorted((r["projects"], r[key]["p95"]) for r in rows
                            if r["backend"] == backend and key in r)
            if not points:
                continue
            path = " ".join(f"{px(n):.1f},{py(ms):.1f}" for n, ms in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for n, ms in points:
                parts.append(f'<circle cx="{px(n):.1f}" cy="{py(ms):.1f}" r="3" fill="{colour}"/>')
    lx = len(backends) * (w + pad) + 10
    for j, ((_, name), colour) in enumerate(zip(PAGES, COLOURS)):
        y = pad + 10 + j * 18
        parts.append(f'<rect x="{lx}" y="{y - 8}" width="12" height="3" fill="{colour}"/>'
                     f'<text x="{lx + 18}" y="{y - 3}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", nargs="+")
    parser.add_argument("--svg")
    args = parser.parse_args()
    rows = latest(load(args.jsonl))
    if not rows:
        sys.exit("chart: no figures in " + ", ".join(args.jsonl))
    print(table(rows))
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg(rows) + "\n")


if __name__ == "__main__":
    main()
