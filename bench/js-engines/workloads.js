// The three workloads, as plain functions on the global object: the same
// source runs on every engine.

function echo(payload) {
  return JSON.stringify(JSON.parse(payload));
}

// A* across a 64x64 grid with walls every 8 columns, one gap each at
// alternating ends (a port of ludus_bench_path in bench/modules).
var GRID = 64;
var blocked = new Array(GRID * GRID + 1);
for (var x = 1; x <= GRID; x++) {
  for (var y = 1; y <= GRID; y++) {
    var wall = x % 8 === 0 && x < GRID;
    var gap = ((x / 8) % 2 === 1 && y === GRID) || ((x / 8) % 2 === 0 && y === 1);
    blocked[(y - 1) * GRID + x] = wall && !gap;
  }
}

function pathLength() {
  var goal = GRID * GRID;
  var g = {}; g[1] = 0;
  var heap = [0, 1], fs = [0, GRID * 2 - 2], n = 1;
  var closed = {};
  while (n > 0) {
    var cell = heap[1];
    heap[1] = heap[n]; fs[1] = fs[n]; n--;
    var i = 1;
    while (true) {
      var l = i * 2, r = i * 2 + 1, m = i;
      if (l <= n && fs[l] < fs[m]) m = l;
      if (r <= n && fs[r] < fs[m]) m = r;
      if (m === i) break;
      var t = heap[i]; heap[i] = heap[m]; heap[m] = t;
      t = fs[i]; fs[i] = fs[m]; fs[m] = t;
      i = m;
    }
    if (cell === goal) return g[cell];
    if (!closed[cell]) {
      closed[cell] = true;
      var cx = (cell - 1) % GRID + 1, cy = Math.floor((cell - 1) / GRID) + 1;
      var nb = [cx > 1 ? cell - 1 : 0, cx < GRID ? cell + 1 : 0,
                cy > 1 ? cell - GRID : 0, cy < GRID ? cell + GRID : 0];
      for (var k = 0; k < 4; k++) {
        var nc = nb[k];
        if (nc && !blocked[nc] && !closed[nc]) {
          var cost = g[cell] + 1;
          if (g[nc] === undefined || cost < g[nc]) {
            g[nc] = cost;
            var nx = (nc - 1) % GRID + 1, ny = Math.floor((nc - 1) / GRID) + 1;
            n++;
            heap[n] = nc; fs[n] = cost + (GRID - nx) + (GRID - ny);
            var j = n;
            while (j > 1) {
              var p = Math.floor(j / 2);
              if (fs[p] <= fs[j]) break;
              t = heap[p]; heap[p] = heap[j]; heap[j] = t;
              t = fs[p]; fs[p] = fs[j]; fs[j] = t;
              j = p;
            }
          }
        }
      }
    }
  }
  return -1;
}

function path() {
  return JSON.stringify({ steps: pathLength() });
}

// A match loop over 10 players' messages, the state a JS object kept
// between ticks: opcode 1 echoes to the sender, 2 broadcasts.
var state = { tick: 0, players: {} };
for (var p = 0; p < 10; p++) state.players["user" + p] = { score: 0, x: 0, y: 0 };
var messages = [];
for (var q = 0; q < 10; q++) {
  messages.push({ sender: { userId: "user" + q }, opCode: q % 2 + 1, data: '{"x":1,"y":2,"msg":"hello there"}' });
}
function matchLoop() {
  state.tick++;
  var out = 0;
  for (var i = 0; i < messages.length; i++) {
    var m = messages[i];
    var pl = state.players[m.sender.userId];
    var d = JSON.parse(m.data);
    pl.x += d.x; pl.y += d.y; pl.score++;
    out += m.opCode === 1 ? 1 : 10;
  }
  return out;
}
