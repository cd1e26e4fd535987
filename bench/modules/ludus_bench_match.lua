--[[
The authoritative match handler of `ludus bench match`, written to Nakama's
documented Lua match handler API (the seven callbacks). Created by the
`ludus_bench_find_match` RPC of ludus_bench.lua as "ludus_bench_match".

  10 ticks per second, at most MAX_PLAYERS players.
  op 1: sent back to its sender only (the workload times this echo).
  op 2: broadcast to every player of the match.
  The label {"bench":1,"open":0|1} says whether a player may still join.
  A match with no players for EMPTY_TICKS ticks ends itself.
]]
local M = {}

local TICK_RATE = 10
local MAX_PLAYERS = 10
local EMPTY_TICKS = 20 * TICK_RATE

local OP_ECHO = 1
local OP_BROADCAST = 2

local nk = require("nakama")

local function label(open)
  return nk.json_encode({ bench = 1, open = open and 1 or 0 })
end

-- Joined players plus accepted join attempts not yet completed.
local function taken(state)
  return state.count + state.pending
end

local function relabel(dispatcher, state)
  local open = taken(state) < MAX_PLAYERS
  if open ~= state.open then
    state.open = open
    dispatcher.match_label_update(label(open))
  end
end

function M.match_init(_context, _params)
  local state = { presences = {}, count = 0, pending = 0, pending_since = 0, open = true, empty_ticks = 0 }
  return state, TICK_RATE, label(true)
end

function M.match_join_attempt(_context, dispatcher, tick, state, presence, _metadata)
  if state.presences[presence.session_id] ~= nil then
    return state, false, "already in this match"
  end
  if taken(state) >= MAX_PLAYERS then
    return state, false, "match full"
  end
  state.pending = state.pending + 1
  state.pending_since = tick
  relabel(dispatcher, state)
  return state, true
end

function M.match_join(_context, dispatcher, _tick, state, presences)
  for _, p in ipairs(presences) do
    if state.presences[p.session_id] == nil then
      state.presences[p.session_id] = p
      state.count = state.count + 1
    end
    if state.pending > 0 then
      state.pending = state.pending - 1
    end
  end
  relabel(dispatcher, state)
  return state
end

function M.match_leave(_context, dispatcher, _tick, state, presences)
  for _, p in ipairs(presences) do
    if state.presences[p.session_id] ~= nil then
      state.presences[p.session_id] = nil
      state.count = state.count - 1
    end
  end
  relabel(dispatcher, state)
  return state
end

function M.match_loop(_context, dispatcher, tick, state, messages)
  -- An accepted attempt whose join never came (the socket went away) frees
  -- its place after a second.
  if state.pending > 0 and tick - state.pending_since > TICK_RATE then
    state.pending = 0
    relabel(dispatcher, state)
  end
  for _, m in ipairs(messages) do
    if m.op_code == OP_ECHO then
      dispatcher.broadcast_message(OP_ECHO, m.data, { m.sender }, nil)
    elseif m.op_code == OP_BROADCAST then
      dispatcher.broadcast_message(OP_BROADCAST, m.data, nil, m.sender)
    end
  end
  if state.count == 0 and state.pending == 0 then
    state.empty_ticks = state.empty_ticks + 1
    if state.empty_ticks >= EMPTY_TICKS then
      return nil
    end
  else
    state.empty_ticks = 0
  end
  return state
end

function M.match_terminate(_context, _dispatcher, _tick, state, _grace_seconds)
  return state
end

function M.match_signal(_context, _dispatcher, _tick, state, data)
  return state, data
end

return M
