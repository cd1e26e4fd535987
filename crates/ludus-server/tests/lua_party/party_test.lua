-- Module loaded by the party socket tests in tests/ws/party.rs: lists
-- parties through nk.party_list with the arguments the test sends.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local a = nk.json_decode(payload)
  local parties, cursor = nk.party_list(a.limit, a.open, a.show_hidden, a.query, a.cursor)
  return nk.json_encode({ parties = parties, cursor = cursor })
end, "party_list")

nk.register_rpc(function(ctx, payload)
  local ok, err = pcall(nk.party_list, 101)
  return tostring(err)
end, "party_list_bad_limit")

nk.register_rpc(function(ctx, payload)
  return ctx.session_id
end, "session_id")
