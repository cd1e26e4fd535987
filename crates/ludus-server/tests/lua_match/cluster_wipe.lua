-- For the cluster test's console wipe (crates/ludus/tests/cluster.rs): a
-- storage search index each node keeps in memory, and RPCs that put a
-- player's object and record on this node and say what this node's index
-- and board hold.
local nk = require("nakama")

-- Index-only: a listing answers from the node's memory, not the store.
nk.register_storage_index("cluster_wipe_idx", "cluster_wipe", "", { "n" }, { "n" }, 100, true)

nk.register_rpc(function(ctx, payload)
  nk.leaderboard_create("cluster_wipe_board", false, "desc", "best", "", nil, true)
  nk.leaderboard_record_write("cluster_wipe_board", ctx.user_id, ctx.username, 10)
  nk.storage_write({
    { collection = "cluster_wipe", key = "k", user_id = ctx.user_id, value = { n = 1 } },
  })
  return ""
end, "cluster_wipe_setup")

nk.register_rpc(function(ctx, payload)
  local objects = nk.storage_index_list("cluster_wipe_idx", "*", 10)
  local ok, records = pcall(nk.leaderboard_records_list, "cluster_wipe_board", nil, 10)
  return nk.json_encode({
    indexed = #objects,
    records = ok and #records or -1,
  })
end, "cluster_wipe_seen")
