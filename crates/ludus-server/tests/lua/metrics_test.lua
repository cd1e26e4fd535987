-- nk.metrics_counter_add|gauge_set|timer_record, for tests/http/lua_metrics.rs.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  nk.metrics_counter_add("lua_logins", { mode = "test" }, 2)
  nk.metrics_counter_add("lua_logins", { mode = "test" }, 3)
  nk.metrics_gauge_set("lua_queue", nil, 7.5)
  nk.metrics_timer_record("lua_work", {}, 2000000)
  local ok, e = pcall(nk.metrics_counter_add, "lua_bad", { mode = 1 }, 1)
  return nk.json_encode({ bad_tags = tostring(e) })
end, "lua_metrics")
