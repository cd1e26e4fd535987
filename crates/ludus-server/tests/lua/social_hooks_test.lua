-- Before and after hooks on the friend and group routes (tests/http/social.rs):
-- a before hook that refuses on a marker username, one that rewrites, and
-- after hooks that record what they saw in the local cache.
local nk = require("nakama")

nk.register_req_before(function(ctx, req)
  for _, u in ipairs(req.usernames or {}) do
    if u == "hook-refused" then error({ "adding hook-refused is refused by the hook", 3 }) end
  end
  return req
end, "AddFriends")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_add_friends", tostring(#(req.ids or {})))
end, "AddFriends")

nk.register_req_before(function(ctx, req)
  req.description = "stamped by hook"
  return req
end, "CreateGroup")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_create_group", res.name)
end, "CreateGroup")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_list_group_users", tostring(#(res.group_users or {})))
end, "ListGroupUsers")
