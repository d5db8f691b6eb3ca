-- wrk script: POST the body in $BODY_FILE to /v1/score; with $DELAY_MS, each connection waits
-- that long before each request (a fixed request rate = connections * 1000 / DELAY_MS).
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("API_KEY")
if key and key ~= "" then wrk.headers["Authorization"] = "Bearer " .. key end
local d = tonumber(os.getenv("DELAY_MS") or "0")
if d > 0 then
  function delay() return d end
end
local statuses = {}
function response(status, headers, body)
  if status ~= 200 then statuses[status] = (statuses[status] or 0) + 1 end
end
