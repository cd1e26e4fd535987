// The schedule, REST hook and shutdown callbacks of Nakama's JS API, for
// tests/http/js_callbacks.rs: a leaderboard reset, a tournament's end and
// reset (Nakama's arguments noted in the node's cache) and a shutdown
// callback that writes a storage object the next start reads.

var NIL = "00000000-0000-0000-0000-000000000000";

function note(nk, key, value) {
  nk.localcachePut(key, JSON.stringify(value));
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerLeaderboardReset(function (ctx, logger, nk, leaderboard, reset) {
    note(nk, "leaderboard_reset", { id: leaderboard.id, reset: reset, mode: ctx.executionMode });
  });
  initializer.registerTournamentEnd(function (ctx, logger, nk, tournament, end, reset) {
    note(nk, "tournament_end", { id: tournament.id, end: end, reset: reset, mode: ctx.executionMode });
  });
  initializer.registerTournamentReset(function (ctx, logger, nk, tournament, end, reset) {
    note(nk, "tournament_reset", { id: tournament.id, end: end, reset: reset, mode: ctx.executionMode });
  });
  // REST hooks: writes to "refused" are turned away, values rewritten,
  // and the after hook notes what was written.
  initializer.registerBeforeWriteStorageObjects(function (ctx, logger, nk, req) {
    if (req.objects.some(function (o) { return o.collection === "refused"; })) return null;
    req.objects.forEach(function (o) {
      var v = JSON.parse(o.value);
      v.hooked = true;
      o.value = JSON.stringify(v);
    });
    return req;
  });
  initializer.registerAfterWriteStorageObjects(function (ctx, logger, nk, out, req) {
    note(nk, "after_write", { user: ctx.userId, keys: out.acks.map(function (a) { return a.key; }) });
  });
  initializer.registerShutdown(function (ctx, logger, nk) {
    nk.storageWrite([{ collection: "js_callbacks", key: "shutdown", userId: NIL,
      value: { mode: ctx.executionMode, at: Math.floor(Date.now() / 1000) } }]);
  });
  // A board reset every minute, and a tournament of two seconds a minute.
  initializer.registerRpc("cb_setup", function (ctx, logger, nk, payload) {
    var now = Math.floor(Date.now() / 1000);
    nk.leaderboardCreate("js-cb-board", false, "desc", "best", "* * * * *");
    nk.tournamentCreate("js-cb-cup", false, "desc", "best", 2, "* * * * *", {}, "Cup", "", 0, now, 0, 10, 0, false);
    return JSON.stringify({ created: now });
  });
  initializer.registerRpc("cb_seen", function (ctx, logger, nk, key) {
    return nk.localcacheGet(key, "");
  });
  initializer.registerRpc("cb_shutdown", function (ctx, logger, nk, payload) {
    var found = nk.storageRead([{ collection: "js_callbacks", key: "shutdown", userId: NIL }]);
    return found.length ? JSON.stringify(found[0].value) : "";
  });
}
