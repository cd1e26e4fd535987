-- RPCs that drive the match `nk` functions from tests.
local nk = require("nakama")

nk.register_rpc(function(context, payload)
  local req = nk.json_decode(payload)
  return nk.match_create(req.module or "match_test", req.params)
end, "create_match")

nk.register_rpc(function(context, payload)
  local m = nk.match_get(payload)
  if m == nil then
    return "null"
  end
  return nk.json_encode(m)
end, "get_match")

nk.register_rpc(function(context, payload)
  local req = nk.json_decode(payload)
  local found = nk.match_list(req.limit, req.authoritative, req.label, req.min_size, req.max_size, req.query)
  return nk.json_encode({ matches = found })
end, "list_matches")

nk.register_rpc(function(context, payload)
  local req = nk.json_decode(payload)
  return nk.match_signal(req.match_id, req.data)
end, "signal_match")

-- The benchmark's find-or-create pattern: a non-full open match, or a new one.
nk.register_rpc(function(context, payload)
  local found = nk.match_list(1, true, nil, 0, 3, "+label.open:true")
  if #found > 0 then
    return found[1].match_id
  end
  return nk.match_create("match_test", { max = 4 })
end, "find_or_create")

-- As create_match, answering JSON for SDKs that parse RPC payloads.
nk.register_rpc(function(context, payload)
  local req = nk.json_decode(payload)
  return nk.json_encode({ match_id = nk.match_create(req.module or "match_test", req.params) })
end, "create_match_json")

-- nk.session_disconnect for a session that may be on another node.
nk.register_rpc(function(context, payload)
  nk.session_disconnect(payload)
  return "ok"
end, "disconnect_session")

-- nk.users_ban_id for a user who may be connected to another node.
nk.register_rpc(function(context, payload)
  nk.users_ban_id({ payload })
  return "ok"
end, "ban_user")

-- nk.party_list, one page: payload {"limit": n, "cursor": "..."}.
nk.register_rpc(function(context, payload)
  local args = nk.json_decode(payload)
  local parties, cursor = nk.party_list(args.limit, nil, nil, nil, args.cursor)
  return nk.json_encode({ parties = parties, cursor = cursor or "" })
end, "list_parties")

-- A notification for everyone, for the cluster test: not kept, so it goes
-- straight to every socket of every node.
nk.register_rpc(function(context, payload)
  nk.notification_send_all(payload, { everyone = true }, 12, false)
  return "sent"
end, "notify_everyone")
