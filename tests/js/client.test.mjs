// Drives a running Ludus with the real Nakama JavaScript client
// (@heroiclabs/nakama-js), so that what passes here works for the games that
// ship that client. It checks what the client relies on: authentication,
// sessions and their decoded claims, refresh, logout, the account and users.
//
// The server is started by the caller (scripts/test does it for SQLite and for
// PostgreSQL); LUDUS_HOST and LUDUS_PORT say where it listens.
//
// Test data stays plain ASCII without '>', '?' or '~' on purpose: nakama-js
// decodes the JWT payload with plain base64 `atob`, which mangles the
// base64url characters '-' and '_' that such characters produce. That is a
// client quirk Nakama shares, not something the server can fix.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client, Session } from "@heroiclabs/nakama-js";

const HOST = process.env.LUDUS_HOST ?? "127.0.0.1";
const PORT = process.env.LUDUS_PORT ?? "7350";
const SERVER_KEY = process.env.LUDUS_SERVER_KEY ?? "defaultkey";
const BASE_URL = `http://${HOST}:${PORT}`;

// Automatic refresh is off so that each test exercises exactly the call it
// names: with Nakama's default 60 s token lifetime and the client's 5 minute
// margin, every call would otherwise refresh the session first.
const TIMEOUT_MS = 5000;
const client = new Client(SERVER_KEY, HOST, PORT, false, TIMEOUT_MS, false);

// The gRPC code Nakama puts in the body of an error with this HTTP status.
const GRPC_CODE_OF_STATUS = { 400: 3, 401: 16, 403: 7, 404: 5, 409: 6 };

const unique = () => randomUUID().replaceAll("-", "");
const deviceId = () => `device-${unique()}`;
const customId = () => `custom-${unique()}`;
const email = () => `player.${unique()}@example.com`;
const username = (prefix = "u") => `${prefix}${unique().slice(0, 16)}`;
const nowSec = () => Math.floor(Date.now() / 1000);

/** Awaits `promise`, which must reject with a Nakama REST error of `status`. */
async function assertHttpError(promise, status, what) {
  let error;
  try {
    const value = await promise;
    assert.fail(`${what}: expected HTTP ${status}, but the call succeeded with ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    error = e;
  }
  assert.ok(
    error instanceof Response,
    `${what}: expected an HTTP error response, got ${error}`,
  );
  const text = await error.text();
  assert.equal(error.status, status, `${what}: expected HTTP ${status}, got ${error.status} ${text}`);
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${what}: error body is not JSON: ${text}`);
  }
  assert.equal(body.code, GRPC_CODE_OF_STATUS[status], `${what}: gRPC code in ${text}`);
  assert.equal(typeof body.message, "string", `${what}: message in ${text}`);
  return body;
}

function assertUuid(value, what) {
  assert.match(String(value), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, what);
}

function assertValidSession(session, what) {
  assert.equal(session.token.split(".").length, 3, `${what}: token is a JWT`);
  assert.equal(session.refresh_token.split(".").length, 3, `${what}: refresh token is a JWT`);
  assertUuid(session.user_id, `${what}: user_id`);
  assert.ok(session.username, `${what}: username`);
  assert.ok(session.expires_at > nowSec(), `${what}: token expires in the future (${session.expires_at})`);
  assert.ok(
    session.refresh_expires_at >= session.expires_at,
    `${what}: refresh token outlives the token (${session.refresh_expires_at} < ${session.expires_at})`,
  );
  assert.notEqual(session.token, session.refresh_token, `${what}: token and refresh token differ`);
}

function assertTimestamp(value, what) {
  assert.equal(typeof value, "string", `${what}: RFC 3339 string`);
  assert.ok(!Number.isNaN(Date.parse(value)), `${what}: parses as a date (${value})`);
}

before(async () => {
  let response;
  try {
    response = await fetch(`${BASE_URL}/healthcheck`);
  } catch (e) {
    throw new Error(`no server at ${BASE_URL} (set LUDUS_HOST and LUDUS_PORT): ${e.message}`);
  }
  assert.equal(response.status, 200, `${BASE_URL}/healthcheck`);
});

describe("healthcheck", () => {
  test("answers 200 with an empty JSON object", async () => {
    const response = await fetch(`${BASE_URL}/healthcheck`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {});
  });
});

describe("authenticate device", () => {
  test("creates the account once, then signs in to the same user", async () => {
    const id = deviceId();
    const first = await client.authenticateDevice(id, true);
    assertValidSession(first, "first");
    assert.equal(first.created, true, "first call creates the account");

    const second = await client.authenticateDevice(id, true);
    assertValidSession(second, "second");
    assert.equal(second.created, false, "second call finds the account");
    assert.equal(second.user_id, first.user_id);
    assert.equal(second.username, first.username);
  });

  test("uses the username asked for", async () => {
    const name = username("dev");
    const session = await client.authenticateDevice(deviceId(), true, name);
    assert.equal(session.created, true);
    assert.equal(session.username, name);
  });

  test("create=false for an unknown device is 404", async () => {
    await assertHttpError(client.authenticateDevice(deviceId(), false), 404, "unknown device");
  });

  test("create defaults to true when the client leaves it out, as in Nakama", async () => {
    const session = await client.authenticateDevice(deviceId());
    assertValidSession(session, "default create");
    assert.equal(session.created, true);
  });

  test("a username already taken by another user is 409", async () => {
    const name = username("taken");
    await client.authenticateDevice(deviceId(), true, name);
    await assertHttpError(client.authenticateDevice(deviceId(), true, name), 409, "duplicate username");
  });

  test("a wrong server key is 401", async () => {
    const wrongKey = new Client("notthekey", HOST, PORT, false, TIMEOUT_MS, false);
    await assertHttpError(wrongKey.authenticateDevice(deviceId(), true), 401, "wrong server key");
  });
});

describe("authenticate email", () => {
  test("creates the account, signs in again, and rejects a wrong password", async () => {
    const address = email();
    const password = "correct-horse-battery";
    const created = await client.authenticateEmail(address, password, true);
    assertValidSession(created, "create");
    assert.equal(created.created, true);

    const signedIn = await client.authenticateEmail(address, password, false);
    assertValidSession(signedIn, "sign in");
    assert.equal(signedIn.created, false);
    assert.equal(signedIn.user_id, created.user_id);

    await assertHttpError(client.authenticateEmail(address, "wrong-password-123", false), 401, "wrong password");
    // create=true must not turn a wrong password into a sign-in either.
    await assertHttpError(client.authenticateEmail(address, "wrong-password-123", true), 401, "wrong password, create");

    const account = await client.getAccount(signedIn);
    assert.equal(account.email, address);
    assert.equal(account.user.id, created.user_id);
  });

  test("a password shorter than 8 characters is 400", async () => {
    await assertHttpError(client.authenticateEmail(email(), "short", true), 400, "short password");
  });
});

describe("authenticate custom", () => {
  test("creates the account once, then signs in to the same user", async () => {
    const id = customId();
    const first = await client.authenticateCustom(id, true);
    assertValidSession(first, "first");
    assert.equal(first.created, true);

    const second = await client.authenticateCustom(id, true);
    assert.equal(second.created, false);
    assert.equal(second.user_id, first.user_id);

    const account = await client.getAccount(second);
    assert.equal(account.custom_id, id);
    assert.equal(account.user.id, first.user_id);
  });
});

describe("sessions", () => {
  test("Session.restore decodes the same user, username and vars", async () => {
    const name = username("vars");
    const vars = { plan: "gold", level: "3" };
    const original = await client.authenticateDevice(deviceId(), true, name, vars);
    assert.deepEqual(original.vars, vars, "vars in the fresh session");

    const restored = Session.restore(original.token, original.refresh_token);
    assert.equal(restored.user_id, original.user_id);
    assert.equal(restored.username, name);
    assert.deepEqual(restored.vars, vars);
    assert.equal(restored.expires_at, original.expires_at);
    assert.equal(restored.refresh_expires_at, original.refresh_expires_at);

    const account = await client.getAccount(restored);
    assert.equal(account.user.id, original.user_id, "a restored session is accepted");
  });

  test("sessionRefresh returns a working session for the same user", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    const userId = session.user_id;
    const refreshed = await client.sessionRefresh(session);
    assertValidSession(refreshed, "refreshed");
    assert.equal(refreshed.user_id, userId);

    const account = await client.getAccount(refreshed);
    assert.equal(account.user.id, userId);
  });

  test("refresh with a malformed token or with an access token is 401", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    await assertHttpError(
      client.apiClient.sessionRefresh(SERVER_KEY, "", { token: "not.a.token" }),
      401,
      "malformed refresh token",
    );
    // Access and refresh tokens are signed with different keys.
    await assertHttpError(
      client.apiClient.sessionRefresh(SERVER_KEY, "", { token: session.token }),
      401,
      "access token used as refresh token",
    );
  });

  test("a request without a token, or with a refresh token as bearer, is 401", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    await assertHttpError(client.apiClient.getAccount(""), 401, "no bearer token");
    await assertHttpError(client.apiClient.getAccount(session.refresh_token), 401, "refresh token as bearer");
    const tampered = session.token.slice(0, -4) + (session.token.endsWith("AAAA") ? "BBBB" : "AAAA");
    await assertHttpError(client.apiClient.getAccount(tampered), 401, "bad signature");
  });

  test("sessionLogout revokes the token and the refresh token", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    await client.getAccount(session); // works before the logout

    assert.equal(await client.sessionLogout(session, session.token, session.refresh_token), true);
    await assertHttpError(client.getAccount(session), 401, "getAccount after logout");
    await assertHttpError(
      client.apiClient.sessionRefresh(SERVER_KEY, "", { token: session.refresh_token }),
      401,
      "refresh after logout",
    );
  });

  test("sessionLogout of one session leaves the user's other sessions working", async () => {
    const id = deviceId();
    const phone = await client.authenticateDevice(id, true);
    const tablet = await client.authenticateDevice(id, true);
    assert.notEqual(phone.token, tablet.token, "each sign-in gets its own token");

    await client.sessionLogout(phone, phone.token, phone.refresh_token);
    await assertHttpError(client.getAccount(phone), 401, "logged-out session");
    const account = await client.getAccount(tablet);
    assert.equal(account.user.id, tablet.user_id, "the other session still works");
  });

  test("sessionLogout without tokens logs out every session of the user", async () => {
    const id = deviceId();
    const phone = await client.authenticateDevice(id, true);
    const tablet = await client.authenticateDevice(id, true);
    // Nakama records a "log out everywhere" as a time in whole seconds and
    // revokes only tokens issued before it, so a token issued in the same
    // second survives there. Waiting past the second keeps this test about
    // the behaviour clients rely on rather than that rounding.
    await new Promise((resolve) => setTimeout(resolve, 1100));

    assert.equal(await client.sessionLogout(phone), true);
    await assertHttpError(client.getAccount(phone), 401, "session that logged out");
    await assertHttpError(client.getAccount(tablet), 401, "other session of the same user");
  });
});

describe("account", () => {
  test("getAccount returns the user and the device ids", async () => {
    const id = deviceId();
    const name = username("acct");
    const session = await client.authenticateDevice(id, true, name);
    const account = await client.getAccount(session);

    assert.equal(account.user.id, session.user_id);
    assert.equal(account.user.username, name);
    assertTimestamp(account.user.create_time, "user.create_time");
    assert.ok(Array.isArray(account.devices), `devices is an array: ${JSON.stringify(account)}`);
    assert.ok(
      account.devices.some((d) => d.id === id),
      `devices contain ${id}: ${JSON.stringify(account.devices)}`,
    );
    assert.equal(account.email, undefined, "no email on a device account");
    assert.equal(account.custom_id, undefined, "no custom id on a device account");
  });

  test("updateAccount changes the profile that getAccount and getUsers show", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    const before = await client.getAccount(session);
    assert.notEqual(before.user.display_name, "Ada Lovelace");

    const ok = await client.updateAccount(session, {
      display_name: "Ada Lovelace",
      location: "London",
      timezone: "Europe/London",
      lang_tag: "en",
    });
    assert.equal(ok, true);

    const after = await client.getAccount(session);
    assert.equal(after.user.display_name, "Ada Lovelace");
    assert.equal(after.user.location, "London");
    assert.equal(after.user.timezone, "Europe/London");
    assert.equal(after.user.lang_tag, "en");
    assert.equal(after.user.username, before.user.username, "username unchanged");

    const users = await client.getUsers(session, [session.user_id]);
    assert.equal(users.users.length, 1);
    assert.equal(users.users[0].display_name, "Ada Lovelace");
  });

  test("updateAccount can rename the user, and the new name signs in", async () => {
    const id = deviceId();
    const session = await client.authenticateDevice(id, true);
    const name = username("renamed");
    assert.equal(await client.updateAccount(session, { username: name }), true);
    const account = await client.getAccount(session);
    assert.equal(account.user.username, name);
    const again = await client.authenticateDevice(id, false);
    assert.equal(again.username, name, "a new session carries the new username");
  });

  test("deleteAccount removes the account", async () => {
    const id = deviceId();
    const session = await client.authenticateDevice(id, true);
    await client.apiClient.deleteAccount(session.token);
    await assertHttpError(client.authenticateDevice(id, false), 404, "sign-in after delete");
  });
});

describe("users", () => {
  test("getUsers finds users by id and by username", async () => {
    const aliceName = username("alice");
    const bobName = username("bob");
    const alice = await client.authenticateDevice(deviceId(), true, aliceName);
    const bob = await client.authenticateDevice(deviceId(), true, bobName);

    const byId = await client.getUsers(alice, [bob.user_id]);
    assert.equal(byId.users.length, 1, JSON.stringify(byId));
    assert.equal(byId.users[0].id, bob.user_id);
    assert.equal(byId.users[0].username, bobName);
    assertTimestamp(byId.users[0].create_time, "create_time");

    const byName = await client.getUsers(bob, undefined, [aliceName]);
    assert.equal(byName.users.length, 1, JSON.stringify(byName));
    assert.equal(byName.users[0].id, alice.user_id);
    assert.equal(byName.users[0].username, aliceName);

    const both = await client.getUsers(alice, [alice.user_id], [bobName]);
    assert.deepEqual(
      both.users.map((u) => u.id).sort(),
      [alice.user_id, bob.user_id].sort(),
      JSON.stringify(both),
    );

    // Asked for by id and by username at once, a user is listed once.
    const same = await client.getUsers(alice, [bob.user_id], [bobName]);
    assert.equal(same.users.length, 1, JSON.stringify(same));
  });

  test("getUsers with unknown ids and usernames returns no users", async () => {
    const session = await client.authenticateDevice(deviceId(), true);
    const none = await client.getUsers(session, [randomUUID()], [username("nobody")]);
    assert.deepEqual(none.users, []);
  });
});
