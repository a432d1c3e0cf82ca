-- wrk script: seed 000 registrations with a different user and device token on every request.
-- BATCH (env) = registrations per request: 1 → POST …/devices, n > 1 → POST …/devices/batch.
local org = os.getenv("BENCH_ORG")
local app = os.getenv("BENCH_APP")
local token = os.getenv("BENCH_TOKEN")
local batch = tonumber(os.getenv("BATCH") or "1")
local counter = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

local function registration(n)
  return string.format('{"MobileAppId":"%s","UserId":"user-%d","ApiToken":"%s","ApnsDeviceToken":"%064x"}',
    app, n % 100000, token, n)
end

request = function()
  counter = counter + 1
  local base = (thread_id * 100000000) + counter * batch
  local body
  local path
  if batch == 1 then
    body = registration(base)
    path = "/api/v1.0/orgs/" .. org .. "/pushdeviceregistration/devices"
  else
    local items = {}
    for i = 1, batch do items[i] = registration(base + i) end
    body = "[" .. table.concat(items, ",") .. "]"
    path = "/api/v1.0/orgs/" .. org .. "/pushdeviceregistration/devices/batch"
  end
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
