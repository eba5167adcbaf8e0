#!/usr/bin/env bash
# Copies the dashboard pictures the Playwright suite takes of the demo account
# (end2end/screens/, written by tests/demo.spec.ts in the first phase) to docs/screens/, quantised to 128 colours when Pillow is installed (a third of the size),
# as they are otherwise. Run after `make test` or scripts/e2e.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
src=end2end/screens
[ -d "$src" ] || { echo "docs-screens: no $src: run the browser tests first" >&2; exit 1; }
mkdir -p docs/screens
python3 - "$src" docs/screens <<'PY'
import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
try:
    from PIL import Image
except ImportError:
    Image = None
for name in sorted(os.listdir(src)):
    if not name.endswith(".png"):
        continue
    out = os.path.join(dst, name)
    if Image is None:
        shutil.copyfile(os.path.join(src, name), out)
    else:
        Image.open(os.path.join(src, name)).convert("RGB").quantize(colors=128).save(out, optimize=True)
    print(f"docs-screens: {out} ({os.path.getsize(out)} bytes)")
PY
