-- Storage search indexes, for tests/http/storage_index.rs: three indexes
-- over their own collections, a filter, and RPCs that list, write and
-- delete through nk.
local nk = require("nakama")

nk.register_storage_index("idx_scores", "idx_scores", "", { "level", "name" }, { "level" }, 100)
-- Nakama's argument order: the index name, then the function.
nk.register_storage_index("idx_filtered", "idx_filtered", "", { "level" }, {}, 100, false)
nk.register_storage_index_filter("idx_filtered", function(ctx, write)
  return write.value.banned ~= true
end)
nk.register_storage_index("idx_small", "idx_small", "", { "n" }, { "n" }, 3, true)

-- Lists an index: payload {index, query, limit, order, caller, cursor}.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local ok, objects, cursor = pcall(nk.storage_index_list, p.index, p.query or "", p.limit or 100,
    p.order or {}, p.caller or "", p.cursor or "")
  if not ok then
    return nk.json_encode({ error = tostring(objects) })
  end
  local out = {}
  for i, o in ipairs(objects) do
    out[i] = { key = o.key, user_id = o.user_id, value = o.value, version = o.version }
  end
  return nk.json_encode({ objects = out, cursor = cursor or "" })
end, "idx_list")

-- Writes one object as the server: payload {collection, key, user_id, value}.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.storage_write({ { collection = p.collection, key = p.key, user_id = p.user_id,
    value = p.value, permission_read = 2, permission_write = 1 } })
  return "{}"
end, "idx_write")

-- Deletes one object as the server: payload {collection, key, user_id}.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.storage_delete({ { collection = p.collection, key = p.key, user_id = p.user_id } })
  return "{}"
end, "idx_delete")

-- register_storage_index after loading is refused.
nk.register_rpc(function(ctx, payload)
  local ok, err = pcall(nk.register_storage_index, "late", "late", "", { "x" }, {}, 10)
  return nk.json_encode({ ok = ok, error = tostring(err) })
end, "idx_register_late")

-- A multi_update that fails (a negative balance) and one that succeeds,
-- each writing to idx_scores: payload {key, failed_key, delete}.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local me = ctx.user_id
  local failed = pcall(nk.multi_update, nil,
    { { collection = "idx_scores", key = p.failed_key, user_id = me, value = { level = 99 } } },
    nil, { { user_id = me, changeset = { coins = -5 } } }, false)
  nk.multi_update(nil,
    { { collection = "idx_scores", key = p.key, user_id = me, value = { level = 50 } } },
    { { collection = "idx_scores", key = p.delete, user_id = me } }, nil, false)
  return nk.json_encode({ failed = not failed })
end, "idx_multi")

-- Sets a stored object's update time (UNIX seconds), to test start-up
-- filling: payload {collection, key, update_time}.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.sql_exec("UPDATE storage SET update_time = $1 WHERE collection = $2 AND key = $3",
    { p.update_time, p.collection, p.key })
  return "{}"
end, "idx_age")
