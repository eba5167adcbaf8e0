"""Storage growth per push (issue 36), against a running tidemark-server.

The workload of the issue: one project with 5,000 findings over 250 rules (100-character
messages, 150-character remediation texts), pushed 20 times, each push changing the status of
50 findings. Prints the time of each push and the database's growth per push after the first
(which stores everything once).

Usage: python3 growth.py URL API_KEY (sqlite FILE | postgres DATABASE_URL) [pushes]
"""

import json
import random
import subprocess
import sqlite3
import sys
import time
import urllib.request

url, key, kind, where = sys.argv[1:5]
pushes = int(sys.argv[5]) if len(sys.argv) > 5 else 20
rng = random.Random(36)


def text(n, seed):
    words = "public bucket access policy allows read write encryption disabled logging missing".split()
    r = random.Random(seed)
    out = ""
    while len(out) < n:
        out += r.choice(words) + " "
    return out[:n]


rules = [f"cis-aws-2.0-{i // 10}.{i % 10}" for i in range(250)]
findings = []
for i in range(5000):
    rule = rules[i % 250]
    findings.append({
        "rule_id": rule,
        "resource": f"aws_s3_bucket.storage_{i:05d}",
        "status": "FAIL" if rng.random() < 0.3 else "PASS",
        "severity": ["critical", "high", "medium", "low"][i % 4],
        "message": text(100, rule),
        "remediation": text(150, rule + "/fix"),
    })


def used_bytes():
    if kind == "sqlite":
        db = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
        pages, free, size = (db.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_count", "freelist_count", "page_size"))
        db.close()
        return (pages - free) * size
    out = subprocess.run(["psql", "-qXAt", where, "-c", "SELECT pg_database_size(current_database())"],
                         check=True, capture_output=True, text=True).stdout
    return int(out.strip())


def push(n):
    body = json.dumps({
        "project_label": "storage", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": 60 + n % 10, "passed": 100, "failed": 50,
        "severity_counts": {"critical": 1, "high": 2, "medium": 3, "low": 4},
        "findings": findings, "state_source": "ci",
        "scanned_at": f"2026-11-22T10:{n // 60:02d}:{n % 60:02d}Z",
        "git": {"branch": "main", "default_branch": "main"},
    }).encode()
    req = urllib.request.Request(f"{url}/v1/dashboard/push", data=body, method="POST",
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as res:
        res.read()
        assert res.status == 201, res.status
    return (time.perf_counter() - start) * 1000


first_ms = push(0)
time.sleep(0.2)
before = used_bytes()
times = []
for n in range(1, pushes + 1):
    for i in rng.sample(range(len(findings)), 50):
        findings[i]["status"] = "PASS" if findings[i]["status"] == "FAIL" else "FAIL"
    times.append(push(n))
time.sleep(0.2)
after = used_bytes()
times.sort()
per_push = (after - before) / pushes / 1024
print(f"first push (stores all 5,000): {first_ms:.0f} ms")
print(f"{pushes} pushes changing 50 statuses: median {times[len(times) // 2]:.0f} ms, "
      f"slowest {times[-1]:.0f} ms")
print(f"growth per push: {per_push:.1f} KiB ({kind}); per year at 50 pushes a day: "
      f"{per_push * 50 * 365 / 1024 / 1024:.2f} GiB")
