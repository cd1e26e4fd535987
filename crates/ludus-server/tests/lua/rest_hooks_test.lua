-- Before and after hooks on the REST routes that once ran none (tests/http/hooks.rs):
-- each records that it ran in the local cache; some fail or reject on a
-- marker value so the tests can see the before hook decides.
local nk = require("nakama")

nk.register_req_before(function(ctx, req)
  if req.limit == 7 then error({ "limit seven is refused by the hook", 3 }) end
  nk.localcache_put("before_channel", req.channel_id)
  return req
end, "ListChannelMessages")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_channel", req.channel_id)
end, "ListChannelMessages")

nk.register_req_before(function(ctx, req)
  if req.limit == 13 then return nil end
  return req
end, "ListNotifications")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_notifications", ctx.user_id)
end, "ListNotifications")

nk.register_req_before(function(ctx, req)
  nk.localcache_put("before_delete_notifications", tostring(#req.ids))
  return req
end, "DeleteNotifications")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_delete_notifications", req.ids[1])
end, "DeleteNotifications")

nk.register_req_before(function(ctx, req)
  nk.localcache_put("before_matchmaker_stats", ctx.user_id)
end, "GetMatchmakerStats")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_matchmaker_stats", tostring(res.ticket_count or 0))
end, "GetMatchmakerStats")

nk.register_req_before(function(ctx, req)
  req.id = req.id .. "-hooked"
  return req
end, "LinkCustom")

nk.register_req_after(function(ctx, res, req)
  nk.localcache_put("after_unlink_custom", req.id or "any")
end, "UnlinkCustom")

-- The friends listing writes its JSON straight from the page; an after
-- hook still sees the whole response and the request.
nk.register_req_after(function(ctx, res, req)
  local friends = res.friends or {}
  local first = friends[1] or { user = { id = "none" } }
  nk.localcache_put("after_list_friends", tostring(#friends) .. ":" .. first.user.id
    .. ":" .. tostring(first.state) .. ":" .. tostring(req.limit))
end, "ListFriends")
