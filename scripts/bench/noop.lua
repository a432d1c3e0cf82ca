-- wrk script: the same kind of body as a single registration, to the no-op route.
local body = string.format('{"MobileAppId":"%s","UserId":"user-1","ApiToken":"%s","ApnsDeviceToken":"%064x"}',
  os.getenv("BENCH_APP"), os.getenv("BENCH_TOKEN"), 1)
request = function()
  return wrk.format("POST", "/noop", {["Content-Type"] = "application/json"}, body)
end
