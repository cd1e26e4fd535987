-- Storage hooks and the nk storage and wallet functions, for
-- tests/http/storage.rs and tests/http/lua_storage.rs.
local nk = require("nakama")

local function note(entry)
  local so_far = nk.localcache_get("storage_after")
  if so_far == nil or so_far == "" then
    nk.localcache_put("storage_after", entry)
  else
    nk.localcache_put("storage_after", so_far .. "," .. entry)
  end
end

nk.register_req_before(function(ctx, req)
  for _, object in ipairs(req.objects or {}) do
    if object.collection == "blocked" then return nil end
    if object.collection == "stamped" then object.value = nk.json_encode({ stamped = true }) end
  end
  return req
end, "WriteStorageObjects")

nk.register_req_after(function(ctx, res, req)
  note("write:" .. res.acks[1].collection)
end, "WriteStorageObjects")

nk.register_req_after(function(ctx, res, req)
  note("read:" .. tostring(#(res.objects or {})))
end, "ReadStorageObjects")

nk.register_req_after(function(ctx, res, req)
  note("list:" .. req.collection)
end, "ListStorageObjects")

nk.register_req_after(function(ctx, res, req)
  note("delete:" .. req.object_ids[1].collection)
end, "DeleteStorageObjects")

local function rpc(id, fn) nk.register_rpc(fn, id) end

-- Server-side storage: a system-owned object (no user id), a user's object
-- written past its write permission, reads, listings and deletes.
rpc("lua_storage", function(ctx, payload)
  local me = ctx.user_id
  local acks = nk.storage_write({
    { collection = "lua", key = "motd", value = { text = "hello" }, permission_read = 2, permission_write = 0 },
    { collection = "lua", key = "mine", user_id = me, value = { n = 1 }, permission_read = 1, permission_write = 0 },
  })
  -- The server ignores write permissions.
  nk.storage_write({ { collection = "lua", key = "mine", user_id = me, value = { n = 2 }, permission_write = 0 } })
  local read = nk.storage_read({
    { collection = "lua", key = "motd" },
    { collection = "lua", key = "mine", user_id = me },
    { collection = "lua", key = "absent", user_id = me },
  })
  local by_key = {}
  for _, o in ipairs(read) do by_key[o.key] = o end
  local listed, cursor = nk.storage_list(nil, "lua", 1, "")
  local second = nk.storage_list(nil, "lua", 10, cursor)
  local own = nk.storage_list(me, "lua", 10, "")
  local stale_ok, stale_err = pcall(nk.storage_write, {
    { collection = "lua", key = "mine", user_id = me, value = { n = 3 }, version = "stale" },
  })
  local bad_ok, bad_err = pcall(nk.storage_write, { { collection = "lua", key = "k" } })
  nk.storage_delete({ { collection = "lua", key = "motd" } })
  local after = nk.storage_read({ { collection = "lua", key = "motd" } })
  return nk.json_encode({
    ack_user = acks[1].user_id,
    ack_version = acks[2].version,
    motd = by_key.motd.value.text,
    motd_owner = by_key.motd.user_id,
    mine = by_key.mine.value.n,
    mine_write = by_key.mine.permission_write,
    read_count = #read,
    first_page = #listed,
    has_cursor = cursor ~= nil,
    second_page = #second,
    own = #own,
    stale_refused = not stale_ok,
    stale_error = tostring(stale_err),
    bad_refused = not bad_ok,
    bad_error = tostring(bad_err),
    deleted = #after == 0,
  })
end)

rpc("lua_wallet", function(ctx, payload)
  local me = ctx.user_id
  local updated, previous = nk.wallet_update(me, { gold = 100, gems = 2 }, { reason = "start" }, true)
  local updated2, previous2 = nk.wallet_update(me, { gold = -30 }, {}, true)
  local neg_ok, neg_err = pcall(nk.wallet_update, me, { gold = -1000 }, {}, true)
  local results = nk.wallets_update({ { user_id = me, changeset = { gems = 1 }, metadata = { reason = "bulk" } } }, true)
  local page, cursor = nk.wallet_ledger_list(me, 2)
  local rest, rest_cursor = nk.wallet_ledger_list(me, 10, cursor)
  local item = nk.wallet_ledger_update(page[1].id, { note = "checked" })
  return nk.json_encode({
    gold = updated.gold,
    previous_gold = previous.gold,
    gold2 = updated2.gold,
    previous2 = previous2.gold,
    negative_refused = not neg_ok,
    negative_error = tostring(neg_err),
    bulk_gems = results[1].updated.gems,
    bulk_user = results[1].user_id,
    first_page = #page,
    first_change = page[1].changeset.gems,
    rest = #rest,
    rest_cursor = rest_cursor,
    note = item.metadata.note,
    reason = item.metadata.reason,
  })
end)

rpc("lua_multi", function(ctx, payload)
  local me = ctx.user_id
  local failed_ok, failed_err = pcall(nk.multi_update,
    { { user_id = me, display_name = "Failed" } },
    { { collection = "multi", key = "k", user_id = me, value = { a = 1 } } },
    nil,
    { { user_id = me, changeset = { coins = -5 } } },
    true)
  local before = nk.storage_read({ { collection = "multi", key = "k", user_id = me } })
  local acks, wallets = nk.multi_update(
    { { user_id = me, display_name = "Multi" } },
    { { collection = "multi", key = "k", user_id = me, value = { a = 1 } } },
    nil,
    { { user_id = me, changeset = { coins = 5 } } },
    true)
  local account = nk.account_get_id(me)
  return nk.json_encode({
    failed = not failed_ok,
    failed_error = tostring(failed_err),
    nothing_written = #before == 0,
    acks = #acks,
    coins = wallets[1].updated.coins,
    display_name = account.user.display_name,
  })
end)

-- nk.storage_write_retry: a write made against a version that changed
-- meanwhile is tried again on a fresh read, at most max_retries more times.
nk.register_rpc(function(ctx, payload)
  local me = ctx.user_id
  local key = { { collection = "retry", key = "counter", user_id = me } }
  nk.storage_write({ { collection = "retry", key = "counter", user_id = me, value = { n = 1 } } })
  local out = {}
  local calls = 0
  -- The first time, another writer bumps the counter between the read and
  -- the write: the stale write is refused and the loop reads again.
  local acks = nk.storage_write_retry(key, function(objects)
    calls = calls + 1
    local o = objects[1]
    if calls == 1 then
      nk.storage_write({ { collection = "retry", key = "counter", user_id = me, value = { n = o.value.n + 10 } } })
    end
    return { { collection = "retry", key = "counter", user_id = me, version = o.version,
               value = { n = o.value.n + 1 } } }
  end, 3)
  out.calls = calls
  out.ack_key = acks[1].key
  out.ack_user = acks[1].user_id
  out.n = nk.storage_read(key)[1].value.n
  out.version_matches = nk.storage_read(key)[1].version == acks[1].version
  -- A writer that always wins: the retries run out.
  local tries = 0
  local ok, e = pcall(nk.storage_write_retry, key, function(objects)
    tries = tries + 1
    local o = objects[1]
    nk.storage_write({ { collection = "retry", key = "counter", user_id = me, value = { n = o.value.n + 1 } } })
    return { { collection = "retry", key = "counter", user_id = me, version = o.version, value = { n = 0 } } }
  end, 2)
  out.exhausted = not ok and tostring(e) or "no error"
  out.tries = tries
  -- A missing object reads as absent; "*" writes only if it still is.
  local created = nk.storage_write_retry({ { collection = "retry", key = "fresh", user_id = me } },
    function(objects)
      return { { collection = "retry", key = "fresh", user_id = me, version = "*",
                 value = { found = #objects } } }
    end, 0)
  out.created = #created
  out.fresh_found = nk.storage_read({ { collection = "retry", key = "fresh", user_id = me } })[1].value.found
  out.empty_keys = #nk.storage_write_retry({}, function() error("not called") end, 1)
  out.nothing_to_write = #nk.storage_write_retry(key, function() return {} end, 1)
  local function err(...)
    local ok, e = pcall(nk.storage_write_retry, ...)
    return ok and "no error" or tostring(e)
  end
  out.bad_retries = err(key, function() return {} end, 11)
  out.bad_fn = err(key, "x", 1)
  out.bad_keys = err("x", function() return {} end, 1)
  out.bad_return = err(key, function() return 5 end, 1)
  out.fn_error = err(key, function() error("boom") end, 1)
  return nk.json_encode(out)
end, "lua_storage_write_retry")
