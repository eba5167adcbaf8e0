"""Pressure benchmarks against a running release server (issue 13). Standard library only.

  big:   30 parallel 15 MB pushes from account A (each retried after Retry-After on 503 until
         written) beside account B's single small pushes, one at a time: A's outcomes, B's
         latency percentiles; the server's peak RSS is read by the caller.
  flood: 32 connections posting /auth/signin as fast as they can beside B's single pushes;
         B's latency alone first, then during the flood, and what the flood was answered.

Usage: pressure.py big|flood URL KEY_A KEY_B [SECONDS]
"""

import http.client
import json
import sys
import threading
import time
from urllib.parse import urlparse

mode, url, key_a, key_b = sys.argv[1:5]
seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 15
host = urlparse(url)
stamp = iter(range(10**9))
stamp_lock = threading.Lock()


def scanned_at():
    with stamp_lock:
        n = next(stamp)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + n))


def body(label, findings, message_len):
    finding = {"rule_id": "cis-aws-3.0-1.4", "resource": "arn:aws:iam::123456789012:root",
               "status": "FAIL", "severity": "high", "message": "m" * message_len,
               "remediation": "Delete the root access keys"}
    return json.dumps({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-3.0"], "score": 81.5, "passed": 140, "failed": 12,
        "severity_counts": {"critical": 1, "high": 3, "medium": 5, "low": 3},
        "findings": [finding] * findings, "state_source": "ci", "scanned_at": scanned_at(),
    }).encode()


def post(path, payload, headers, timeout=120):
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=timeout)
    try:
        conn.request("POST", path, body=payload, headers=headers)
        res = conn.getresponse()
        res.read()
        return res.status, res.getheader("Retry-After")
    finally:
        conn.close()


def push(key, payload):
    return post("/v1/dashboard/push", payload,
                {"X-API-Key": key, "Content-Type": "application/json"})


def small_pushes(key, stop, latencies):
    while not stop.is_set():
        payload = body("small", 20, 80)
        started = time.perf_counter()
        status, _ = push(key, payload)
        latencies.append((time.perf_counter() - started) * 1000)
        if status != 201:
            raise SystemExit(f"B's push answered {status}")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def summary(name, latencies):
    return (f"{name}: {len(latencies)} pushes, p50 {pct(latencies, 50):.1f} ms, "
            f"p95 {pct(latencies, 95):.1f} ms, p99 {pct(latencies, 99):.1f} ms, "
            f"max {max(latencies):.1f} ms")


if mode == "big":
    big = body("big", 50_000, 120)
    print(f"big push body: {len(big) / 1e6:.1f} MB, 50,000 findings")
    outcomes = {"201": 0, "503": 0, "other": 0}
    lock = threading.Lock()

    def one_big():
        payload = body("big", 50_000, 120)
        while True:
            status, retry = push(key_a, payload)
            with lock:
                outcomes[str(status) if status in (201, 503) else "other"] += 1
            if status != 503:
                return
            time.sleep(float(retry or 1))

    stop, latencies = threading.Event(), []
    b = threading.Thread(target=small_pushes, args=(key_b, stop, latencies))
    started = time.perf_counter()
    b.start()
    threads = [threading.Thread(target=one_big) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    b.join()
    print(f"A: 30 pushes of 15 MB written in {time.perf_counter() - started:.1f} s; answers: {outcomes}")
    print(summary("B beside them", latencies))
elif mode == "flooder":
    # The flood itself, in a process of its own so that its 32 threads do not hold the GIL
    # against the measuring thread: prints the answers it got as JSON.
    codes, lock, stop = {}, threading.Lock(), threading.Event()

    def flood():
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        while not stop.is_set():
            conn.request("POST", "/auth/signin", body="email=flood%40example.com",
                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                  "Origin": url, "Sec-Fetch-Site": "same-origin"})
            res = conn.getresponse()
            res.read()
            with lock:
                codes[res.status] = codes.get(res.status, 0) + 1

    flooders = [threading.Thread(target=flood) for _ in range(32)]
    for t in flooders:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in flooders:
        t.join()
    print(json.dumps(codes))
elif mode == "flood":
    import subprocess
    alone = []
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    small_pushes(key_b, stop, alone)
    print(summary("B alone", alone))

    flooder = subprocess.Popen([sys.executable, __file__, "flooder", url, key_a, key_b,
                                str(seconds + 2)], stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    during, stop = [], threading.Event()
    threading.Timer(seconds, stop.set).start()
    small_pushes(key_b, stop, during)
    codes = json.loads(flooder.communicate()[0])
    print(summary("B during the flood", during))
    total = sum(codes.values())
    print(f"flood: 32 connections, {total} sign-in requests in {seconds + 2:.0f} s, "
          f"answers {dict(sorted(codes.items()))}")
