-- Writes and reads for tests/http/hostile_json.rs: a value decoded from the
-- payload is written with nk.storage_write, and read back with
-- nk.storage_read and nk.storage_list (of every owner, as the server may).
local nk = require("nakama")

local function write(ctx, payload)
  local decoded, value = pcall(nk.json_decode, payload)
  if not decoded then
    return nk.json_encode({ refused = "decode", error = tostring(value) })
  end
  local ok, err = pcall(nk.storage_write, {
    { collection = "hostile", key = "lua", user_id = ctx.user_id, value = value, permission_read = 2 },
  })
  if not ok then
    return nk.json_encode({ refused = "write", error = tostring(err) })
  end
  return nk.json_encode({ written = true })
end
nk.register_rpc(write, "hostile_lua_write")

-- The payload is "read:<key>" or "list:<key>"; the answer is the value.
local function read(ctx, payload)
  local how, key = payload:match("^(%a+):(.*)$")
  if how == "read" then
    local objects = nk.storage_read({ { collection = "hostile", key = key, user_id = ctx.user_id } })
    return nk.json_encode(objects[1].value)
  end
  local objects = nk.storage_list(nil, "hostile", 100, "")
  for _, o in ipairs(objects) do
    if o.key == key and o.user_id == ctx.user_id then
      return nk.json_encode(o.value)
    end
  end
  error("not listed: " .. key)
end
nk.register_rpc(read, "hostile_lua_read")
