-- nk.purchase_*, nk.purchases_list, nk.subscription_* and
-- nk.subscriptions_list with Nakama's argument lists, driven by
-- tests/http/purchases.rs through the `lua_purchases` RPC: the payload
-- carries receipts the test's stand-in store knows; each call's outcome is
-- its first result or its error text.
local nk = require("nakama")

nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local out = {}
  local function try(name, f, ...)
    local ok, a, b, c = pcall(f, ...)
    if ok then
      out[name] = { result = a, cursor = b or "", prev = c or "" }
    else
      out[name] = tostring(a)
    end
  end
  local uid = ctx.user_id
  try("apple", nk.purchase_validate_apple, uid, p.apple)
  try("apple_again", nk.purchase_validate_apple, uid, p.apple, true)
  try("apple_wrong_password", nk.purchase_validate_apple, uid, p.apple, false, "not-the-secret")
  try("google", nk.purchase_validate_google, uid, p.google)
  try("google_override", nk.purchase_validate_google, uid, p.google2, false, p.email, p.key)
  try("huawei", nk.purchase_validate_huawei, uid, p.huawei_signature, p.huawei_data)
  try("huawei_forged", nk.purchase_validate_huawei, uid, p.huawei_signature, p.huawei_forged)
  try("instant", nk.purchase_validate_facebook_instant, uid, p.instant, false)
  try("samsung", nk.purchase_validate_samsung, uid, "samsung-purchase")
  try("bad_user", nk.purchase_validate_apple, "not-a-uuid", p.apple)
  try("get", nk.purchase_get_by_transaction_id, p.apple_tx)
  try("get_missing", nk.purchase_get_by_transaction_id, "no-such-transaction")
  try("list_page", nk.purchases_list, uid, 1)
  if type(out.list_page) == "table" then
    try("list_next", nk.purchases_list, uid, 100, out.list_page.cursor)
  end
  try("list_bad_limit", nk.purchases_list, uid, 101)
  try("sub_apple", nk.subscription_validate_apple, uid, p.apple_sub)
  try("sub_google", nk.subscription_validate_google, uid, p.google_sub, true, p.email, p.key)
  try("sub_get", nk.subscription_get_by_product_id, uid, "vip")
  try("sub_get_missing", nk.subscription_get_by_product_id, uid, "nothing")
  try("subs_list", nk.subscriptions_list, "", 10)
  return nk.json_encode(out)
end, "lua_purchases")
