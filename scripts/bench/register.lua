-- wrk script: registers a new device on every request.
-- Each wrk thread numbers its own devices, so ids never repeat within a run;
-- RUN (an env var) keeps runs against the same database apart.
local counter = 0
local thread_id = 0
local run = os.getenv("RUN") or tostring(os.time())

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function request()
  counter = counter + 1
  local body = string.format('{"id":"bench-%s-%d-%d"}', run, thread_id, counter)
  return wrk.format("POST", "/v2/account/authenticate/device", {
    ["Authorization"] = "Basic ZGVmYXVsdGtleTo=",
    ["Content-Type"] = "application/json",
  }, body)
end
