// The server tests' JS match module (tests/ws/js_match.rs): a handler for
// every callback, and RPCs over the match nk functions. Op codes from
// clients: 1 echo to the sender, 2 broadcast from the sender, 3 update the
// label, 4 kick the sender, 7 loop forever, 8 deferred broadcast.
function arenaInit(ctx, logger, nk, params) {
  return { state: { players: {}, count: 0 }, tickRate: 10, label: JSON.stringify({ mode: params.mode || "open" }) };
}

function arenaJoinAttempt(ctx, logger, nk, dispatcher, tick, state, presence, metadata) {
  if (metadata.password === "wrong") return { state: state, accept: false, rejectMessage: "bad password" };
  return { state: state, accept: true };
}

function arenaJoin(ctx, logger, nk, dispatcher, tick, state, presences) {
  presences.forEach(function (p) { state.players[p.sessionId] = p; state.count++; });
  dispatcher.broadcastMessage(100, JSON.stringify({ matchId: ctx.matchId, mode: ctx.executionMode, joined: presences.length }));
  return { state: state };
}

function arenaLeave(ctx, logger, nk, dispatcher, tick, state, presences) {
  presences.forEach(function (p) { if (state.players[p.sessionId]) { delete state.players[p.sessionId]; state.count--; } });
  return { state: state };
}

function arenaLoop(ctx, logger, nk, dispatcher, tick, state, messages) {
  for (var i = 0; i < messages.length; i++) {
    var m = messages[i];
    if (m.opCode === 1) dispatcher.broadcastMessage(1, m.data, [m.sender]);
    else if (m.opCode === 2) dispatcher.broadcastMessage(2, m.data, null, m.sender);
    else if (m.opCode === 3) dispatcher.matchLabelUpdate(JSON.stringify({ mode: "changed" }));
    else if (m.opCode === 4) dispatcher.matchKick([m.sender]);
    else if (m.opCode === 7) { while (true) {} }
    else if (m.opCode === 8) dispatcher.broadcastMessageDeferred(8, "deferred:" + ctx.matchLabel, null, null, false);
  }
  return { state: state };
}

function arenaTerminate(ctx, logger, nk, dispatcher, tick, state, graceSeconds) {
  dispatcher.broadcastMessage(99, "terminating " + graceSeconds);
  return { state: state };
}

function arenaSignal(ctx, logger, nk, dispatcher, tick, state, data) {
  if (data === "end") return null;
  return { state: state, data: "signal " + data + " players " + state.count };
}

function createMatch(ctx, logger, nk, payload) {
  var req = JSON.parse(payload);
  return nk.matchCreate(req.module, req.params);
}

function getMatch(ctx, logger, nk, payload) {
  return JSON.stringify(nk.matchGet(payload));
}

function listMatches(ctx, logger, nk, payload) {
  return JSON.stringify(nk.matchList(10, true));
}

function signalMatch(ctx, logger, nk, payload) {
  var req = JSON.parse(payload);
  return nk.matchSignal(req.matchId, req.data);
}

// A matched group plays in a new JS match labelled with its size.
function matched(ctx, logger, nk, matches) {
  return nk.matchCreate("js_arena", { mode: "matched " + matches.length + " " + (matches[0].presence.userId ? "ids" : "no ids") });
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerMatch("js_arena", {
    matchInit: arenaInit,
    matchJoinAttempt: arenaJoinAttempt,
    matchJoin: arenaJoin,
    matchLeave: arenaLeave,
    matchLoop: arenaLoop,
    matchTerminate: arenaTerminate,
    matchSignal: arenaSignal,
  });
  initializer.registerMatchmakerMatched(matched);
  initializer.registerRpc("js_create", createMatch);
  initializer.registerRpc("js_get", getMatch);
  initializer.registerRpc("js_list", listMatches);
  initializer.registerRpc("js_signal", signalMatch);
}
