-- wrk script: registers login-device-0 .. COUNT-1 in order, then keeps
-- cycling (those later requests are plain logins).
local count = tonumber(os.getenv("COUNT") or "10000")
local i = -1

function request()
  i = (i + 1) % count
  local body = string.format('{"id":"login-device-%d"}', i)
  return wrk.format("POST", "/v2/account/authenticate/device", {
    ["Authorization"] = "Basic ZGVmYXVsdGtleTo=",
    ["Content-Type"] = "application/json",
  }, body)
end
