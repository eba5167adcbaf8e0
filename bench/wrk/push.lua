-- POST /v1/dashboard/push with $FINDINGS findings per body, rotating over the API keys in
-- $KEYS_FILE (one account each, so the per-account write limit is not what is measured).
-- Every body has its own scanned_at, so none is a replay.
local keys = {}
for line in io.lines(os.getenv("KEYS_FILE")) do keys[#keys + 1] = line end
local n = tonumber(os.getenv("FINDINGS") or "50")
local parts = {}
for f = 1, n do
  parts[#parts + 1] = string.format(
    '{"rule_id":"cis-gcp-2.0-%d","resource":"google_compute_instance.web_%d","status":"FAIL",' ..
    '"severity":"high","message":"Instance uses the default service account",' ..
    '"remediation":"Attach a dedicated service account with least privilege"}', f, f)
end
local findings = table.concat(parts, ",")
local template = '{"project_label":"bench","cloud":"gcp","cloud_account_id":"acme-prod",' ..
  '"frameworks":["cis-gcp-2.0"],"score":%.2f,"passed":100,"failed":%d,' ..
  '"severity_counts":{"critical":1,"high":2,"medium":3,"low":4},"findings":[' .. findings ..
  '],"state_source":"ci","scanned_at":"%s"}'

local counter = 0
-- Set per thread by setup(); must be a global for thread:set() to reach it.
thread_offset = 0
local next_offset = 0
setup = function(thread)
  next_offset = next_offset + 1
  thread:set("thread_offset", next_offset * 10000000)
end

request = function()
  counter = counter + 1
  local t = 1700000000 + thread_offset + counter
  local body = string.format(template, (counter * 7) % 100, n, os.date("!%Y-%m-%dT%H:%M:%SZ", t))
  return wrk.format("POST", "/v1/dashboard/push",
    { ["Content-Type"] = "application/json", ["X-API-Key"] = keys[(counter % #keys) + 1] }, body)
end
