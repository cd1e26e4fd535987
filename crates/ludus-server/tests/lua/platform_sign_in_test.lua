-- nk.authenticate_*, nk.link_* and nk.unlink_* of the platforms with
-- Nakama's argument lists, driven by tests/http/platform_sign_in.rs through
-- the `lua_platforms` RPC: the payload carries proofs signed by the test;
-- each call's outcome is its results or its error text.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local out = {}
  local function try(name, f, ...)
    local ok, a, b, c = pcall(f, ...)
    if ok then
      out[name] = { user_id = a or "", username = b or "", created = c or false }
    else
      out[name] = tostring(a)
    end
  end
  local function gc_args(gc)
    return gc.player_id, gc.bundle_id, gc.timestamp_seconds, gc.salt, gc.signature, gc.public_key_url
  end
  -- Sign-in: created, then found; create false finds no one.
  try("apple_new", nk.authenticate_apple, p.apple, "luaapple", true)
  try("apple_again", nk.authenticate_apple, p.apple)
  try("google_new", nk.authenticate_google, p.google, nil, true)
  try("facebook_new", nk.authenticate_facebook, p.facebook, false, "luafacebook", true)
  try("instant_new", nk.authenticate_facebook_instant_game, p.instant)
  local a1, a2, a3, a4, a5, a6 = gc_args(p.gamecenter)
  try("gamecenter_new", nk.authenticate_game_center, a1, a2, a3, a4, a5, a6, "luagamecenter", true)
  try("steam_new", nk.authenticate_steam, p.steam, false, "luasteam", true)
  try("steam_no_create", nk.authenticate_steam, p.steam_unknown, false, nil, false)
  try("google_forged", nk.authenticate_google, p.forged)

  -- Linking to the caller, then unlinking (the caller's device stays).
  local uid = ctx.user_id
  try("link_apple", nk.link_apple, uid, p.apple2)
  try("link_google", nk.link_google, uid, p.google2)
  try("link_facebook", nk.link_facebook, uid, "name", p.facebook2, false)
  try("link_instant", nk.link_facebook_instant_game, uid, p.instant2)
  local b1, b2, b3, b4, b5, b6 = gc_args(p.gamecenter2)
  try("link_gamecenter", nk.link_gamecenter, uid, b1, b2, b3, b4, b5, b6)
  try("link_steam", nk.link_steam, uid, "name", p.steam2)
  try("link_taken", nk.link_apple, uid, p.apple)
  try("unlink_apple", nk.unlink_apple, uid, p.apple2)
  try("unlink_google", nk.unlink_google, uid, p.google2)
  try("unlink_facebook", nk.unlink_facebook, uid, p.facebook2)
  try("unlink_instant", nk.unlink_facebook_instant_game, uid, p.instant2)
  try("unlink_gamecenter", nk.unlink_gamecenter, uid, b1, b2, b3, b4, b5, b6)
  try("unlink_forged", nk.unlink_google, uid, p.forged)
  return nk.json_encode(out)
end, "lua_platforms")
