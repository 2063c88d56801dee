-- wrk script for the soak benchmark's abuser: only the anonymous routes (no secret), with a fixed pacing per
-- connection (delay() below) so that connections × 1000 / ABUSE_DELAY_MS ≈ the target rate. Each request is one of:
-- a junk registration (new random token), 50 new interests for a random device id, a forged reporting event,
-- or an odd method / random path. The non-2xx count (429s past the limits, 4xx for junk) is printed at the end.
local instance = os.getenv("INSTANCE")
local delay_ms = tonumber(os.getenv("ABUSE_DELAY_MS") or "10")
local n = 0
local tid = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  tid = tonumber(tid) or 0
  math.randomseed(os.time() * 1000 + tid)
end

function delay()
  return delay_ms
end

local function hex(nbytes)
  local t = {}
  for i = 1, nbytes do t[i] = string.format("%02x", math.random(0, 255)) end
  return table.concat(t)
end

local device_base = "/device_api/v1/instances/" .. instance .. "/devices/apns"
local methods = {"PROPFIND", "BREW", "XYZZY", "M" .. string.rep("X", 200), "TRACE"}

function request()
  n = n + 1
  local kind = n % 4
  if kind == 0 then
    local body = '{"token":"' .. hex(32) .. '","bundleIdentifier":"com.evil.app"}'
    return wrk.format("POST", device_base, {["Content-Type"] = "application/json"}, body)
  elseif kind == 1 then
    local names = {}
    for i = 1, 50 do names[i] = '"junk-' .. hex(6) .. '"' end
    local body = '{"interests":[' .. table.concat(names, ",") .. ']}'
    return wrk.format("PUT", device_base .. "/apns-" .. hex(8) .. "/interests", {["Content-Type"] = "application/json"}, body)
  elseif kind == 2 then
    local body = '{"event":"Open","publishId":"pubid-' .. hex(8) .. '","deviceId":"apns-' .. hex(8) ..
      '","userId":"victim-' .. hex(4) .. '","timestampSecs":' .. (os.time() + 86400 * 365) .. '}'
    return wrk.format("POST", "/reporting_api/v2/instances/" .. instance .. "/events",
      {["Content-Type"] = "application/json"}, body)
  else
    return wrk.format(methods[math.floor(n / 4) % #methods + 1], "/" .. hex(12), {}, nil)
  end
end

function done(summary, latency, requests)
  io.write(string.format("abuser: %d requests in %.1f s (%.0f/s), non-2xx %d, socket errors %d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6), summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
