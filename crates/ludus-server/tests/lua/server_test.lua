-- Module loaded by the HTTP integration tests (tests/http/rpc.rs and
-- tests/http/hooks.rs): RPCs over every auth form, server calls from Lua,
-- and before/after hooks that rewrite, reject and observe.
local nk = require("nakama")

local function rpc(id, fn) nk.register_rpc(fn, id) end

rpc("echo", function(ctx, payload) return payload end)

rpc("ctx", function(ctx, payload)
  return nk.json_encode({
    user_id = ctx.user_id,
    username = ctx.username,
    query = ctx.query_params,
    header = ctx.headers["X-Custom"],
    client_ip = ctx.client_ip,
    mode = ctx.execution_mode,
    env = ctx.env,
    session_id = ctx.session_id,
    payload = payload,
  })
end)

-- The console's API explorer calls RPCs as a chosen user with session vars.
rpc("console_ctx", function(ctx, payload)
  return nk.json_encode({ user_id = ctx.user_id, username = ctx.username, vars = ctx.vars, payload = payload })
end)

rpc("denied", function(ctx, payload) error({ "nope", 7 }) end)

rpc("spin", function(ctx, payload) while true do end end)

rpc("fetch", function(ctx, url)
  local code, headers, body = nk.http_request(url, "get", { ["X-From"] = "lua" }, nil, 2000)
  return nk.json_encode({ code = code, body = body, content_type = headers["Content-Type"] })
end)

rpc("server_calls", function(ctx, payload)
  local uid, username, created = nk.authenticate_custom("lua-made-0001", "luauser")
  local again = select(3, nk.authenticate_custom("lua-made-0001"))
  local euid = nk.authenticate_email("lua@example.com", "password-123", "luamail")
  local duid = nk.authenticate_device("lua-device-0001")
  nk.account_update_id(uid, { vip = true }, nil, "Lua Display")
  local account = nk.account_get_id(uid)
  local accounts = nk.accounts_get_id({ uid, euid, duid })
  local by_id = nk.users_get_id({ uid, duid })
  local by_name = nk.users_get_username({ "luauser", "luamail" })
  local token, exp = nk.authenticate_token_generate(uid, username, 0, { via = "lua" })
  return nk.json_encode({
    uid = uid, username = username, created = created, created_again = again,
    display = account.display_name, vip = account.metadata.vip,
    custom_id = account.custom_id,
    accounts = #accounts, by_id = #by_id, by_name = #by_name,
    token = token, exp = exp,
  })
end)

-- The module's own table, created once at start as Nakama modules do.
nk.run_once(function(ctx)
  nk.sql_exec([[CREATE TABLE IF NOT EXISTS lua_scores (
    id BIGINT PRIMARY KEY, name TEXT NOT NULL, score DOUBLE PRECISION, active BOOLEAN, blob BYTEA)]])
end)

rpc("sql", function(ctx, payload)
  local insert = "INSERT INTO lua_scores (id, name, score, active, blob) VALUES ($1, $2, $3, $4, $5)"
  local inserted = nk.sql_exec(insert, { 1, "ann", 12.5, true, "\0\1\255" })
  -- A nil parameter binds NULL (a trailing nil would shorten the array, as in any Lua list).
  inserted = inserted + nk.sql_exec(
    "INSERT INTO lua_scores (id, name, blob, score, active) VALUES ($1, $2, $3, $4, $5)",
    { 2, "bob", nil, 7, false })
  local updated = nk.sql_exec("UPDATE lua_scores SET score = score + $1 WHERE score > $2", { 1, 10 })
  local rows = nk.sql_query("SELECT id, name, score, active, blob FROM lua_scores WHERE id >= $1 ORDER BY id", { 1 })
  local ok, err = pcall(nk.sql_query, "SELECT nope FROM lua_scores")
  local ok2, err2 = pcall(nk.sql_exec, insert, { 3 })
  local dup_ok = pcall(nk.sql_exec, insert, { 1, "again", 0, true, "" })
  local count = nk.sql_query("SELECT COUNT(*) AS n FROM lua_scores")[1].n
  local first, second = rows[1], rows[2]
  -- runtime.sql_max_rows is 2 in the tests: a third row makes the query fail.
  nk.sql_exec(insert, { 3, "cid", 1, true, "" })
  local ok3, err3 = pcall(nk.sql_query, "SELECT id FROM lua_scores")
  return nk.json_encode({
    too_many = (not ok3) and tostring(err3) or "",
    inserted = inserted, updated = updated, rows = #rows,
    first = { id = first.id, name = first.name, score = first.score,
              active = first.active == true or first.active == 1, blob = { string.byte(first.blob, 1, -1) } },
    second = { id = second.id, name = second.name, score = second.score,
               active = second.active == true or second.active == 1, blob_is_nil = second.blob == nil },
    bad_column = (not ok) and tostring(err) or "",
    bad_params = (not ok2) and tostring(err2) or "",
    duplicate_refused = not dup_ok,
    count = count,
  })
end)

rpc("cache_get", function(ctx, key) return tostring(nk.localcache_get(key)) end)

nk.register_req_before(function(ctx, req)
  local id = req.account.id
  if id == "blocked-device-01" then return nil end
  if id == "erroring-device-1" then error({ "device not allowed", 9 }) end
  req.username = "hooked" .. string.sub(id, 1, 4)
  return req
end, "AuthenticateDevice")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_auth", req.account.id .. ":" .. tostring(res.created == true))
end, "AuthenticateDevice")

nk.register_req_before(function(ctx, req)
  req.display_name = string.upper(req.display_name or "")
  return req
end, "UpdateAccount")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_get_account", ctx.user_id .. ":" .. res.user.username)
end, "GetAccount")

nk.register_req_before(function(ctx, req) return nil end, "GetUsers")

-- A session token for a user, made by the module (server-to-server callers).
nk.register_rpc(function(ctx, payload)
  local req = nk.json_decode(payload)
  local token = nk.authenticate_token_generate(req.user_id, req.username, 0)
  return token
end, "token_for")
