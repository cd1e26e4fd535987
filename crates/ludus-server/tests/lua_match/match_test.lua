-- An authoritative match handler exercising every callback and dispatcher
-- function. Op codes from clients: 1 echo to the sender, 2 broadcast from
-- the sender, 3 update the label, 4 kick the sender, 5 raise an error,
-- 6 return a nil state (ends the match), 7 loop forever (stopped by the
-- instruction budget), 8 deferred broadcast.
local nk = require("nakama")

-- A server call while the module loads: in a match VM this runs on the match
-- runtime's worker, which must step aside for it.
local nobody = nk.users_get_id({})
assert(#nobody == 0)

local M = {}

local function label(mode, open, level)
  return nk.json_encode({ mode = mode, open = open, level = level, tags = { "ranked", "eu" } })
end

function M.match_init(context, params)
  params = params or {}
  local state = { presences = {}, count = 0, max = params.max or 4 }
  return state, params.rate or 10, label(params.mode or "test", true, params.level or 1)
end

function M.match_join_attempt(context, dispatcher, tick, state, presence, metadata)
  if metadata.garbage then
    return state, "yes"
  end
  if metadata.password == "wrong" then
    return state, false, "bad password"
  end
  if state.count >= state.max then
    return state, false, "match full"
  end
  return state, true
end

function M.match_join(context, dispatcher, tick, state, presences)
  for _, p in ipairs(presences) do
    state.presences[p.session_id] = p
    state.count = state.count + 1
  end
  dispatcher.broadcast_message(100, nk.json_encode({
    joined = #presences,
    match_id = context.match_id,
    mode = context.execution_mode,
    node = presences[1].node,
  }))
  return state
end

function M.match_leave(context, dispatcher, tick, state, presences)
  for _, p in ipairs(presences) do
    if state.presences[p.session_id] then
      state.presences[p.session_id] = nil
      state.count = state.count - 1
    end
  end
  return state
end

function M.match_loop(context, dispatcher, tick, state, messages)
  for _, m in ipairs(messages) do
    local op = m.op_code
    if op == 1 then
      dispatcher.broadcast_message(1, m.data, { m.sender })
    elseif op == 2 then
      dispatcher.broadcast_message(2, m.data, nil, m.sender)
    elseif op == 3 then
      dispatcher.match_label_update(label("changed", false, 9))
    elseif op == 4 then
      dispatcher.match_kick({ m.sender })
    elseif op == 5 then
      error("handler blew up")
    elseif op == 6 then
      return nil
    elseif op == 7 then
      while true do end
    elseif op == 8 then
      dispatcher.broadcast_message_deferred(8, "deferred:" .. context.match_label, nil, nil, false)
    end
  end
  return state
end

function M.match_terminate(context, dispatcher, tick, state, grace_seconds)
  dispatcher.broadcast_message(99, "terminating " .. grace_seconds)
  return state
end

function M.match_signal(context, dispatcher, tick, state, data)
  if data == "end" then
    return nil, "ending"
  end
  -- Server calls from a match callback (nk.accounts_get_id once panicked
  -- there: it blocked on the match runtime's worker).
  local id = string.match(data, "^accounts (.+)$")
  if id then
    local accounts = nk.accounts_get_id({ id })
    return state, "accounts " .. #accounts .. " " .. accounts[1].user.username
  end
  return state, "signal " .. data .. " players " .. state.count
end

return M
