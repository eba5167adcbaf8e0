-- POST /v1/license/resend for the address in $EMAIL (run with an address that has a license
-- and with one that has none; the two must not be told apart by timing). Each request comes
-- from its own client address (X-Forwarded-For behind a trusted proxy), so the per-IP window
-- stays the same size in every run.
local body = string.format('{"email":"%s"}', os.getenv("EMAIL"))
local counter = 0
thread_id = 0
local next_id = 0
setup = function(thread)
  next_id = next_id + 1
  thread:set("thread_id", next_id)
end
request = function()
  counter = counter + 1
  local ip = string.format("10.%d.%d.%d", thread_id + 10 * (tonumber(os.getenv("RUN") or "0")),
    math.floor(counter / 256) % 256, counter % 256)
  return wrk.format("POST", "/v1/license/resend",
    { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = ip }, body)
end
