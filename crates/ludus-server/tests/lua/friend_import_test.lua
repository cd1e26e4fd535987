-- The `import_friends` argument of nk.authenticate_steam and
-- nk.link_facebook, driven by tests/http/friend_import.rs through the
-- `lua_friend_import` RPC: each entry of the answer counts the friends the
-- signed-in player has afterwards.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local out = {}
  local function count(user_id)
    local friends = nk.friends_list(user_id, 100)
    return #friends
  end
  local imported = nk.authenticate_steam(p.steam, nil, "luasteam800")
  out.steam = count(imported)
  local quiet = nk.authenticate_steam(p.steam_quiet, false, "luasteam900")
  out.steam_quiet = count(quiet)
  nk.link_facebook(ctx.user_id, ctx.username, p.facebook)
  return nk.json_encode(out)
end, "lua_friend_import")
