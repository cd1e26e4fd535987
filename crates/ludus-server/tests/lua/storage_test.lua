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
