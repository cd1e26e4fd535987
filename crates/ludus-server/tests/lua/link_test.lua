-- nk.link_* and nk.unlink_* with Nakama's argument shapes, driven by
-- tests/http/link.rs through the `lua_links` RPC: each call's outcome is
-- "ok" or its error text.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local uid = ctx.user_id
  local out = {}
  local function try(name, f, ...)
    local ok, err = pcall(f, ...)
    out[name] = ok and "ok" or tostring(err)
  end
  try("link_device", nk.link_device, uid, "lua-linked-device")
  try("link_custom", nk.link_custom, uid, "lua-custom-01")
  try("link_email", nk.link_email, uid, "Lua@Example.com", "password-01")
  try("link_bad_user", nk.link_custom, "not-a-uuid", "lua-custom-02")
  try("link_short_device", nk.link_device, uid, "short")
  try("unlink_email_any", nk.unlink_email, uid)
  try("unlink_custom_named", nk.unlink_custom, uid, "lua-custom-01")
  try("unlink_first_device", nk.unlink_device, uid, payload)
  try("unlink_last_device", nk.unlink_device, uid, "lua-linked-device")
  return nk.json_encode(out)
end, "lua_links")
