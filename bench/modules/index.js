// The JS twin of ludus_bench.lua and ludus_bench_match.lua for `ludus bench`,
// for any server that runs Nakama's JS runtime (Ludus or Nakama 3.x): both
// load `index.js` from runtime.path when runtime.js_entrypoint is unset.
// Written as Nakama's JS runtime needs it: plain ES5, every callback a
// global function named directly in InitModule's register calls.
//
// RPC ids differ from the Lua ones (one id belongs to one runtime):
//
//   ludus_bench_js_echo        answers the payload unchanged
//                              (`rpc --rpc-id ludus_bench_js_echo`)
//   ludus_bench_js_path        the A* path search of ludus_bench_path, in JS
//                              (`rpc --rpc-id ludus_bench_js_path`)
//   ludus_bench_js_find_match  {"match_id": "..."}: a non-full match of the
//                              JS handler, or a new one
//                              (`match --match-rpc ludus_bench_js_find_match`)
//
// The match handler `ludus_bench_js_match` plays as ludus_bench_match.lua:
// 10 ticks per second, at most 10 players, op 1 echoed to its sender, op 2
// broadcast to every player, the label {"bench":2,"open":0|1} (2: not
// found by the Lua handler's finder), ended after 20 s without players.

var BENCH_TICK_RATE = 10;
var BENCH_MAX_PLAYERS = 10;
var BENCH_EMPTY_TICKS = 20 * BENCH_TICK_RATE;
var BENCH_OP_ECHO = 1;
var BENCH_OP_BROADCAST = 2;

function benchEcho(ctx, logger, nk, payload) {
  return payload;
}

// The path search's grid: 64x64 cells, walls every 8 columns with one gap
// each (at alternating ends), so a path must zigzag across the whole grid.
// Cells are numbered from 1 as in the Lua module.
var BENCH_GRID = 64;
var benchBlocked = (function () {
  var blocked = [];
  for (var x = 1; x <= BENCH_GRID; x++) {
    for (var y = 1; y <= BENCH_GRID; y++) {
      var wall = x % 8 === 0 && x < BENCH_GRID;
      var gap = ((x / 8) % 2 === 1 && y === BENCH_GRID) || ((x / 8) % 2 === 0 && y === 1);
      blocked[(y - 1) * BENCH_GRID + x] = wall && !gap;
    }
  }
  return blocked;
})();

// A* from the top-left to the bottom-right corner with a binary heap on
// f = g + manhattan distance; answers the number of steps of the path.
function benchPathLength() {
  var goal = BENCH_GRID * BENCH_GRID;
  var g = {};
  g[1] = 0;
  var heap = [0, 1];
  var fs = [0, BENCH_GRID * 2 - 2];
  var n = 1;
  var closed = {};
  while (n > 0) {
    var cell = heap[1];
    heap[1] = heap[n];
    fs[1] = fs[n];
    n--;
    var i = 1;
    for (;;) {
      var l = i * 2, r = i * 2 + 1, m = i;
      if (l <= n && fs[l] < fs[m]) m = l;
      if (r <= n && fs[r] < fs[m]) m = r;
      if (m === i) break;
      var th = heap[i]; heap[i] = heap[m]; heap[m] = th;
      var tf = fs[i]; fs[i] = fs[m]; fs[m] = tf;
      i = m;
    }
    if (cell === goal) return g[cell];
    if (closed[cell]) continue;
    closed[cell] = true;
    var x = ((cell - 1) % BENCH_GRID) + 1;
    var y = Math.floor((cell - 1) / BENCH_GRID) + 1;
    var neighbours = [
      x > 1 ? cell - 1 : 0, x < BENCH_GRID ? cell + 1 : 0,
      y > 1 ? cell - BENCH_GRID : 0, y < BENCH_GRID ? cell + BENCH_GRID : 0,
    ];
    for (var k = 0; k < 4; k++) {
      var next = neighbours[k];
      if (next === 0 || benchBlocked[next] || closed[next]) continue;
      var cost = g[cell] + 1;
      if (g[next] === undefined || cost < g[next]) {
        g[next] = cost;
        var nx = ((next - 1) % BENCH_GRID) + 1;
        var ny = Math.floor((next - 1) / BENCH_GRID) + 1;
        n++;
        heap[n] = next;
        fs[n] = cost + (BENCH_GRID - nx) + (BENCH_GRID - ny);
        var j = n;
        while (j > 1) {
          var p = Math.floor(j / 2);
          if (fs[p] <= fs[j]) break;
          var sh = heap[p]; heap[p] = heap[j]; heap[j] = sh;
          var sf = fs[p]; fs[p] = fs[j]; fs[j] = sf;
          j = p;
        }
      }
    }
  }
  return -1;
}

function benchPath(ctx, logger, nk, payload) {
  return JSON.stringify({ steps: benchPathLength() });
}

function benchFindMatch(ctx, logger, nk, payload) {
  // Matches of the JS handler with room for one more; the fullest first,
  // so matches reach ten players.
  var query = "+label.bench:2 +label.open:1";
  var matches = nk.matchList(20, true, null, 0, BENCH_MAX_PLAYERS - 1, query) || [];
  var best = null;
  for (var i = 0; i < matches.length; i++) {
    if (best === null || matches[i].size > best.size) best = matches[i];
  }
  var matchId = best !== null ? best.matchId : nk.matchCreate("ludus_bench_js_match", {});
  return JSON.stringify({ match_id: matchId });
}

function benchLabel(open) {
  return JSON.stringify({ bench: 2, open: open ? 1 : 0 });
}

// Joined players plus accepted join attempts not yet completed.
function benchTaken(state) {
  return state.count + state.pending;
}

function benchRelabel(dispatcher, state) {
  var open = benchTaken(state) < BENCH_MAX_PLAYERS;
  if (open !== state.open) {
    state.open = open;
    dispatcher.matchLabelUpdate(benchLabel(open));
  }
}

function benchMatchInit(ctx, logger, nk, params) {
  var state = { presences: {}, count: 0, pending: 0, pendingSince: 0, open: true, emptyTicks: 0 };
  return { state: state, tickRate: BENCH_TICK_RATE, label: benchLabel(true) };
}

function benchMatchJoinAttempt(ctx, logger, nk, dispatcher, tick, state, presence, metadata) {
  if (state.presences[presence.sessionId]) {
    return { state: state, accept: false, rejectMessage: "already in this match" };
  }
  if (benchTaken(state) >= BENCH_MAX_PLAYERS) {
    return { state: state, accept: false, rejectMessage: "match full" };
  }
  state.pending++;
  state.pendingSince = tick;
  benchRelabel(dispatcher, state);
  return { state: state, accept: true };
}

function benchMatchJoin(ctx, logger, nk, dispatcher, tick, state, presences) {
  for (var i = 0; i < presences.length; i++) {
    var p = presences[i];
    if (!state.presences[p.sessionId]) {
      state.presences[p.sessionId] = p;
      state.count++;
    }
    if (state.pending > 0) state.pending--;
  }
  benchRelabel(dispatcher, state);
  return { state: state };
}

function benchMatchLeave(ctx, logger, nk, dispatcher, tick, state, presences) {
  for (var i = 0; i < presences.length; i++) {
    var p = presences[i];
    if (state.presences[p.sessionId]) {
      delete state.presences[p.sessionId];
      state.count--;
    }
  }
  benchRelabel(dispatcher, state);
  return { state: state };
}

function benchMatchLoop(ctx, logger, nk, dispatcher, tick, state, messages) {
  // An accepted attempt whose join never came (the socket went away) frees
  // its place after a second.
  if (state.pending > 0 && tick - state.pendingSince > BENCH_TICK_RATE) {
    state.pending = 0;
    benchRelabel(dispatcher, state);
  }
  for (var i = 0; i < messages.length; i++) {
    var m = messages[i];
    if (m.opCode === BENCH_OP_ECHO) {
      dispatcher.broadcastMessage(BENCH_OP_ECHO, m.data, [m.sender], null);
    } else if (m.opCode === BENCH_OP_BROADCAST) {
      dispatcher.broadcastMessage(BENCH_OP_BROADCAST, m.data, null, m.sender);
    }
  }
  if (state.count === 0 && state.pending === 0) {
    state.emptyTicks++;
    if (state.emptyTicks >= BENCH_EMPTY_TICKS) return null;
  } else {
    state.emptyTicks = 0;
  }
  return { state: state };
}

function benchMatchTerminate(ctx, logger, nk, dispatcher, tick, state, graceSeconds) {
  return { state: state };
}

function benchMatchSignal(ctx, logger, nk, dispatcher, tick, state, data) {
  return { state: state, data: data };
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("ludus_bench_js_echo", benchEcho);
  initializer.registerRpc("ludus_bench_js_path", benchPath);
  initializer.registerRpc("ludus_bench_js_find_match", benchFindMatch);
  initializer.registerMatch("ludus_bench_js_match", {
    matchInit: benchMatchInit,
    matchJoinAttempt: benchMatchJoinAttempt,
    matchJoin: benchMatchJoin,
    matchLeave: benchMatchLeave,
    matchLoop: benchMatchLoop,
    matchTerminate: benchMatchTerminate,
    matchSignal: benchMatchSignal,
  });
  logger.info("ludus bench JS module loaded");
}
