# Shared by the package and image tests (sourced): what an operator checks on a fresh install.
# The caller defines `fail MESSAGE` and sets `url` to the server's address.

json_field() { python3 -c 'import json, sys; print(json.loads(sys.stdin.readlines()[-1])[sys.argv[1]])' "$1"; }

wait_ready() {
  for _ in $(seq 200); do
    curl -sf "$url/readyz" >/dev/null && return 0
    sleep 0.1
  done
  fail "$url/readyz never answered 200"
}

# bootstrap_and_push OPERATOR_COMMAND...: a licence made by the operator command given
# (tidemark-admin, or the image's binary under chroot), activated over HTTP, and one scan
# pushed with it. Sets api_key and project_id.
bootstrap_and_push() {
  local license license_hash pushed
  license=$("$@" license create --email "operator-$$@packaging.example" --tier team --json 2>/dev/null) \
    || fail "the operator command could not create a licence"
  license_hash=$(json_field license_key <<<"$license" | tr -d '\n' | sha256sum | cut -d' ' -f1)
  api_key=$(curl -sf -X POST "$url/v1/license/activate" -H "X-License-Key-Hash: $license_hash" \
    -H 'Content-Type: application/json' -d '{"machine": "packaging-test"}' | json_field api_key) \
    || fail "activating the licence failed"
  pushed=$(curl -sf -X POST "$url/v1/dashboard/push" -H "X-API-Key: $api_key" \
    -H 'Content-Type: application/json' -d '{
      "project_label": "packaged", "cloud": "aws", "cloud_account_id": "123456789012",
      "frameworks": ["cis-aws-3.0"], "score": 81.5, "passed": 140, "failed": 1,
      "severity_counts": {"critical": 1, "high": 0, "medium": 0, "low": 0},
      "findings": [{"rule_id": "cis-aws-3.0-1.4", "resource": "arn:aws:iam::123456789012:root",
        "status": "FAIL", "severity": "critical", "message": "Root has access keys",
        "remediation": "Delete the root access keys"}],
      "state_source": "ci", "scanned_at": "2026-11-22T10:15:00Z"}') || fail "the push was refused"
  project_id=$(json_field project_id <<<"$pushed")
}

# The pushed scan's finding, read back with the same API key: the data the push wrote is there.
# (A server given another master key than its data's would not even start: it refuses keys
# that cannot open the verdict-signing key sealed at its first start.)
expect_pushed_finding() {
  local findings
  findings=$(curl -sf "$url/v1/projects/$project_id/findings" -H "X-API-Key: $api_key") \
    || fail "the pushed project's findings could not be read ($1)"
  grep -q '"rule_id":"cis-aws-3.0-1.4"' <<<"$findings" || fail "the pushed finding is gone ($1): $findings"
}
