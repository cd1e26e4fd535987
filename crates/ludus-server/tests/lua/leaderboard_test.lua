-- Leaderboards and tournaments from Lua, written against Nakama's API, for
-- tests/http/leaderboard.rs: boards created while the module loads, record
-- calls with every return value, tournaments with joins and attempts, the
-- schedule hooks, and before/after hooks on the leaderboard routes.
local nk = require("nakama")

-- Boards created at load time, as many Nakama modules do.
nk.leaderboard_create("lua_weekly", false, "desc", "best", "0 0 * * 1", { kind = "weekly" }, true)
nk.leaderboard_create("lua_authoritative", true, "asc", "set", "", nil, true)
nk.leaderboard_create("hooked", false, "desc", "best", "", nil, true)

nk.register_leaderboard_reset(function(ctx, leaderboard, reset)
  nk.localcache_put("leaderboard_reset", leaderboard.id .. "@" .. tostring(reset) .. ":" .. ctx.execution_mode)
end)
nk.register_tournament_end(function(ctx, tournament, session_end, expiry)
  nk.localcache_put("tournament_end", tournament.id .. "@" .. tostring(session_end))
end)
nk.register_tournament_reset(function(ctx, tournament, session_end, expiry)
  nk.localcache_put("tournament_reset", tournament.id .. "@" .. tostring(expiry))
end)

-- A write to "hooked" gets its score replaced; the after hook notes it.
nk.register_req_before(function(ctx, req)
  if req.leaderboard_id == "hooked" then
    req.record.score = "77"
  end
  if req.leaderboard_id == "refused" then
    return nil
  end
  return req
end, "WriteLeaderboardRecord")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("leaderboard_after", res.leaderboard_id .. ":" .. tostring(res.score))
end, "WriteLeaderboardRecord")

nk.register_rpc(function(ctx, payload)
  return nk.json_encode({
    after = nk.localcache_get("leaderboard_after") or "",
  })
end, "lua_leaderboard_notes")

local A = "11111111-1111-4111-8111-111111111111"
local B = "22222222-2222-4222-8222-222222222222"
local C = "33333333-3333-4333-8333-333333333333"

nk.register_rpc(function(ctx, payload)
  local out = {}
  nk.leaderboard_create("lua_rpc_lb", false, "desc", "incr", "", nil, true)
  for i, id in ipairs({ A, B, C }) do
    nk.leaderboard_record_write("lua_rpc_lb", id, "user" .. i, i * 10, 0, { n = i })
  end
  local r = nk.leaderboard_record_write("lua_rpc_lb", A, "user1", 25, 1)
  out.incr_score = r.score
  out.incr_rank = r.rank
  out.num_score = r.num_score
  out.username = r.username
  local best = nk.leaderboard_record_write("lua_rpc_lb", B, "user2", 1, 0, nil, "best")
  out.best_unchanged = best.score

  local records, owner_records, next_cursor, prev_cursor, rank_count =
    nk.leaderboard_records_list("lua_rpc_lb", { B }, 2)
  out.top = { records[1].owner_id, records[2].owner_id }
  out.top_ranks = { records[1].rank, records[2].rank }
  out.metadata_n = records[1].metadata.n
  out.owner_rank = owner_records[1].rank
  out.has_next = next_cursor ~= nil
  out.no_prev = prev_cursor == nil
  out.rank_count = rank_count
  local page2 = nk.leaderboard_records_list("lua_rpc_lb", nil, 2, next_cursor)
  out.page2 = #page2
  out.page2_owner = page2[1].owner_id
  out.page2_rank = page2[1].rank

  local from_rank = nk.leaderboard_records_list_cursor_from_rank("lua_rpc_lb", 3)
  out.from_rank_owner = nk.leaderboard_records_list("lua_rpc_lb", nil, 1, from_rank)[1].owner_id
  out.rank_one_cursor = nk.leaderboard_records_list_cursor_from_rank("lua_rpc_lb", 1)

  local around = nk.leaderboard_records_haystack("lua_rpc_lb", B, 1)
  out.around = around[1].owner_id

  local boards = nk.leaderboards_get_id({ "lua_rpc_lb", "missing" })
  out.boards = #boards
  out.operator = boards[1].operator
  local list = nk.leaderboard_list(100)
  out.listed = #list

  nk.leaderboard_record_delete("lua_rpc_lb", C)
  local _, _, _, _, after_delete = nk.leaderboard_records_list("lua_rpc_lb", nil, 10)
  out.after_delete = after_delete

  local ok, err = pcall(nk.leaderboard_create, "bad_cron", false, "desc", "best", "not a cron")
  out.bad_cron_refused = not ok
  out.bad_cron_err = tostring(err)
  local _, missing = pcall(nk.leaderboard_record_write, "missing", A, "x", 1)
  out.missing_err = tostring(missing)
  local _, negative = pcall(nk.leaderboard_record_write, "lua_rpc_lb", A, "x", -5)
  out.negative_err = tostring(negative)

  local auth = nk.leaderboard_record_write("lua_authoritative", A, "server", 9)
  out.authoritative_score = auth.score

  nk.leaderboard_delete("lua_rpc_lb")
  out.deleted = #nk.leaderboards_get_id({ "lua_rpc_lb" })
  return nk.json_encode(out)
end, "lua_leaderboard")

nk.register_rpc(function(ctx, payload)
  local out = {}
  local id = nk.uuid_v4()
  local me = ctx.user_id
  nk.tournament_create(id, false, "desc", "best", 3600, "", { prize = "gold" }, "Cup", "A cup", 2, 0, 0, 2, 2, true, true)
  -- Creating it again changes nothing and raises nothing.
  nk.tournament_create(id, false, "desc", "best", 3600, "", { prize = "gold" }, "Cup", "A cup", 2, 0, 0, 2, 2, true, true)
  local t = nk.tournaments_get_id({ id })[1]
  out.title = t.title
  out.can_enter = t.can_enter
  out.join_required = t.join_required
  out.category = t.category
  out.prize = t.metadata.prize

  local _, join_err = pcall(nk.tournament_record_write, id, me, "me", 10)
  out.join_err = tostring(join_err)
  nk.tournament_join(id, me, "me")
  local r = nk.tournament_record_write(id, me, "me", 10)
  out.score = r.score
  out.num_score = r.num_score
  out.rank = r.rank
  nk.tournament_record_write(id, me, "me", 5)
  local _, attempts_err = pcall(nk.tournament_record_write, id, me, "me", 50)
  out.attempts_err = tostring(attempts_err)
  nk.tournament_add_attempt(id, me, 1)
  out.after_attempt = nk.tournament_record_write(id, me, "me", 50).score

  out.records = #nk.tournament_records_list(id, nil, 10)
  out.haystack = #nk.tournament_records_haystack(id, me, 10)
  local listed = nk.tournament_list(0, 10, -1, -1, 100)
  out.listed = false
  for _, x in ipairs(listed) do
    if x.id == id then out.listed = true end
  end
  -- Nakama's stock tournament module lists a tournament's records with
  -- the leaderboard call.
  out.via_leaderboard = #nk.leaderboard_records_list(id, nil, 10)

  nk.tournament_delete(id)
  out.deleted = #nk.tournaments_get_id({ id })
  return nk.json_encode(out)
end, "lua_tournament")

-- A tournament that stays, for the REST tests: category 5, join required.
nk.register_rpc(function(ctx, payload)
  local id = nk.uuid_v4()
  nk.tournament_create(id, false, "desc", "best", 3600, "", nil, "Kept", "", 5, 0, 0, 10, 10, true, true)
  return nk.json_encode({ id = id })
end, "lua_tournament_keep")

-- Twelve records in a tournament made with a fractional start time, for
-- the listing-limit test.
nk.register_rpc(function(ctx, payload)
  local id = nk.uuid_v4()
  -- Regression: `nk.time() / 1000` (seconds with a fraction) was refused
  -- as a start time; Nakama truncates it.
  local start = nk.time() / 1000 - 0.5
  nk.tournament_create(id, true, "desc", "best", 3600, "", nil, "Filled", "", 6, start, 0, 1000, 10, false, false)
  local owners = {}
  for i = 1, 12 do
    local uid = nk.authenticate_device(string.format("fill-device-%04d", i), nil, true)
    nk.tournament_record_write(id, uid, nil, i)
    owners[i] = uid
  end
  local t = nk.tournaments_get_id({ id })[1]
  return nk.json_encode({ id = id, owners = owners, start_time = t.start_time, want_start = math.floor(start) })
end, "lua_tournament_fill")
