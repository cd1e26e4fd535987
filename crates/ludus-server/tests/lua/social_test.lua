-- Hooks on the friend and group routes (tests/http/social.rs) and the nk
-- friend and group functions (tests/http/lua_social.rs). The hooks:
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

-- nk.friends_*, nk.group*, nk.user_groups_list (tests/http/lua_social.rs).
-- The payload names two other users; the caller befriends them, builds a
-- group and reports what each call answered.
local function rpc(id, fn) nk.register_rpc(fn, id) end

rpc("lua_social", function(ctx, payload)
  local me = ctx.user_id
  local others = nk.json_decode(payload)
  local bob, cat = others.bob, others.cat
  nk.friends_add(me, ctx.username, { bob }, nil, { note = "hi" })
  nk.friends_add(bob, others.bob_name, { me })
  nk.friends_add(me, ctx.username, nil, { others.cat_name })
  nk.friend_metadata_update(me, bob, { best = true })
  local friends, fcursor = nk.friends_list(me, 10, 0)
  local all = nk.friends_list(me)
  nk.friends_add(bob, others.bob_name, { cat })
  nk.friends_add(cat, others.cat_name, { bob })
  local fof = nk.friends_of_friends_list(me, 10)
  nk.friends_block(cat, others.cat_name, { me })
  local after_block = nk.friends_list(me)
  local self_ok, self_err = pcall(nk.friends_add, me, ctx.username, { me })

  local group = nk.group_create(me, "Lua Guild", nil, "fr", "desc", "", false, { tier = 1 }, 3)
  -- The third argument is the recorded creator; the first user is the
  -- superadmin either way (nil above: the system user is the creator).
  local crafted = nk.group_create(me, "Lua Crafted", cat)
  -- nk.group_update's fourth argument records a new creator (server only).
  nk.group_update(crafted.id, nil, nil, bob)
  -- The nil id leaves it as it is, as in Nakama.
  nk.group_update(crafted.id, nil, nil, "00000000-0000-0000-0000-000000000000", "en")
  local crafted_got = nk.groups_get_id({ crafted.id })
  local crafted_members = nk.group_users_list(crafted.id, 10)
  local bad_creator_ok, bad_creator_err = pcall(nk.group_create, me, "Lua Bad", "not-an-id")
  nk.group_delete(crafted.id)
  nk.group_user_join(group.id, bob, others.bob_name)
  local requests = nk.group_users_list(group.id, 10, 3)
  nk.group_users_add(group.id, { bob })
  nk.group_users_promote(group.id, { bob }, me)
  local denied_ok, denied_err = pcall(nk.group_users_kick, group.id, { me }, cat)
  nk.group_update(group.id, nil, "Lua Guild 2", nil, nil, nil, nil, true, nil, 10)
  local members, mcursor = nk.group_users_list(group.id, 1)
  local bobs = nk.user_groups_list(bob)
  local got = nk.groups_get_id({ group.id })
  local listed, lcursor = nk.groups_list("Lua%", nil, nil, nil, 10)
  local random = nk.groups_get_random(5)
  nk.group_users_ban(group.id, { bob })
  local banned_join_ok = pcall(nk.group_user_join, group.id, bob, others.bob_name)
  local last_ok, last_err = pcall(nk.group_user_leave, group.id, me, ctx.username)
  nk.group_delete(group.id)
  local gone = nk.groups_get_id({ group.id })
  nk.friends_delete(me, ctx.username, { bob })

  return nk.json_encode({
    friend_count = #friends,
    friend_state = friends[1].state,
    friend_user = friends[1].user.user_id,
    friend_metadata = friends[1].metadata.best,
    friend_cursor = fcursor,
    all_count = #all,
    after_block = #after_block,
    self_refused = not self_ok,
    self_error = tostring(self_err),
    fof_referrer = fof[1] and fof[1].referrer,
    fof_user = fof[1] and fof[1].user.user_id,
    group_name = group.name,
    group_lang = group.lang_tag,
    group_open = group.open,
    group_tier = group.metadata.tier,
    group_max = group.max_count,
    group_creator = group.creator_id,
    crafted_creator = crafted.creator_id,
    crafted_stored_creator = crafted_got[1].creator_id,
    crafted_member_count = #crafted_members,
    crafted_superadmin = crafted_members[1].user.user_id,
    crafted_superadmin_state = crafted_members[1].state,
    bad_creator_refused = not bad_creator_ok,
    bad_creator_error = tostring(bad_creator_err),
    request_state = requests[1] and requests[1].state,
    request_user = requests[1] and requests[1].user.user_id,
    denied = not denied_ok,
    denied_error = tostring(denied_err),
    first_member_state = members[1].state,
    member_cursor = mcursor ~= nil,
    bob_group_state = bobs[1].state,
    bob_group_name = bobs[1].group.name,
    got_name = got[1].name,
    got_open = got[1].open,
    got_edges = got[1].edge_count,
    got_max = got[1].max_count,
    listed = #listed,
    random = #random,
    banned_join_refused = not banned_join_ok,
    last_refused = not last_ok,
    last_error = tostring(last_err),
    gone = #gone,
  })
end)

-- nk.users_get_friend_status: the caller invites bob, then asks about bob
-- and cat (no edge); then the refusals, and nk.get_satori's client.
rpc("lua_friend_status", function(ctx, payload)
  local others = nk.json_decode(payload)
  nk.friends_add(ctx.user_id, ctx.username, { others.bob }, nil, { note = "hi" })
  local status = nk.users_get_friend_status(ctx.user_id, { others.bob, others.cat })
  local empty = nk.users_get_friend_status(ctx.user_id, {})
  local _, bad_user = pcall(nk.users_get_friend_status, "nope", {})
  local _, bad_id = pcall(nk.users_get_friend_status, ctx.user_id, { "nope" })
  local _, bad_type = pcall(nk.users_get_friend_status, ctx.user_id, { 1 })
  local satori = nk.get_satori()
  local _, satori_err = pcall(satori.flags_list, satori, "id")
  return nk.json_encode({
    count = #status,
    user = status[1].user.user_id,
    state = status[1].state,
    note = status[1].metadata.note,
    has_time = status[1].update_time > 0,
    empty = #empty,
    bad_user = bad_user,
    bad_id = bad_id,
    bad_type = bad_type,
    satori = satori_err,
  })
end)
