-- wrk script: seed 000 registrations with a different user and device token on every request.
-- BATCH (env) = registrations per request: 1 → POST …/devices, n > 1 → POST …/devices/batch.
-- ROUTE (env) = "bw-device": PUT /bwmi/v1/apps/{app}/devices instead (a BW registration, Bearer
-- token); "send": POST /v1/apps/{app}/notifications, a notification to one user; "send-keyed": the
-- same with a new Idempotency-Key on every request (each is a first send); "tags": POST
-- /v1/apps/{app}/devices/changes/batch, BATCH changes each adding a tag to a user's devices.
-- FORGED (env) = "distinct": every request presents a new made-up API token (in the body, or as
-- the Bearer token of "bw-device"); "one": all present the same made-up token.
-- RATE and CONNS (env): each of the CONNS connections waits CONNS/RATE seconds before each request,
-- so that the run offers about RATE requests/s (wrk has no fixed-rate mode).
local org = os.getenv("BENCH_ORG")
local app = os.getenv("BENCH_APP")
local token = os.getenv("BENCH_TOKEN")
local batch = tonumber(os.getenv("BATCH") or "1")
local route = os.getenv("ROUTE") or "registration"
local forged = os.getenv("FORGED") or ""
local bearer = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. (token or "")}
local counter = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

-- The token request n presents.
local function presented(n)
  if forged == "distinct" then return string.format("forged-%d", n) end
  if forged == "one" then return "forged" end
  return token
end

local function registration(n)
  return string.format('{"MobileAppId":"%s","UserId":"user-%d","ApiToken":"%s","ApnsDeviceToken":"%064x"}',
    app, n % 100000, presented(n), n)
end

local rate = tonumber(os.getenv("RATE") or "0")
if rate > 0 then
  local pause = 1000 * tonumber(os.getenv("CONNS")) / rate
  delay = function() return pause end
end

request = function()
  counter = counter + 1
  local base = (thread_id * 100000000) + counter * batch
  local body
  local path
  if route == "bw-device" then
    body = string.format('{"deviceId":"%064x","type":"IOS","user":{"email":"user-%d@example.com"}}', base, base % 100000)
    local headers = {["Content-Type"] = bearer["Content-Type"], ["Authorization"] = "Bearer " .. presented(base)}
    return wrk.format("PUT", "/bwmi/v1/apps/" .. app .. "/devices", headers, body)
  elseif route == "send" or route == "send-keyed" then
    body = string.format('{"userId":"user-%d","title":"Bench","body":"Notification %d","custom":{"k":"v"}}', base % 100000, base)
    -- Both build the same headers, so that wrk spends the same on each: only the name differs.
    local name = route == "send-keyed" and "Idempotency-Key" or "X-Bench-Key"
    local headers = {["Content-Type"] = bearer["Content-Type"], ["Authorization"] = bearer["Authorization"],
                     [name] = string.format("bench-%d", base)}
    return wrk.format("POST", "/v1/apps/" .. app .. "/notifications", headers, body)
  elseif route == "tags" then
    local items = {}
    for i = 1, batch do items[i] = string.format('{"userId":"user-%d","tags":{"add":["team-%d"]}}', (base + i) % 100000, (base + i) % 20) end
    body = '{"changes":[' .. table.concat(items, ",") .. ']}'
    return wrk.format("POST", "/v1/apps/" .. app .. "/devices/changes/batch", bearer, body)
  elseif batch == 1 then
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
