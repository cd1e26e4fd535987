-- The Lua half of tests/ws/js_match.rs: a Lua RPC that creates a match
-- registered in JS, and a Lua match module that JS creates.
local nk = require("nakama")

nk.register_rpc(function(context, payload)
  return nk.match_create("js_arena", { mode = "from lua" })
end, "lua_create_js")

return {}
