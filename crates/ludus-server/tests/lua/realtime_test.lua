-- Module loaded by the socket tests in tests/ws/runtime_realtime.rs: the
-- realtime `nk` functions (notifications, chat, sessions, streams) called
-- from socket RPCs, and realtime before/after hooks on channel messages.
local nk = require("nakama")

local function rpc(id, fn) nk.register_rpc(fn, id) end

-- A module's own stream, as Nakama's documentation shows them.
local LOBBY = { mode = 123, label = "lobby" }

rpc("rt_notify", function(ctx, payload)
  local to = nk.json_decode(payload).user_id
  nk.notification_send(to, "one", { n = 1 }, 101, ctx.user_id, true)
  nk.notifications_send({
    { user_id = to, subject = "two", content = { n = 2 }, code = 102, persistent = false },
    { user_id = to, subject = "three", content = { n = 3 }, code = 103, sender_id = ctx.user_id, persistent = true },
  })
  return "sent"
end)

rpc("rt_channel", function(ctx, payload)
  local args = nk.json_decode(payload)
  local room = nk.channel_id_build("", args.room, 1)
  local dm = nk.channel_id_build(ctx.user_id, args.other, 2)
  local ack = nk.channel_message_send(room, { text = "from lua" }, ctx.user_id, ctx.username, true)
  return nk.json_encode({ room = room, dm = dm, ack = ack })
end)

rpc("rt_disconnect", function(ctx, payload)
  nk.session_disconnect(payload)
  return "ok"
end)

-- payload: {"session_id": "...", "reason": n}
rpc("rt_disconnect_reason", function(ctx, payload)
  local args = nk.json_decode(payload)
  local ok, err = pcall(nk.session_disconnect, args.session_id, args.reason)
  return ok and "ok" or tostring(err)
end)

-- payload: {"ids": [...], "unban": bool}: nk.users_ban_id (or
-- nk.users_unban_id); answers "ok" or the error.
rpc("rt_ban", function(ctx, payload)
  local args = nk.json_decode(payload)
  local f = args.unban and nk.users_unban_id or nk.users_ban_id
  local ok, err = pcall(f, args.ids)
  return ok and "ok" or tostring(err)
end)

rpc("rt_stream_join", function(ctx, payload)
  local joined = nk.stream_user_join(ctx.user_id, ctx.session_id, LOBBY, false, true, payload)
  local again = nk.stream_user_join(ctx.user_id, ctx.session_id, LOBBY, false, true, payload)
  return nk.json_encode({
    joined = joined,
    again = again,
    count = nk.stream_count(LOBBY),
    get = nk.stream_user_get(ctx.user_id, ctx.session_id, LOBBY),
  })
end)

rpc("rt_stream_update", function(ctx, payload)
  nk.stream_user_update(ctx.user_id, ctx.session_id, LOBBY, true, false, payload)
  return nk.json_encode({
    get = nk.stream_user_get(ctx.user_id, ctx.session_id, LOBBY),
    visible = #nk.stream_user_list(LOBBY, false, true),
    all = nk.stream_user_list(LOBBY),
  })
end)

rpc("rt_stream_send", function(ctx, payload)
  local to = nil
  if payload ~= "all" then to = { { user_id = ctx.user_id, session_id = payload } } end
  nk.stream_send(LOBBY, "data:" .. payload, to)
  return "sent"
end)

-- nk.stream_send_raw: a whole envelope, to one session.
rpc("rt_stream_send_raw", function(ctx, payload)
  local to = { { user_id = ctx.user_id, session_id = payload } }
  local envelope = { notifications = { notifications = { { subject = "raw", code = 101, content = "{}" } } } }
  nk.stream_send_raw(LOBBY, envelope, to)
  local _, bad = pcall(nk.stream_send_raw, LOBBY, { no_such_message = {} })
  local _, empty = pcall(nk.stream_send_raw, LOBBY, { cid = "1" })
  return nk.json_encode({ bad = tostring(bad), empty = tostring(empty) })
end)

rpc("rt_stream_leave", function(ctx, payload)
  nk.stream_user_leave(ctx.user_id, ctx.session_id, LOBBY)
  return tostring(nk.stream_count(LOBBY))
end)

rpc("rt_stream_kick", function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.stream_user_kick(p, LOBBY)
  return tostring(nk.stream_count(LOBBY))
end)

rpc("rt_stream_close", function(ctx, payload)
  nk.stream_close(LOBBY)
  return tostring(nk.stream_count(LOBBY))
end)

rpc("rt_last_after", function(ctx, payload)
  return nk.localcache_get("rt_after") or ""
end)

-- Channel messages: `reject` in the content is refused, `fail` makes the
-- hook fail, `rewrite` is replaced.
nk.register_rt_before(function(ctx, envelope)
  local content = envelope.channel_message_send.content
  if string.find(content, "reject", 1, true) then return nil end
  if string.find(content, "fail", 1, true) then error("hook says no") end
  if string.find(content, "rewrite", 1, true) then
    envelope.channel_message_send.content = nk.json_encode({ text = "rewritten by hook" })
  end
  return envelope
end, "ChannelMessageSend")

nk.register_rt_after(function(ctx, response, request)
  nk.localcache_put("rt_after", nk.json_encode({
    user_id = ctx.user_id,
    request = request.channel_message_send.content,
    message_id = response.channel_message_ack.message_id,
  }))
end, "ChannelMessageSend")

-- nk.status_follow|unfollow for another session, by id.
rpc("rt_status_follow", function(ctx, payload)
  local p = nk.json_decode(payload)
  if p.unfollow then
    nk.status_unfollow(p.session_id, p.user_ids)
  else
    nk.status_follow(p.session_id, p.user_ids)
  end
  local _, bad_session = pcall(nk.status_follow, "nope", p.user_ids)
  local _, bad_user = pcall(nk.status_unfollow, p.session_id, { "nope" })
  return nk.json_encode({ bad_session = tostring(bad_session), bad_user = tostring(bad_user) })
end)
