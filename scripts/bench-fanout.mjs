// Chat fan-out: starts nothing itself. Given a running ludus, signs in
// rooms × members devices, opens one JSON socket each, joins every socket to
// its room (`room-<k>`, persistence off), then one sender per room posts
// `channel_message_send` at a fixed total rate for a fixed time. Every
// receiver counts deliveries and measures latency from the send timestamp in
// the content (same process, same clock). Prints one JSON line.
//
//   node scripts/bench-fanout.mjs <rooms> <members> <msgs_per_sec> <seconds> [port] [server-pid]
//
// With the server's pid it also reports the server's CPU use while sending
// (1.0 is one core busy), which tells a saturated server from a slow client.
//
// Uses the `ws` package installed for tests/js (run `npm ci` there first).
// Sockets spread over loopback source addresses 127.0.0.2-9.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { createRequire } from "node:module";

const require = createRequire(new URL("../tests/js/package.json", import.meta.url));
const WebSocket = require("ws");

const [roomsArg, membersArg, rateArg, secsArg, port = "7350", serverPid] = process.argv.slice(2);
const rooms = Number(roomsArg);
const members = Number(membersArg);
const rate = Number(rateArg);
const secs = Number(secsArg);
const base = `127.0.0.1:${port}`;
const total = rooms * members;
const run = Date.now().toString(36);

// Server CPU seconds so far (user + system), or NaN without a pid.
const cpuSecs = () => {
  if (!serverPid) return NaN;
  const f = readFileSync(`/proc/${serverPid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};

// Bounded worker pool: runs f(i) for i in 0..n with at most `width` in flight.
async function pool(n, width, f) {
  let next = 0;
  const out = new Array(n);
  const worker = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await f(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker));
  return out;
}

const auth = "Basic " + Buffer.from("defaultkey:").toString("base64");
const signIn = async (i) => {
  const res = await fetch(`http://${base}/v2/account/authenticate/device?create=true`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify({ id: `fanout-${run}-${i}` }),
  });
  if (!res.ok) throw new Error(`sign-in ${i}: ${res.status} ${await res.text()}`);
  return (await res.json()).token;
};

// Latency histogram in 10 µs buckets up to 30 s.
const BUCKET_MS = 0.01;
const hist = new Uint32Array(3_000_001);
let delivered = 0;
let firstSend = 0;
let lastRecv = 0;
let closedEarly = 0;
let stopping = false;
const needle = 'ts\\":'; // content arrives as an escaped JSON string

const onMessage = (data) => {
  const s = data.toString();
  if (!s.startsWith('{"channel_message"')) return;
  const now = performance.now();
  const at = s.indexOf(needle);
  const sent = parseFloat(s.slice(at + needle.length, at + needle.length + 24));
  const ms = now - sent;
  hist[Math.min(hist.length - 1, Math.max(0, Math.round(ms / BUCKET_MS)))]++;
  delivered++;
  lastRecv = now;
};

const open = (i, token) =>
  new Promise((resolve, reject) => {
    const localAddress = `127.0.0.${2 + (i % 8)}`;
    const ws = new WebSocket(`ws://${base}/ws?token=${token}&format=json`, { localAddress, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
    ws.on("close", () => {
      if (!stopping) closedEarly++;
    });
  });

// Sends one request and resolves with the reply carrying the same cid.
const request = (ws, cid, body) =>
  new Promise((resolve, reject) => {
    const onReply = (data) => {
      const s = data.toString();
      if (!s.includes(`"cid":"${cid}"`)) return;
      ws.off("message", onReply);
      const v = JSON.parse(s);
      if (v.error) reject(new Error(JSON.stringify(v.error)));
      else resolve(v);
    };
    ws.on("message", onReply);
    ws.send(JSON.stringify({ cid, ...body }));
  });

const t0 = performance.now();
const tokens = await pool(total, 32, signIn);
const sockets = await pool(total, 200, (i) => open(i, tokens[i]));
const tSockets = performance.now();
// Socket i is member i % members of room floor(i / members). Joins run a few
// at a time: every join tells the room's members about the newcomer.
const channelIds = new Array(rooms);
await pool(total, rooms === 1 ? 8 : 200, async (i) => {
  const v = await request(sockets[i], `j${i}`, {
    channel_join: { target: `room-${Math.floor(i / members)}`, type: 1, persistence: false, hidden: false },
  });
  channelIds[Math.floor(i / members)] = v.channel.id;
});
await new Promise((r) => setTimeout(r, 1000)); // let presence events drain
for (const ws of sockets) ws.on("message", onMessage);
const tJoined = performance.now();

// Pacing: every millisecond, send whatever the rate owes by now, round-robin
// over the rooms' senders (member 0 of each room).
let sent = 0;
const cpuBefore = cpuSecs();
firstSend = performance.now();
const end = firstSend + secs * 1000;
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    const owed = Math.min(Math.floor(((now - firstSend) * rate) / 1000), Math.floor(secs * rate));
    while (sent < owed) {
      const room = sent % rooms;
      const content = `{"ts":${performance.now().toFixed(3)}}`;
      sockets[room * members].send(
        `{"channel_message_send":{"channel_id":${JSON.stringify(channelIds[room])},"content":${JSON.stringify(content)}}}`,
      );
      sent++;
    }
    if (now >= end) resolve();
    else setTimeout(tick, 1);
  };
  tick();
});
const expected = sent * members;
// Drain: wait until every delivery arrived or nothing arrived for 2 s.
await new Promise((resolve) => {
  const check = () => {
    if (delivered >= expected || performance.now() - lastRecv > 2000) resolve();
    else setTimeout(check, 50);
  };
  check();
});

const serverCpu = (cpuSecs() - cpuBefore) / ((performance.now() - firstSend) / 1000);

const pct = (p) => {
  const want = Math.ceil(delivered * p);
  let seen = 0;
  for (let b = 0; b < hist.length; b++) {
    seen += hist[b];
    if (seen >= want) return +(b * BUCKET_MS).toFixed(2);
  }
  return null;
};
const span = (lastRecv - firstSend) / 1000;
console.log(
  JSON.stringify({
    rooms,
    members,
    send_rate: rate,
    seconds: secs,
    sent,
    expected,
    delivered,
    deliveries_per_sec: Math.round(delivered / span),
    offered_deliveries_per_sec: rate * members,
    p50_ms: pct(0.5),
    p99_ms: pct(0.99),
    max_ms: pct(1),
    sockets_closed_early: closedEarly,
    server_cpu: Number.isNaN(serverCpu) ? null : +serverCpu.toFixed(2),
    setup_s: +((tJoined - t0) / 1000).toFixed(1),
    sockets_s: +((tSockets - t0) / 1000).toFixed(1),
  }),
);
stopping = true;
for (const ws of sockets) ws.terminate();
process.exit(0);
