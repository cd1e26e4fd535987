-- Lists the JS module's storage index (tests/http/js_rpc.rs): the JS
-- runtime has no storageIndexList yet, the Lua one reads the same index.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local objects = nk.storage_index_list("js_players", payload, 100)
  local keys = {}
  for i, o in ipairs(objects) do
    keys[i] = o.key
  end
  table.sort(keys)
  return nk.json_encode(keys)
end, "js_index_keys")
