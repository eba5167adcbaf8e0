"""The stateful half of the schema tests: one license's life through /v1, every response
checked by schemathesis against /v1/openapi.json (status code, content type, headers, body
schema) and against what the contract says should happen next.

activate -> push -> replay (byte-identical, and spelled differently) -> second push ->
suspend (operator command) -> push, activate and validate refused -> resume -> push again.

Usage: scenario.py URL LICENSE_HASH LICENSE_ID SERVER_COMMAND...
"""

import json
import subprocess
import sys
import time

import schemathesis
from schemathesis.specs.openapi.checks import ignored_auth

url, license_hash, license_id, server = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
schema = schemathesis.openapi.from_url(f"{url}/v1/openapi.json")
steps = 0


def call(method, path, expect, headers=None, body=None, raw=None):
    """One request, validated by every schemathesis response check, then by `expect`."""
    global steps
    steps += 1
    operation = schema[path][method]
    headers = dict(headers or {})
    if raw is not None:
        # A body the generator would never spell this way (whole numbers written as floats).
        headers["Content-Type"] = "application/json"
        case = operation.Case(headers=headers, media_type="application/json")
        response = case.call(base_url=url, data=raw)
    else:
        case = operation.Case(headers=headers, body=body, media_type="application/json")
        response = case.call(base_url=url)
    # The contract answers a missing license hash with 400 invalid_license_hash, where this
    # check wants 401 or 403 (schemathesis.toml turns it off for the same operations).
    license_auth = "X-License-Key-Hash" in headers
    case.validate_response(response, excluded_checks=[ignored_auth] if license_auth else None)
    if response.status_code != expect:
        sys.exit(f"step {steps}: {method} {path}: expected {expect}, got "
                 f"{response.status_code} {response.text}")
    return response.json()


def download(path, params, expect, content_type=None):
    """A GET of an export, validated like `call`; returns the response."""
    global steps
    steps += 1
    case = schema[path]["GET"].Case(path_parameters=params, headers=key_header)
    response = case.call(base_url=url)
    case.validate_response(response)
    got = response.headers.get("content-type", "")
    got = got[0] if isinstance(got, list) else got  # schemathesis keeps each header's values
    if response.status_code != expect or (content_type and not got.startswith(content_type)):
        sys.exit(f"step {steps}: GET {path}: expected {expect} {content_type}, got "
                 f"{response.status_code} {got} {response.text[:200]}")
    return response


def operator(*args):
    subprocess.run([*server, *args], check=True, stdout=subprocess.DEVNULL)


hash_header = {"X-License-Key-Hash": license_hash}
key = call("POST", "/v1/license/activate", 201, hash_header, {"machine": "schemathesis"})["api_key"]
key_header = {"X-API-Key": key}

push = {
    "project_label": "schema-scenario",
    "cloud": "aws",
    "cloud_account_id": "123456789012",
    "frameworks": ["cis-aws-3.0"],
    "score": 81.5,
    "passed": 140,
    "failed": 12,
    "severity_counts": {"critical": 1, "high": 3, "medium": 5, "low": 3},
    "findings": [{
        "rule_id": "cis-aws-3.0-1.4", "resource": "arn:aws:iam::123456789012:root",
        "status": "FAIL", "severity": "critical", "message": "Root has access keys",
        "remediation": "Delete the root access keys",
    }],
    "state_source": "ci",
    "scanned_at": "2026-11-22T10:15:00Z",
}
first = call("POST", "/v1/dashboard/push", 201, key_header, push)
if first["score_delta"] != 0:
    sys.exit(f"the first scan's delta is {first['score_delta']}, not 0")

replay = call("POST", "/v1/dashboard/push", 201, key_header, push)
if replay != first:
    sys.exit(f"a replay answered {replay}, not the original {first}")
spelled = json.dumps(push).replace('"passed": 140', '"passed": 140.0')
if call("POST", "/v1/dashboard/push", 201, key_header, raw=spelled) != first:
    sys.exit("the same JSON value with a count spelled 140.0 was not a replay")

second = call("POST", "/v1/dashboard/push", 201, key_header,
              {**push, "score": 90.0, "scanned_at": "2026-11-22T11:15:00Z"})
if second["scan_id"] == first["scan_id"] or second["score_delta"] != 8.5:
    sys.exit(f"the second scan {second} did not follow the first {first}")

scan = {"project_id": second["project_id"], "scan_id": second["scan_id"]}
project = {"project_id": second["project_id"]}
sarif = download("/v1/projects/{project_id}/scans/{scan_id}/findings.sarif", scan, 200,
                 "application/sarif+json").json()
if sarif["version"] != "2.1.0" or sarif["runs"][0]["results"][0]["ruleId"] != "cis-aws-3.0-1.4":
    sys.exit(f"the SARIF export is not the scan's: {sarif}")
findings = download("/v1/projects/{project_id}/scans/{scan_id}/findings.csv", scan, 200,
                    "text/csv").text.splitlines()
if findings[0] != "rule_id,resource,status,severity,message,remediation" or len(findings) != 2:
    sys.exit(f"the CSV export is not the scan's findings: {findings}")
history = download("/v1/projects/{project_id}/history.csv", project, 200, "text/csv").text
if [line.split(",")[2] for line in history.splitlines()[1:]] != ["81.5", "90"]:
    sys.exit(f"the history export is not the two scans: {history}")

operator("license", "suspend", "--id", license_id)
download("/v1/projects/{project_id}/history.csv", project, 403)
refused = call("POST", "/v1/dashboard/push", 403, key_header,
               {**push, "scanned_at": "2026-11-22T12:15:00Z"})
if refused["error"] != "license_inactive":
    sys.exit(f"a suspended license's push answered {refused}")
# validate may answer from memory for TIDEMARK_VALIDATION_CACHE_MS (2 s by default).
deadline = time.monotonic() + 3
while call("POST", "/v1/license/validate", 200, hash_header)["valid"] is not False:
    if time.monotonic() > deadline:
        sys.exit("a suspended license still validated 3 s after the suspension")
    time.sleep(0.2)
call("POST", "/v1/license/activate", 403, hash_header, {"machine": "after-suspension"})

operator("license", "resume", "--id", license_id)
third = call("POST", "/v1/dashboard/push", 201, key_header,
             {**push, "scanned_at": "2026-11-22T12:15:00Z"})
if third["scan_id"] in (first["scan_id"], second["scan_id"]):
    sys.exit("the push after resuming did not append")

print(f"schema scenario: {steps} steps, every response conforms to /v1/openapi.json")
