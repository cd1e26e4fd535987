// Idle-socket memory: starts nothing itself. Given a running ludus (pinned to
// one core by the caller) and its pid, opens N authenticated sockets that then
// sit idle, and prints the server's RSS growth per socket.
//
//   taskset -c 0 target/release/ludus --data_dir /tmp/idle &
//   node scripts/bench-idle-sockets.mjs <pid> 10000 [json|protobuf] [port]
//
// Uses the `ws` package installed for tests/js (run `npm ci` there first).
// Several loopback source addresses spread the sockets past one address's
// ephemeral ports.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("../tests/js/package.json", import.meta.url));
const WebSocket = require("ws");

const [pid, countArg, format = "json", port = "7350"] = process.argv.slice(2);
const count = Number(countArg ?? 10000);
const base = `127.0.0.1:${port}`;

const rssKiB = () => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Number(line.split(/\s+/)[1]);
};

const res = await fetch(`http://${base}/v2/account/authenticate/device?create=true`, {
  method: "POST",
  headers: { authorization: "Basic " + Buffer.from("defaultkey:").toString("base64"), "content-type": "application/json" },
  body: JSON.stringify({ id: `idle-bench-${Date.now()}` }),
});
const { token } = await res.json();

const open = (i) =>
  new Promise((resolve, reject) => {
    const localAddress = `127.0.0.${2 + (i % 8)}`;
    const ws = new WebSocket(`ws://${base}/ws?token=${token}&format=${format}`, { localAddress, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });

// Warm up allocator arenas and caches with a few sockets first.
const warm = [];
for (let i = 0; i < 100; i++) warm.push(await open(i));
await new Promise((r) => setTimeout(r, 1000));
const before = rssKiB();
const sockets = [];
const batch = 200;
for (let i = 0; i < count; i += batch) {
  const n = Math.min(batch, count - i);
  sockets.push(...(await Promise.all(Array.from({ length: n }, (_, j) => open(i + j)))));
}
await new Promise((r) => setTimeout(r, 3000));
const after = rssKiB();
const per = ((after - before) * 1024) / count;
console.log(JSON.stringify({ sockets: count, format, rss_before_kib: before, rss_after_kib: after, bytes_per_socket: Math.round(per) }));
for (const ws of [...warm, ...sockets]) ws.terminate();
