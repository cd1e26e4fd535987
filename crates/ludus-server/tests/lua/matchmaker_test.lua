-- Module loaded by the socket tests in tests/ws/matchmaker.rs:
-- `register_matchmaker_matched` answers a match id for groups whose users
-- entered with the property mode = "hooked" (others get a token), and keeps
-- what it was given for the `mm_entries` RPC to show.
local nk = require("nakama")

nk.register_matchmaker_matched(function(ctx, entries)
  nk.localcache_put("mm_entries", nk.json_encode({ mode = ctx.execution_mode, entries = entries }))
  for _, e in ipairs(entries) do
    if e.properties.mode ~= "hooked" then
      return nil
    end
  end
  return "6f1f8f5e-4c0e-4d8e-9a55-3b1c2a7d9e01.ludus"
end)

nk.register_rpc(function(ctx, payload)
  return nk.localcache_get("mm_entries") or ""
end, "mm_entries")
