// The web console in a real headless Chromium: signs in, opens every page,
// bans a player from the account page and checks the ban through the APIs,
// sends and deletes a notification there and finds both in the audit log,
// and writes a screenshot of each main page to SCREENSHOT_DIR.
//
// Needs a running ludus: LUDUS_HOST, LUDUS_PORT (client API, server key
// `defaultkey`) and LUDUS_CONSOLE_PORT (console, root admin/password).
// CHROMIUM names the browser (default /usr/bin/chromium).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const host = process.env.LUDUS_HOST || "127.0.0.1";
const api = `http://${host}:${process.env.LUDUS_PORT || 7350}`;
const consoleUrl = `http://${host}:${process.env.LUDUS_CONSOLE_PORT || 7351}`;
const shots = process.env.SCREENSHOT_DIR || "screenshots";
const root = "Basic " + Buffer.from("admin:password").toString("base64");
const serverKey = "Basic " + Buffer.from("defaultkey:").toString("base64");
const device = `console-ui-${process.pid}-device`;

let browser;
let page;
let player;

async function call(base, method, path, auth, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: auth, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

function signInDevice() {
  return call(api, "POST", "/v2/account/authenticate/device?create=true", serverKey, { id: device });
}

/** Opens a console page and waits until it has drawn without an error. */
async function open(hash, pageName) {
  await page.goto(`${consoleUrl}/#/${hash}`);
  await page.waitForSelector(`main[data-page="${pageName}"]`, { timeout: 10000 });
  const error = await page.$eval("#error", (e) => (e.hidden ? "" : e.textContent));
  assert.equal(error, "", `${hash}: the page shows an error`);
}

async function shot(name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  const signed = await signInDevice();
  assert.equal(signed.status, 200, JSON.stringify(signed.body));
  const account = await call(api, "GET", "/v2/account", "Bearer " + signed.body.token);
  player = account.body.user;
  // Something to browse: a save of the player's and a system object.
  for (const owner of [player.id, "00000000-0000-0000-0000-000000000000"]) {
    const w = await call(consoleUrl, "PUT", `/v2/console/storage/saves/slot1/${owner}`, root,
      { value: JSON.stringify({ level: 3, owner }) });
    assert.equal(w.status, 200, JSON.stringify(w.body));
  }
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  // A script error in the page fails the test, not just a missing element.
  page.on("pageerror", (e) => {
    throw e;
  });
});

after(async () => {
  await browser?.close();
});

test("sign-in leads to the status page", async () => {
  await page.goto(`${consoleUrl}/`);
  await page.waitForSelector('main[data-page="login"]');
  await shot("sign-in");
  await page.type('input[name="username"]', "admin");
  await page.type('input[name="password"]', "password");
  await page.click('button[type="submit"]');
  await page.waitForSelector('main[data-page="status"]');
  const cards = await page.$$eval(".card .k", (els) => els.map((e) => e.textContent));
  assert.deepEqual(cards.slice(0, 4), ["Nodes", "Sockets", "Presences", "Matches"]);
  await shot("status");
});

test("accounts are searched and a ban from the UI shows in the API", async () => {
  await open("accounts?filter=" + player.id, "accounts");
  const rows = await page.$$eval("tbody tr.link td", (tds) => tds.map((td) => td.textContent));
  assert.ok(rows.includes(player.id), rows.join(","));
  await shot("accounts");
  await page.click("tbody tr.link");
  await page.waitForSelector('main[data-page="account"]');
  await page.waitForSelector("#ban");
  await page.click("#ban");
  await page.waitForSelector("#banned");
  await shot("account");
  const seen = await call(consoleUrl, "GET", `/v2/console/account/${player.id}`, root);
  assert.equal(seen.status, 200);
  assert.ok(seen.body.disable_time, JSON.stringify(seen.body));
  const again = await signInDevice();
  assert.equal(again.status, 403, "the banned player cannot sign in");
  // Unbanned from the UI: the player signs in again.
  await page.click("#unban");
  await page.waitForSelector("#ban");
  assert.equal((await signInDevice()).status, 200);
});

test("the account page edits the profile", async () => {
  await open("account/" + player.id, "account");
  const field = await page.$('input[name="display_name"]');
  await field.click({ clickCount: 3 });
  await field.type("Edited in Chromium");
  await page.click('form button[type="submit"]');
  await page.waitForFunction(() => document.querySelector("dl")?.textContent.includes("Edited in Chromium"));
  const seen = await call(consoleUrl, "GET", `/v2/console/account/${player.id}`, root);
  assert.equal(seen.body.account.user.display_name, "Edited in Chromium");
});

test("the storage browser lists and edits objects", async () => {
  await open("storage", "storage");
  const names = await page.$$eval("#collections a", (links) => links.map((a) => a.textContent));
  assert.ok(names.includes("saves"), names.join(","));
  await open("storage?collection=saves", "storage");
  const keys = await page.$$eval("tbody tr.link", (rows) => rows.length);
  assert.equal(keys, 2);
  await shot("storage");
  await open(`object/saves/slot1/${player.id}`, "object");
  const value = await page.$eval('textarea[name="value"]', (t) => t.value);
  assert.equal(JSON.parse(value).level, 3);
  await page.$eval('textarea[name="value"]', (t) => {
    t.value = '{"level": 4}';
  });
  await page.click('form button[type="submit"]');
  await page.waitForFunction(() => document.querySelector('textarea[name="value"]')?.value.includes("4"));
  await shot("storage-object");
  const seen = await call(consoleUrl, "GET", `/v2/console/storage/saves/slot1/${player.id}`, root);
  assert.equal(JSON.parse(seen.body.value).level, 4);
});

test("a live match is listed and its state shown", async () => {
  const signed = await signInDevice();
  const created = await call(api, "POST", "/v2/rpc/create_match_json", "Bearer " + signed.body.token,
    JSON.stringify({ params: { max: 5, mode: "ui" } }));
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const matchId = JSON.parse(created.body.payload).match_id;
  await open("matches", "matches");
  const ids = await page.$$eval("tbody tr.link td", (tds) => tds.map((td) => td.textContent));
  assert.ok(ids.includes(matchId), ids.join(","));
  await shot("matches");
  await page.$$eval("tbody tr.link", (rows, id) => rows.find((r) => r.textContent.includes(id)).click(), matchId);
  await page.waitForSelector('main[data-page="match"]');
  const state = JSON.parse(await page.$eval("#match-state", (p) => p.textContent));
  assert.equal(state.max, 5);
  await shot("match-state");
});

test("a group's member is promoted from the UI", async () => {
  const signed = await signInDevice();
  const made = await call(api, "POST", "/v2/group", "Bearer " + signed.body.token, { name: `ui-guild-${process.pid}` });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const other = await call(api, "POST", "/v2/account/authenticate/device?create=true", serverKey, { id: device + "-2" });
  const otherUser = (await call(api, "GET", "/v2/account", "Bearer " + other.body.token)).body.user;
  const otherId = otherUser.id;
  await open("groups?filter=ui-guild", "groups");
  await shot("groups");
  await page.click("tbody tr.link");
  await page.waitForSelector('main[data-page="group"]');
  await page.type('input[name="ids"]', otherId);
  await page.$$eval("form.inline button", (b) => b[b.length - 1].click());
  await page.waitForFunction(() => document.querySelectorAll("tbody tr.link").length === 2);
  // Promote the new member: it becomes an admin.
  await page.$$eval("tbody tr.link", (rows, name) => rows.find((r) => r.cells[0].textContent === name)
    .querySelector("button").click(), otherUser.username);
  await page.waitForFunction((name) => [...document.querySelectorAll("tbody tr.link")]
    .some((r) => r.cells[0].textContent === name && r.cells[1].textContent === "admin"), {}, otherUser.username);
  await shot("group");
  const members = await call(consoleUrl, "GET", `/v2/console/group/${made.body.id}/member`, root);
  const role = members.body.group_users.find((m) => m.user.id === otherId).state;
  assert.equal(role, 1, "admin");
});

test("the API explorer calls an RPC as a player", async () => {
  await open("explorer", "explorer");
  await page.select('select[name="rpc"]', "create_match_json");
  await page.type('input[name="user_id"]', player.id);
  await page.$eval('textarea[name="body"]', (t) => {
    t.value = '{"params": {"mode": "explorer"}}';
  });
  await page.click('form button[type="submit"]');
  await page.waitForFunction(() => document.querySelector("#explorer-result")?.textContent.includes("match_id"));
  await shot("explorer");
  const matchId = JSON.parse(await page.$eval("#explorer-result", (p) => p.textContent)).match_id;
  const listed = await call(consoleUrl, "GET", `/v2/console/match?match_id=${encodeURIComponent(matchId)}`, root);
  assert.equal(listed.body.matches.length, 1, "the match the RPC made is live");
});

test("a notification is sent and deleted from the account page, and the audit log shows both", async () => {
  const subject = `ui-note-${process.pid}`;
  const stored = async () => (await call(consoleUrl, "GET", `/v2/console/notification?user_id=${player.id}`, root))
    .body.notifications.filter((n) => n.subject === subject);
  await open(`account/${player.id}`, "account");
  await page.type('#send-notification input[name="subject"]', subject);
  await page.$eval('#send-notification input[name="content"]', (i) => {
    i.value = '{"gift": 5}';
  });
  await page.click('#send-notification button[type="submit"]');
  await page.waitForFunction((s) => [...document.querySelectorAll("td")].some((td) => td.textContent === s), {}, subject);
  const sent = await stored();
  assert.equal(sent.length, 1, "the notification is stored for the player");
  assert.deepEqual(JSON.parse(sent[0].content), { gift: 5 });
  // Its row's Delete button removes it.
  await page.evaluate((s) => {
    const row = [...document.querySelectorAll("tr")].find((tr) => tr.firstChild?.textContent === s);
    row.querySelector("button").click();
  }, subject);
  await page.waitForFunction((s) => ![...document.querySelectorAll("td")].some((td) => td.textContent === s), {}, subject);
  assert.equal((await stored()).length, 0, "the notification is deleted");
  await open("audit", "audit");
  const rows = await page.$$eval("tbody tr", (trs) => trs.map((tr) => tr.textContent));
  assert.ok(rows.some((r) => r.includes("create") && r.includes("NOTIFICATION")), rows.join("\n"));
  assert.ok(rows.some((r) => r.includes("delete") && r.includes("NOTIFICATION")), rows.join("\n"));
  assert.ok(rows.some((r) => r.includes("/ban")), "the ban from the UI is logged too");
  await shot("audit");
});

test("the other pages render", async () => {
  for (const [hash, name] of [
    ["leaderboards", "leaderboards"],
    ["runtime", "runtime"],
    ["purchases", "purchases"],
    ["chat?label=lobby", "chat"],
    ["users", "users"],
    ["config", "config"],
  ]) {
    await open(hash, name);
    await shot(name);
  }
  const config = await page.$eval("pre", (p) => p.textContent);
  assert.ok(!config.includes('"password": "password"'), "the config page shows no secret");
});
