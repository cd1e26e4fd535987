// The JS twin of tests/lua/realtime_test.lua's streams, session, status
// RPCs and channel message hooks, driven by tests/ws/runtime_realtime.rs with the same RPC ids and
// answers of the same shape, so one test body checks both runtimes.

var LOBBY = { mode: 123, label: "lobby" };

function errorText(f) {
  try {
    f();
  } catch (e) {
    return String(e.message || e);
  }
  return "nothing thrown";
}

function presenceOf(p) {
  return p === null ? null : { status: p.status, hidden: p.hidden, persistence: p.persistence };
}

function InitModule(ctx, logger, nk, initializer) {
  // Channel messages: `reject` in the content is refused, `fail` makes the
  // hook fail, `rewrite` is replaced.
  initializer.registerRtBefore("ChannelMessageSend", function (ctx, logger, nk, envelope) {
    var content = envelope.channelMessageSend.content;
    if (content.indexOf("reject") >= 0) return null;
    if (content.indexOf("fail") >= 0) throw new Error("hook says no");
    if (content.indexOf("rewrite") >= 0) {
      envelope.channelMessageSend.content = JSON.stringify({ text: "rewritten by hook" });
    }
    return envelope;
  });
  initializer.registerRtAfter("ChannelMessageSend", function (ctx, logger, nk, output, input) {
    nk.localcachePut("rt_after", JSON.stringify({
      user_id: ctx.userId,
      request: input.channelMessageSend.content,
      message_id: output.channelMessageAck.messageId,
    }));
  });
  initializer.registerRpc("rt_last_after", function (ctx, logger, nk, payload) {
    return nk.localcacheGet("rt_after", "");
  });
  initializer.registerRpc("ctx", function (ctx, logger, nk, payload) {
    return JSON.stringify({ session_id: ctx.sessionId, user_id: ctx.userId });
  });
  initializer.registerRpc("rt_disconnect", function (ctx, logger, nk, payload) {
    nk.sessionDisconnect(payload);
    return "ok";
  });
  initializer.registerRpc("rt_disconnect_reason", function (ctx, logger, nk, payload) {
    var args = JSON.parse(payload);
    try {
      nk.sessionDisconnect(args.session_id, args.reason);
      return "ok";
    } catch (e) {
      return String(e.message || e);
    }
  });
  initializer.registerRpc("rt_stream_join", function (ctx, logger, nk, payload) {
    var joined = nk.streamUserJoin(ctx.userId, ctx.sessionId, LOBBY, false, true, payload);
    var again = nk.streamUserJoin(ctx.userId, ctx.sessionId, LOBBY, false, true, payload);
    return JSON.stringify({
      joined: joined,
      again: again,
      count: nk.streamCount(LOBBY),
      get: presenceOf(nk.streamUserGet(ctx.userId, ctx.sessionId, LOBBY)),
    });
  });
  initializer.registerRpc("rt_stream_update", function (ctx, logger, nk, payload) {
    nk.streamUserUpdate(ctx.userId, ctx.sessionId, LOBBY, true, false, payload);
    return JSON.stringify({
      get: presenceOf(nk.streamUserGet(ctx.userId, ctx.sessionId, LOBBY)),
      visible: nk.streamUserList(LOBBY, false, true).length,
      all: nk.streamUserList(LOBBY),
    });
  });
  initializer.registerRpc("rt_stream_send", function (ctx, logger, nk, payload) {
    var to = payload === "all" ? null : [{ userId: ctx.userId, sessionId: payload }];
    nk.streamSend(LOBBY, "data:" + payload, to);
    return "sent";
  });
  initializer.registerRpc("rt_stream_send_raw", function (ctx, logger, nk, payload) {
    var to = [{ userId: ctx.userId, sessionId: payload }];
    var envelope = { notifications: { notifications: [{ subject: "raw", code: 101, content: "{}" }] } };
    nk.streamSendRaw(LOBBY, envelope, to);
    return JSON.stringify({
      bad: errorText(function () { nk.streamSendRaw(LOBBY, { no_such_message: {} }); }),
      empty: errorText(function () { nk.streamSendRaw(LOBBY, { cid: "1" }); }),
    });
  });
  initializer.registerRpc("rt_stream_leave", function (ctx, logger, nk, payload) {
    nk.streamUserLeave(ctx.userId, ctx.sessionId, LOBBY);
    return String(nk.streamCount(LOBBY));
  });
  initializer.registerRpc("rt_stream_kick", function (ctx, logger, nk, payload) {
    var p = JSON.parse(payload);
    nk.streamUserKick({ userId: p.user_id, sessionId: p.session_id }, LOBBY);
    return String(nk.streamCount(LOBBY));
  });
  initializer.registerRpc("rt_stream_close", function (ctx, logger, nk, payload) {
    nk.streamClose(LOBBY);
    return String(nk.streamCount(LOBBY));
  });
  initializer.registerRpc("rt_status_follow", function (ctx, logger, nk, payload) {
    var p = JSON.parse(payload);
    if (p.unfollow) {
      nk.statusUnfollow(p.session_id, p.user_ids);
    } else {
      nk.statusFollow(p.session_id, p.user_ids);
    }
    return JSON.stringify({
      bad_session: errorText(function () { nk.statusFollow("nope", p.user_ids); }),
      bad_user: errorText(function () { nk.statusUnfollow(p.session_id, ["nope"]); }),
    });
  });
}
