--[[
RPCs for `ludus bench`, for any server that runs Nakama's Lua runtime
(Ludus or Nakama). Copy this file and ludus_bench_match.lua into the
server's runtime.path.

  ludus_bench_find_match  returns {"match_id": "..."}: a non-full match of
                          the bench handler, or a new one
  echo, ludus_bench_echo  return the payload unchanged (the `rpc` workload's
                          default, and `ludus bench echo --rpc ludus_bench_echo`)
  ludus_bench_wallet      adds 1 coin to the caller's wallet, with a ledger
                          entry (the `wallet` workload)
  ludus_bench_wallet_hot  adds 1 coin to one shared wallet (the system
                          user's), with a ledger entry: every caller writes
                          the same row (`rpc --rpc-id ludus_bench_wallet_hot`)

It also creates the leaderboard `ludus_bench` (descending, best score, no
reset, ranks on) that the `leaderboard` workload writes and reads.
]]
local nk = require("nakama")

-- The `leaderboard` workload's board; creating an existing one is a no-op.
nk.leaderboard_create("ludus_bench", false, "desc", "best", "", nil, true)

-- Players per match; keep equal to MAX_PLAYERS in ludus_bench_match.lua.
local MAX_PLAYERS = 10

local function find_match(_context, _payload)
  -- Authoritative matches of the bench handler with room for one more.
  local query = "+label.bench:1 +label.open:1"
  local matches = nk.match_list(20, true, nil, 0, MAX_PLAYERS - 1, query)
  local best = nil
  for _, m in ipairs(matches or {}) do
    -- Fill the fullest open match first, so matches reach ten players.
    if best == nil or m.size > best.size then
      best = m
    end
  end
  local match_id
  if best ~= nil then
    match_id = best.match_id
  else
    match_id = nk.match_create("ludus_bench_match", {})
  end
  return nk.json_encode({ match_id = match_id })
end

local function echo(_context, payload)
  return payload
end

local function wallet(context, _payload)
  local updated = nk.wallet_update(context.user_id, { coins = 1 }, {}, true)
  return nk.json_encode({ coins = updated.coins })
end

-- The system user's id, as Nakama's (and Ludus's) migrations create it.
local SYSTEM_USER = "00000000-0000-0000-0000-000000000000"

local function wallet_hot(_context, _payload)
  local updated = nk.wallet_update(SYSTEM_USER, { coins = 1 }, {}, true)
  return nk.json_encode({ coins = updated.coins })
end

nk.register_rpc(find_match, "ludus_bench_find_match")
nk.register_rpc(wallet_hot, "ludus_bench_wallet_hot")
nk.register_rpc(wallet, "ludus_bench_wallet")
nk.register_rpc(echo, "ludus_bench_echo")
nk.register_rpc(echo, "echo")
