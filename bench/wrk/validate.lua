-- POST /v1/license/validate, rotating over the license hashes in $HASHES_FILE.
local hashes = {}
for line in io.lines(os.getenv("HASHES_FILE")) do hashes[#hashes + 1] = line end
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", "/v1/license/validate",
    { ["X-License-Key-Hash"] = hashes[(i % #hashes) + 1] })
end
