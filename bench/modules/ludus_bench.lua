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
  ludus_bench_path        a compute-heavy call: an A* path search across a
                          64x64 grid with walls, returning the path's length
                          (`rpc --rpc-id ludus_bench_path`): the interpreter,
                          not the plumbing, dominates its cost
  ludus_bench_json_decode, ludus_bench_json_encode
                          decode (or encode) a 20-field game payload as
                          many times as the payload says (default 100000)
                          inside one call, and answer the nanoseconds per
                          decode (encode) by os.clock: the JSON codec alone
  ludus_bench_send_all    pushes {"bench_epoch_us": N} from the payload to
                          every socket of every node (a notification that is
                          not stored): `ludus bench ccu` reports its
                          delivery time

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

-- The path search's grid: 64x64 cells, walls every 8 columns with one gap
-- each (at alternating ends), so a path must zigzag across the whole grid.
-- Built once per module load; calls only read it.
local GRID = 64
local blocked = {}
for x = 1, GRID do
  for y = 1, GRID do
    local wall = x % 8 == 0 and x < GRID
    local gap = (x / 8) % 2 == 1 and y == GRID or (x / 8) % 2 == 0 and y == 1
    blocked[(y - 1) * GRID + x] = wall and not gap
  end
end

-- A* from the top-left to the bottom-right corner with a binary heap on
-- f = g + manhattan distance; answers the number of steps of the path.
local function path_length()
  local goal = GRID * GRID
  local g = { [1] = 0 }
  local heap, fs, n = { 1 }, { GRID * 2 - 2 }, 1
  local closed = {}
  while n > 0 do
    local cell = heap[1]
    -- Pop the smallest f.
    heap[1], fs[1] = heap[n], fs[n]
    heap[n], fs[n] = nil, nil
    n = n - 1
    local i = 1
    while true do
      local l, r, m = i * 2, i * 2 + 1, i
      if l <= n and fs[l] < fs[m] then m = l end
      if r <= n and fs[r] < fs[m] then m = r end
      if m == i then break end
      heap[i], heap[m] = heap[m], heap[i]
      fs[i], fs[m] = fs[m], fs[i]
      i = m
    end
    if cell == goal then return g[cell] end
    if not closed[cell] then
      closed[cell] = true
      local x, y = (cell - 1) % GRID + 1, math.floor((cell - 1) / GRID) + 1
      local neighbours = {
        x > 1 and cell - 1 or nil, x < GRID and cell + 1 or nil,
        y > 1 and cell - GRID or nil, y < GRID and cell + GRID or nil,
      }
      for k = 1, 4 do
        local next_cell = neighbours[k]
        if next_cell and not blocked[next_cell] and not closed[next_cell] then
          local cost = g[cell] + 1
          if g[next_cell] == nil or cost < g[next_cell] then
            g[next_cell] = cost
            local nx, ny = (next_cell - 1) % GRID + 1, math.floor((next_cell - 1) / GRID) + 1
            -- Push with f = cost + distance to the goal.
            n = n + 1
            heap[n], fs[n] = next_cell, cost + (GRID - nx) + (GRID - ny)
            local j = n
            while j > 1 do
              local p = math.floor(j / 2)
              if fs[p] <= fs[j] then break end
              heap[p], heap[j] = heap[j], heap[p]
              fs[p], fs[j] = fs[j], fs[p]
              j = p
            end
          end
        end
      end
    end
  end
  return -1
end

local function path(_context, _payload)
  return nk.json_encode({ steps = path_length() })
end

-- A 20-field game payload for the JSON codec RPCs.
local PLAYER = nk.json_encode({
  player = "5e6f0c1a-8f6b-4f4a-9d7e-0c9b8a7d6e5f", level = 17, xp = 123456,
  coins = 9800, gems = 42, name = "Rowan", class = "ranger",
  guild = "Northwind", x = 12.5, y = -3.25, hp = 88, mp = 40, alive = true,
  tags = { "pvp", "daily", "event" }, items = { 1, 2, 3, 5, 8 },
  stats = { str = 12, dex = 18, int = 9 }, region = "eu-west", ping = 38,
  season = 4, rank = 1203,
})

local function per_op(payload, op)
  local n = tonumber(payload) or 100000
  local started = os.clock()
  for _ = 1, n do op() end
  return tostring(math.floor((os.clock() - started) / n * 1e9))
end

local function json_decode(_context, payload)
  return per_op(payload, function() return nk.json_decode(PLAYER) end)
end

local PLAYER_TABLE = nk.json_decode(PLAYER)

local function json_encode(_context, payload)
  return per_op(payload, function() return nk.json_encode(PLAYER_TABLE) end)
end

-- A push to every socket of every node (the six-figure socket run): the
-- payload is the sender's wall clock, `bench_epoch_us`, which each client
-- compares with its own on arrival.
local function send_all(_context, payload)
  local sent = nk.json_decode(payload)
  nk.notification_send_all("bench", { bench_epoch_us = sent.bench_epoch_us }, 1, false)
  return payload
end

nk.register_rpc(send_all, "ludus_bench_send_all")
nk.register_rpc(json_decode, "ludus_bench_json_decode")
nk.register_rpc(json_encode, "ludus_bench_json_encode")
nk.register_rpc(path, "ludus_bench_path")
nk.register_rpc(find_match, "ludus_bench_find_match")
nk.register_rpc(wallet_hot, "ludus_bench_wallet_hot")
nk.register_rpc(wallet, "ludus_bench_wallet")
nk.register_rpc(echo, "ludus_bench_echo")
nk.register_rpc(echo, "echo")
