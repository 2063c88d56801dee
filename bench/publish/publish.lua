-- wrk script: POST a Beams interests publish (secret and instance from the environment).
local instance = os.getenv("INSTANCE")
local secret = os.getenv("SECRET")
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
wrk.method = "POST"
wrk.path = "/publish_api/v1/instances/" .. instance .. "/publishes/interests"
wrk.headers["Authorization"] = "Bearer " .. secret
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"interests":["intake-bench"],"apns":{"aps":{"alert":{"title":"Hello","body":"Intake benchmark"}}}}'

function delay()
  return delay_ms
end

local non200 = 0
function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

function done(summary, latency, requests)
  io.write(string.format("non-2xx or socket errors: %d\n", summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
