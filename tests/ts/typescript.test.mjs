// examples/typescript, compiled by the real `tsc` (scripts/test builds it
// into LUDUS_BUNDLE) and loaded unchanged by Ludus, driven through the real
// Nakama JavaScript client: its RPCs, its before and after hooks, storage,
// a wallet change, and its authoritative match (matchInit, matchJoinAttempt,
// matchJoin, matchLoop). Its `logger` lines carry the bundle's file and
// line: the test finds them in the server's log (LUDUS_LOG).
//
// The server is started by the caller (scripts/test, on SQLite and on
// PostgreSQL); LUDUS_HOST and LUDUS_PORT say where it listens. With
// TS_SERVER=nakama the same test runs against Nakama 3.40 (scripts/test
// with NAKAMA_BIN): the same calls must give the same answers; only the
// logger test, about Ludus's own file and line fields, is skipped there.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { Client } from "@heroiclabs/nakama-js";

globalThis.WebSocket = WebSocket;

const HOST = process.env.LUDUS_HOST ?? "127.0.0.1";
const PORT = process.env.LUDUS_PORT ?? "7350";
const client = new Client("defaultkey", HOST, PORT, false, 5000, false);
const device = () => `ts-device-${randomUUID()}`;

/** Awaits `promise`, which must reject with an HTTP error of `status`; its body. */
async function httpError(promise, status) {
  const error = await promise.then(
    (v) => assert.fail(`expected HTTP ${status}, got ${JSON.stringify(v)}`),
    (e) => e,
  );
  assert.ok(error instanceof Response, `expected an HTTP error response, got ${error}`);
  const body = await error.json();
  assert.equal(error.status, status, JSON.stringify(body));
  return body;
}

/** Match data a socket receives, in order, with a wait for the next of an op code. */
function inbox(socket) {
  const seen = [];
  const waiting = [];
  socket.onmatchdata = (d) => {
    seen.push(d);
    for (const w of waiting.splice(0)) w();
  };
  return async function next(opCode, ms = 5000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = seen.findIndex((d) => d.op_code === opCode);
      if (i >= 0) {
        const [d] = seen.splice(i, 1);
        return { ...d, text: new TextDecoder().decode(d.data) };
      }
      const left = deadline - Date.now();
      if (left <= 0) assert.fail(`no match data with op code ${opCode} within ${ms} ms`);
      await new Promise((resolve) => {
        waiting.push(resolve);
        setTimeout(resolve, left);
      });
    }
  };
}

describe("a TypeScript module compiled by tsc", () => {
  let ann, annDevice;

  before(async () => {
    annDevice = device();
    ann = await client.authenticateDevice(annDevice, true, `ts${randomUUID().slice(0, 12)}`);
  });

  test("an RPC answers with the caller's ctx and its payload", async () => {
    const r = await client.rpc(ann, "ts_hello", { hello: "world" });
    assert.deepEqual(r.payload, { userId: ann.user_id, mode: "rpc", payload: '{"hello":"world"}' });
  });

  const onNakama = process.env.TS_SERVER === "nakama";
  test("its logger lines carry the bundle's file and line", { skip: onNakama && "Nakama's logger lines have no file and line" }, async () => {
    const log = process.env.LUDUS_LOG;
    const bundle = process.env.LUDUS_BUNDLE;
    // Run by hand without them: say so rather than pass silently.
    assert.ok(log && bundle, "LUDUS_LOG and LUDUS_BUNDLE must name the server's log and the compiled bundle");
    const line = readFileSync(bundle, "utf8").split("\n").findIndex((l) => l.includes('"ts_hello called by %s"')) + 1;
    assert.ok(line > 0, "the bundle has the logger call");
    const wanted = `ts_hello called by ${ann.user_id}`;
    let found;
    for (let i = 0; i < 50 && !found; i++) {
      found = readFileSync(log, "utf8").split("\n").find((l) => l.includes(wanted));
      if (!found) await sleep(100);
    }
    assert.ok(found, `the server log has "${wanted}"`);
    assert.match(found, /file=\S*index\.js/, found);
    assert.match(found, new RegExp(`line=${line}\\b`), found);
  });

  test("the after hook of device sign-in stored a first-sign-in object, once", async () => {
    const read = () =>
      client.readStorageObjects(ann, { object_ids: [{ collection: "profile", key: "first_sign_in", user_id: ann.user_id }] });
    const first = await read();
    assert.equal(first.objects.length, 1, JSON.stringify(first));
    assert.equal(first.objects[0].value.device, true);
    // Signing in again creates no account, so the hook writes nothing.
    await client.authenticateDevice(annDevice, false);
    const again = await read();
    assert.equal(again.objects[0].version, first.objects[0].version);
  });

  test("the before hook of UpdateAccount trims display names and refuses blank ones", async () => {
    await client.updateAccount(ann, { display_name: "  Ann of Ludus  " });
    assert.equal((await client.getAccount(ann)).user.display_name, "Ann of Ludus");
    const body = await httpError(client.updateAccount(ann, { display_name: "   " }), 400);
    assert.match(body.message, /display name must not be blank/);
    assert.equal((await client.getAccount(ann)).user.display_name, "Ann of Ludus", "the refused change lost nothing");
  });

  test("an RPC writes and reads storage, and refuses bad input with its code", async () => {
    const r = await client.rpc(ann, "ts_save_progress", { level: 7 });
    assert.deepEqual(r.payload.stored, { level: 7 });
    const objects = await client.readStorageObjects(ann, {
      object_ids: [{ collection: "progress", key: "current", user_id: ann.user_id }],
    });
    assert.deepEqual(objects.objects[0].value, { level: 7 });
    assert.equal(objects.objects[0].version, r.payload.version);
    const body = await httpError(client.rpc(ann, "ts_save_progress", { level: "high" }), 400);
    assert.match(body.message, /level must be a positive number/);
  });

  test("an RPC changes the wallet, with a ledger entry", async () => {
    const first = await client.rpc(ann, "ts_reward", { coins: 5 });
    assert.deepEqual(first.payload, { previous: 0, updated: 5 });
    const second = await client.rpc(ann, "ts_reward", { coins: 7 });
    assert.deepEqual(second.payload, { previous: 5, updated: 12 });
    const account = await client.getAccount(ann);
    assert.equal(JSON.parse(account.wallet).coins, 12);
  });

  describe("its authoritative match", () => {
    let ben, annSocket, benSocket, matchId;

    before(async () => {
      ben = await client.authenticateDevice(device(), true);
      annSocket = client.createSocket(false, false);
      benSocket = client.createSocket(false, false);
      await annSocket.connect(ann, false);
      await benSocket.connect(ben, false);
    });

    after(() => {
      annSocket?.disconnect(false);
      benSocket?.disconnect(false);
    });

    test("matchInit: created by an RPC, labelled and listed", async () => {
      const r = await client.rpc(ann, "ts_create_arena", { mode: "ranked" });
      matchId = r.payload.matchId;
      assert.match(matchId, /^[0-9a-f-]{36}\.\S+$/);
      // Nakama indexes labels on a timer (match.label_update_interval_ms,
      // a second by default), Ludus at once: look for a few seconds.
      let listed, m;
      for (let i = 0; i < 30 && !m; i++) {
        if (i > 0) await sleep(100);
        listed = await client.listMatches(ann, 10, true, undefined, undefined, undefined, "+label.mode:ranked");
        m = (listed.matches ?? []).find((x) => x.match_id === matchId);
      }
      assert.ok(m, JSON.stringify(listed));
      assert.deepEqual(JSON.parse(m.label), { arena: 1, mode: "ranked" });
    });

    test("matchJoinAttempt refuses spectators; matchJoin welcomes players", async () => {
      await assert.rejects(
        annSocket.joinMatch(matchId, undefined, { team: "spectators" }),
        (e) => /no spectators in the arena/.test(e.message),
      );
      const annData = inbox(annSocket);
      const joined = await annSocket.joinMatch(matchId, undefined, { team: "red" });
      assert.equal(joined.authoritative, true);
      assert.deepEqual(JSON.parse((await annData(10)).text).players, 1);
      const benData = inbox(benSocket);
      await benSocket.joinMatch(matchId);
      assert.deepEqual(JSON.parse((await benData(10)).text).players, 2);

      // matchLoop: op 1 comes back to its sender only, with the tick.
      await benSocket.sendMatchState(matchId, 1, "ping");
      const echo = JSON.parse((await benData(1)).text);
      assert.equal(echo.text, "ping");
      assert.equal(echo.from, ben.username);
      assert.ok(Number.isInteger(echo.tick) && echo.tick >= 0, JSON.stringify(echo));
      // Op 2 is relayed to the others, with its sender.
      await benSocket.sendMatchState(matchId, 2, "over here");
      const relayed = await annData(2);
      assert.equal(relayed.text, "over here");
      assert.equal(relayed.presence.user_id, ben.user_id);
      // The state lives on between ticks.
      await annSocket.sendMatchState(matchId, 1, "second");
      assert.equal(JSON.parse((await annData(1)).text).seen, 3);
      await annSocket.leaveMatch(matchId);
      await benSocket.leaveMatch(matchId);
    });
  });
});
