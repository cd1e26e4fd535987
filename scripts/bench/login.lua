-- wrk script: signs in existing devices, cycling through COUNT devices that
-- `scripts/bench-auth` registered beforehand as login-<i>.
local count = tonumber(os.getenv("COUNT") or "10000")
local i = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function request()
  i = i + 1
  local n = (thread_id * 7919 + i) % count
  local body = string.format('{"id":"login-device-%d"}', n)
  return wrk.format("POST", "/v2/account/authenticate/device?create=false", {
    ["Authorization"] = "Basic ZGVmYXVsdGtleTo=",
    ["Content-Type"] = "application/json",
  }, body)
end
