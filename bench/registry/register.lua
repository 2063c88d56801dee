-- wrk script: register a new APNs device per request, with a unique 64-hex token (what the iOS SDK sends on
-- first launch). Tokens come from a per-thread counter mixed with the thread id, so no two requests collide.
-- TOKEN_POOL=N: each thread cycles through N tokens instead (after the first pass every request re-registers a known
-- device, what every app launch sends).
local instance = os.getenv("INSTANCE")
local pool = tonumber(os.getenv("TOKEN_POOL") or "")
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  thread_id = tonumber(tid) or 0
end

function request()
  counter = counter + 1
  local token
  if pool and pool > 0 then
    local n = counter % pool
    token = string.format("%016x%016x%016x%016x", thread_id, n, n * 2654435761 % 4294967296, 0)
  else
    token = string.format("%016x%016x%016x%016x", thread_id, counter, counter * 2654435761 % 4294967296, os.time())
  end
  local body = '{"token":"' .. token .. '","bundleIdentifier":"com.example.app","metadata":{"sdkVersion":"4.0.0","iosVersion":"17.0.1"}}'
  return wrk.format("POST", "/device_api/v1/instances/" .. instance .. "/devices/apns",
    {["Content-Type"] = "application/json", ["X-Pusher-Library"] = "push-notifications-swift 4.0.0"}, body)
end

function done(summary, latency, requests)
  io.write(string.format("non-2xx or socket errors: %d\n", summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
