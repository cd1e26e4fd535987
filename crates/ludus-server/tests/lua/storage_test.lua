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
