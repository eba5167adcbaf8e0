-- POST /v1/license/resend for the address in $EMAIL (run once with an address that has a
-- license and once with one that has none; the two must not be told apart by timing).
local body = string.format('{"email":"%s"}', os.getenv("EMAIL"))
request = function()
  return wrk.format("POST", "/v1/license/resend", { ["Content-Type"] = "application/json" }, body)
end
