// The Ludus web console: a hash-routed page over the console API on this
// port. Every value from the server reaches the page as text (textContent),
// never as HTML: usernames and stored values are written by players.
"use strict";

const view = document.getElementById("view");
const errorBox = document.getElementById("error");
const SYSTEM_USER = "00000000-0000-0000-0000-000000000000";
// Nakama's console resources, for granting a new console user everything
// or read only.
const RESOURCES = [
  "ACCOUNT", "ACCOUNT_WALLET", "ACCOUNT_EXPORT", "ACCOUNT_FRIENDS", "ACCOUNT_GROUPS",
  "ACCOUNT_NOTES", "ACL_TEMPLATE", "ALL_ACCOUNTS", "ALL_DATA", "ALL_STORAGE",
  "API_EXPLORER", "AUDIT_LOG", "CONFIGURATION", "CHANNEL_MESSAGE", "USER", "GROUP",
  "IN_APP_PURCHASE", "LEADERBOARD", "LEADERBOARD_RECORD", "MATCH", "NOTIFICATION",
  "SATORI_MESSAGE", "SETTINGS", "STORAGE_DATA", "STORAGE_DATA_IMPORT", "HIRO_INVENTORY",
  "HIRO_PROGRESSION", "HIRO_ECONOMY", "HIRO_STATS", "HIRO_ENERGY",
];

let refreshTimer = null;

// --- helpers ----------------------------------------------------------------

/** An element with attributes (`on*` become listeners) and children. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = !message;
}

class ApiError extends Error {}

/** Calls the console API; a lost session goes back to sign-in. */
async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem("token");
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : {};
  if (res.status === 401 && !path.startsWith("/v2/console/authenticate")) {
    sessionStorage.removeItem("token");
    location.hash = "#/login";
    throw new ApiError("your session ended, sign in again");
  }
  if (!res.ok) throw new ApiError(data.message || "request failed with status " + res.status);
  return data;
}

/** Runs an action, showing its error instead of throwing. */
async function attempt(action) {
  showError("");
  try {
    await action();
  } catch (e) {
    showError(e.message);
  }
}

function when(ts) {
  return ts ? new Date(ts).toLocaleString() : "";
}

function table(columns, rows, onRow) {
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))),
    h("tbody", {}, rows.length === 0
      ? h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "nothing here"))
      : rows.map((row) => h("tr", onRow ? { class: "link", onclick: () => onRow(row) } : {},
        columns.map(([, cell]) => h("td", {}, cell(row)))))));
}

function details(pairs) {
  return h("dl", {}, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "")]));
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const enc = encodeURIComponent;

// --- views ------------------------------------------------------------------

function login() {
  const user = h("input", { name: "username", autocomplete: "username", required: true });
  const pass = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  view.replaceChildren(h("form", {
    class: "login",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        const r = await api("POST", "/v2/console/authenticate", { username: user.value, password: pass.value });
        sessionStorage.setItem("token", r.token);
        location.hash = "#/status";
      });
    },
  }, h("h1", {}, "Sign in"), h("label", {}, "Username", user), h("label", {}, "Password", pass),
  h("button", { type: "submit" }, "Sign in")));
}

async function status() {
  const draw = async () => {
    const r = await api("GET", "/v2/console/status");
    const nodes = r.nodes || [];
    const sum = (k) => nodes.reduce((n, node) => n + (node[k] || 0), 0);
    view.replaceChildren(
      h("h1", {}, "Status"),
      h("div", { class: "cards" },
        [["Nodes", nodes.length], ["Sockets", sum("session_count")], ["Presences", sum("presence_count")],
          ["Matches", sum("match_count")], ["Parties", sum("party_count")]]
          .map(([k, n]) => h("div", { class: "card" }, h("div", { class: "n" }, n), h("div", { class: "k" }, k)))),
      table([["Node", (n) => n.name], ["Sockets", (n) => n.session_count || 0],
        ["Presences", (n) => n.presence_count || 0], ["Matches", (n) => n.match_count || 0],
        ["Parties", (n) => n.party_count || 0], ["Started", (n) => when(n.create_time)]], nodes),
      h("p", { class: "muted" }, "Updated " + when(r.timestamp) + ", every 5 seconds."));
  };
  await draw();
  refreshTimer = setInterval(() => attempt(draw), 5000);
}

async function accounts(params) {
  const filter = h("input", { name: "filter", placeholder: "user id or username", value: params.get("filter") || "" });
  const q = new URLSearchParams();
  if (filter.value) q.set("filter", filter.value);
  if (params.get("cursor")) q.set("cursor", params.get("cursor"));
  const r = await api("GET", "/v2/console/account?" + q);
  view.replaceChildren(
    h("h1", {}, "Accounts"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = "#/accounts?filter=" + enc(filter.value.trim());
      },
    }, h("label", {}, "Search", filter), h("button", { type: "submit" }, "Search")),
    table([["Username", (u) => u.username], ["Display name", (u) => u.display_name || ""],
      ["User id", (u) => u.id], ["Created", (u) => when(u.create_time)]],
    r.users || [], (u) => { location.hash = "#/account/" + u.id; }),
    r.next_cursor ? h("div", { class: "actions" },
      h("a", { href: "#/accounts?cursor=" + enc(r.next_cursor) }, "Next page")) : null);
}

async function account(id) {
  const path = "/v2/console/account/" + enc(id);
  const r = await api("GET", path);
  const a = r.account;
  const u = a.user;
  const username = h("input", { name: "username", value: u.username });
  const displayName = h("input", { name: "display_name", value: u.display_name || "" });
  const metadata = h("textarea", { name: "metadata" }, pretty(u.metadata || "{}"));
  const reload = () => account(id);
  const ledger = await api("GET", path + "/wallet?limit=100").catch((e) => ({ error: e.message }));
  const friends = await api("GET", path + "/friend").catch((e) => ({ error: e.message }));
  const groups = await api("GET", path + "/group").catch((e) => ({ error: e.message }));
  const notes = await api("GET", "/v2/console/notification?user_id=" + enc(id)).catch((e) => ({ error: e.message }));
  const accountNotes = await api("GET", path + "/note?limit=100").catch((e) => ({ error: e.message }));
  const collection = h("input", { name: "collection", placeholder: "collection" });
  const objects = h("div", {});
  view.replaceChildren(
    h("h1", {}, "Account ", u.username, " ", r.disable_time ? h("span", { class: "badge", id: "banned" }, "banned") : null),
    details([["User id", u.id], ["Display name", u.display_name], ["Custom id", a.custom_id],
      ["Email", a.email], ["Devices", (a.devices || []).map((d) => d.id).join(", ")],
      ["Online", u.online ? "yes" : "no"], ["Created", when(u.create_time)],
      ["Banned since", when(r.disable_time)]]),
    h("div", { class: "actions" },
      r.disable_time
        ? h("button", { id: "unban", onclick: () => attempt(async () => { await api("POST", path + "/unban"); await reload(); }) }, "Unban")
        : h("button", { id: "ban", class: "danger", onclick: () => attempt(async () => { await api("POST", path + "/ban"); await reload(); }) }, "Ban"),
      h("button", {
        class: "danger secondary",
        onclick: () => attempt(async () => {
          if (!confirm("Delete account " + u.username + " and all its data?")) return;
          await api("DELETE", path);
          location.hash = "#/accounts";
        }),
      }, "Delete")),
    h("h2", {}, "Profile"),
    h("form", {
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          await api("POST", path, { username: username.value, display_name: displayName.value, metadata: metadata.value });
          await reload();
        });
      },
    }, h("div", { class: "inline" }, h("label", {}, "Username", username), h("label", {}, "Display name", displayName)),
    h("label", {}, "Metadata", metadata), h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"))),
    h("h2", {}, "Wallet"),
    h("pre", { id: "wallet" }, pretty(a.wallet || "{}")),
    h("h2", {}, "Wallet ledger"),
    ledger.error ? h("p", { class: "muted" }, ledger.error)
      : table([["Changeset", (l) => l.changeset], ["Metadata", (l) => l.metadata], ["When", (l) => when(l.create_time)],
        ["", (l) => h("button", {
          class: "danger secondary",
          onclick: () => attempt(async () => {
            if (!confirm("Delete this ledger entry? The wallet is not changed.")) return;
            await api("DELETE", path + "/wallet/" + enc(l.id));
            await reload();
          }),
        }, "Delete")]], ledger.items || []),
    h("h2", {}, "Friends"),
    friends.error ? h("p", { class: "muted" }, friends.error)
      : table([["Username", (f) => f.user.username], ["State", (f) => ["friend", "invite sent", "invite received", "blocked"][f.state || 0]]],
        friends.friends || [], (f) => { location.hash = "#/account/" + f.user.id; }),
    h("h2", {}, "Groups"),
    groups.error ? h("p", { class: "muted" }, groups.error)
      : table([["Group", (g) => g.group.name], ["Role", (g) => ["superadmin", "admin", "member", "join request"][g.state || 0]]],
        groups.user_groups || [], (g) => { location.hash = "#/group/" + g.group.id; }),
    h("h2", {}, "Notifications"),
    notes.error ? h("p", { class: "muted" }, notes.error)
      : table([["Subject", (n) => n.subject], ["Code", (n) => n.code], ["Content", (n) => n.content],
        ["When", (n) => when(n.create_time)],
        ["", (n) => h("button", {
          class: "danger secondary",
          onclick: () => attempt(async () => {
            await api("DELETE", "/v2/console/notification/" + enc(n.id));
            await reload();
          }),
        }, "Delete")]], notes.notifications || []),
    sendNotification(id, reload),
    h("h2", {}, "Notes"),
    accountNotes.error ? h("p", { class: "muted" }, accountNotes.error)
      : table([["Note", (n) => n.note], ["By", (n) => n.create_username], ["When", (n) => when(n.create_time)],
        ["", (n) => h("button", {
          class: "danger secondary",
          onclick: () => attempt(async () => {
            await api("DELETE", path + "/note/" + enc(n.id));
            await reload();
          }),
        }, "Delete")]], accountNotes.notes || []),
    addNote(path, reload),
    h("h2", {}, "Storage"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          const list = await api("GET", "/v2/console/storage?collection=" + enc(collection.value) + "&user_id=" + enc(id));
          objects.replaceChildren(storageTable(list.objects || []));
        });
      },
    }, h("label", {}, "Collection", collection), h("button", { type: "submit" }, "List")),
    objects);
}

function storageTable(objects) {
  return table([["Collection", (o) => o.collection], ["Key", (o) => o.key], ["Owner", (o) => o.user_id],
    ["Read", (o) => o.permission_read || 0], ["Write", (o) => o.permission_write || 0], ["Updated", (o) => when(o.update_time)]],
  objects, (o) => { location.hash = "#/object/" + [o.collection, o.key, o.user_id].map(enc).join("/"); });
}

async function storage(params) {
  const collection = h("input", { name: "collection", required: true, value: params.get("collection") || "" });
  const user = h("input", { name: "user_id", placeholder: "any owner", value: params.get("user_id") || "" });
  const parts = [h("h1", {}, "Storage"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams({ collection: collection.value });
        if (user.value) q.set("user_id", user.value);
        location.hash = "#/storage?" + q;
      },
    }, h("label", {}, "Collection", collection), h("label", {}, "Owner user id", user),
    h("button", { type: "submit" }, "List"),
    h("a", { href: "#/object/new" }, "New object"))];
  if (!collection.value) {
    const names = await api("GET", "/v2/console/storage/collections");
    parts.push(h("h2", {}, "Collections"), (names.collections || []).length
      ? h("ul", { id: "collections" }, names.collections.map((c) =>
        h("li", {}, h("a", { href: "#/storage?collection=" + enc(c) }, c))))
      : h("p", { class: "muted" }, "No storage object yet."));
  }
  if (collection.value) {
    const q = new URLSearchParams(params);
    const r = await api("GET", "/v2/console/storage?" + q);
    parts.push(storageTable(r.objects || []));
    if (r.next_cursor) {
      q.set("cursor", r.next_cursor);
      parts.push(h("div", { class: "actions" }, h("a", { href: "#/storage?" + q }, "Next page")));
    }
  }
  view.replaceChildren(...parts);
}

async function object(collectionName, key, owner) {
  const isNew = collectionName === "new";
  const found = isNew ? null : await api("GET", "/v2/console/storage/" + [collectionName, key, owner].map(enc).join("/"));
  const collection = h("input", { name: "collection", value: found?.collection || "", readonly: !isNew });
  const keyInput = h("input", { name: "key", value: found?.key || "", readonly: !isNew });
  const user = h("input", { name: "user_id", value: found?.user_id || SYSTEM_USER, readonly: !isNew });
  const value = h("textarea", { name: "value" }, pretty(found?.value || "{}"));
  const perm = (name, options, current) => h("select", { name },
    options.map(([v, label]) => h("option", { value: v, selected: v === current }, label)));
  const read = perm("permission_read", [[0, "0 no read"], [1, "1 owner"], [2, "2 public"]], found?.permission_read ?? 1);
  const write = perm("permission_write", [[0, "0 no write"], [1, "1 owner"]], found?.permission_write ?? 1);
  const target = () => "/v2/console/storage/" + [collection.value, keyInput.value, user.value].map(enc).join("/");
  view.replaceChildren(
    h("h1", {}, isNew ? "New storage object" : "Storage object"),
    h("form", {
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          const ack = await api("PUT", target(), {
            value: value.value,
            version: found?.version || "",
            permission_read: Number(read.value),
            permission_write: Number(write.value),
          });
          location.hash = "#/object/" + [ack.collection, ack.key, ack.user_id].map(enc).join("/");
          if (!isNew) await object(collectionName, key, owner);
        });
      },
    },
    h("div", { class: "inline" }, h("label", {}, "Collection", collection), h("label", {}, "Key", keyInput),
      h("label", {}, "Owner user id", user), h("label", {}, "Read", read), h("label", {}, "Write", write)),
    found ? h("p", { class: "muted" }, "Version " + found.version + ", updated " + when(found.update_time)) : null,
    h("label", {}, "Value (a JSON object)", value),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"),
      isNew ? null : h("button", {
        type: "button",
        class: "danger",
        onclick: () => attempt(async () => {
          if (!confirm("Delete this object?")) return;
          await api("DELETE", target() + "/" + enc(found.version));
          location.hash = "#/storage?collection=" + enc(found.collection);
        }),
      }, "Delete"))));
}

async function leaderboards() {
  const r = await api("GET", "/v2/console/leaderboard");
  view.replaceChildren(h("h1", {}, "Leaderboards"),
    table([["Id", (l) => l.id], ["Kind", (l) => (l.tournament ? "tournament" : "leaderboard")],
      ["Sort", (l) => (l.sort_order ? "descending" : "ascending")],
      ["Operator", (l) => ["best", "set", "increment", "decrement"][l.operator || 0]],
      ["Reset", (l) => l.reset_schedule || ""], ["Authoritative", (l) => (l.authoritative ? "yes" : "no")]],
    r.leaderboards || [], (l) => { location.hash = "#/leaderboard/" + enc(l.id); }));
}

async function leaderboard(id) {
  const path = "/v2/console/leaderboard/" + enc(id);
  const l = await api("GET", path);
  const records = await api("GET", path + "/records?limit=100");
  view.replaceChildren(h("h1", {}, "Leaderboard ", l.id),
    details([["Title", l.title], ["Description", l.description], ["Category", l.category || 0],
      ["Reset schedule", l.reset_schedule], ["Metadata", l.metadata], ["Created", when(l.create_time)],
      ["Next reset", l.next_reset ? when(l.next_reset * 1000) : "never"]]),
    h("div", { class: "actions" }, h("button", {
      class: "danger",
      onclick: () => attempt(async () => {
        if (!confirm("Delete leaderboard " + l.id + " and all its records?")) return;
        await api("DELETE", path);
        location.hash = "#/leaderboards";
      }),
    }, "Delete leaderboard")),
    h("h2", {}, "Records"),
    table([["Rank", (r) => r.rank], ["Owner", (r) => r.username || r.owner_id], ["Score", (r) => r.score],
      ["Subscore", (r) => r.subscore], ["Updated", (r) => when(r.update_time)],
      ["", (r) => h("button", {
        class: "danger secondary",
        onclick: (e) => {
          e.stopPropagation();
          attempt(async () => {
            await api("DELETE", path + "/owner/" + enc(r.owner_id));
            await leaderboard(id);
          });
        },
      }, "Delete")]],
    records.records || []));
}

async function groups(params) {
  const filter = h("input", { name: "filter", placeholder: "name prefix or group id", value: params.get("filter") || "" });
  const q = new URLSearchParams();
  if (filter.value) q.set("filter", filter.value);
  if (params.get("cursor")) q.set("cursor", params.get("cursor"));
  const r = await api("GET", "/v2/console/group?" + q);
  view.replaceChildren(h("h1", {}, "Groups"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = "#/groups?filter=" + enc(filter.value.trim());
      },
    }, h("label", {}, "Search", filter), h("button", { type: "submit" }, "Search")),
    table([["Name", (g) => g.name], ["Members", (g) => g.edge_count || 0], ["Open", (g) => (g.open ? "yes" : "no")],
      ["Group id", (g) => g.id], ["Created", (g) => when(g.create_time)]],
    r.groups || [], (g) => { location.hash = "#/group/" + g.id; }),
    r.next_cursor ? h("div", { class: "actions" },
      h("a", { href: "#/groups?cursor=" + enc(r.next_cursor) }, "Next page")) : null);
}

async function group(id) {
  const path = "/v2/console/group/" + enc(id);
  const g = await api("GET", path);
  const members = await api("GET", path + "/member");
  const description = h("textarea", { name: "description" }, g.description || "");
  const open = h("input", { type: "checkbox", name: "open", checked: Boolean(g.open) });
  const add = h("input", { name: "ids", placeholder: "user ids, separated by commas" });
  const reload = () => group(id);
  const roles = ["superadmin", "admin", "member", "join request"];
  const act = (label, method, url) => h("button", {
    class: "secondary",
    onclick: (e) => {
      e.stopPropagation();
      attempt(async () => {
        await api(method, url);
        await reload();
      });
    },
  }, label);
  view.replaceChildren(h("h1", {}, "Group ", g.name),
    details([["Group id", g.id], ["Members", `${g.edge_count || 0} of ${g.max_count || 0}`],
      ["Language", g.lang_tag], ["Metadata", g.metadata], ["Created", when(g.create_time)]]),
    h("div", { class: "actions" }, h("button", {
      class: "danger",
      onclick: () => attempt(async () => {
        if (!confirm("Delete group " + g.name + "?")) return;
        await api("DELETE", path);
        location.hash = "#/groups";
      }),
    }, "Delete group")),
    h("h2", {}, "Edit"),
    h("form", {
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          await api("POST", path, { description: description.value, open: open.checked });
          await reload();
        });
      },
    }, h("label", {}, "Description", description), h("label", {}, h("span", {}, "Open"), open),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"))),
    h("h2", {}, "Members"),
    table([["Username", (m) => m.user.username], ["Role", (m) => roles[m.state || 0]],
      ["", (m) => h("span", { class: "actions" },
        act("Promote", "POST", `${path}/account/${m.user.id}/promote`),
        act("Demote", "POST", `${path}/account/${m.user.id}/demote`),
        act("Remove", "DELETE", `/v2/console/account/${m.user.id}/group/${enc(id)}`))]],
    members.group_users || [], (m) => { location.hash = "#/account/" + m.user.id; }),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          await api("POST", path + "/add", { ids: add.value });
          await reload();
        });
      },
    }, h("label", {}, "Add members", add), h("button", { type: "submit" }, "Add")));
}

async function matches() {
  const r = await api("GET", "/v2/console/match");
  view.replaceChildren(h("h1", {}, "Matches"),
    table([["Match id", (m) => m.api_match.match_id], ["Node", (m) => m.node || "relayed"],
      ["Players", (m) => m.api_match.size || 0], ["Tick rate", (m) => m.api_match.tick_rate || ""],
      ["Handler", (m) => m.api_match.handler_name || ""], ["Label", (m) => m.api_match.label || ""]],
    r.matches || [], (m) => { location.hash = "#/match/" + enc(m.api_match.match_id); }));
}

async function matchState(id) {
  const draw = async () => {
    const r = await api("GET", "/v2/console/match/" + enc(id) + "/state");
    view.replaceChildren(h("h1", {}, "Match ", id),
      details([["Tick", r.tick || "0"], ["Players", (r.presences || []).length]]),
      h("h2", {}, "Presences"),
      table([["Username", (p) => p.username], ["User id", (p) => p.user_id], ["Session", (p) => p.session_id]],
        r.presences || [], (p) => { location.hash = "#/account/" + p.user_id; }),
      h("h2", {}, "State"),
      h("pre", { id: "match-state" }, r.state ? pretty(r.state) : "(this match's handler shows no state)"),
      h("p", { class: "muted" }, "Refreshed every 2 seconds."));
  };
  await draw();
  refreshTimer = setInterval(() => attempt(draw), 2000);
}

async function explorer() {
  const r = await api("GET", "/v2/console/api/endpoints");
  const rpcs = (r.rpc_endpoints || []).map((e) => e.method);
  const method = h("select", { name: "rpc" }, rpcs.map((m) => h("option", { value: m }, m)));
  const user = h("input", { name: "user_id", placeholder: "empty: call as the server" });
  const vars = h("textarea", { name: "session_vars" }, "{}");
  const body = h("textarea", { name: "body" }, "");
  const out = h("pre", { id: "explorer-result" }, "");
  view.replaceChildren(h("h1", {}, "API explorer"),
    rpcs.length === 0 ? h("p", { class: "muted" }, "No RPC is registered.") : null,
    h("form", {
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          let sessionVars;
          try {
            sessionVars = JSON.parse(vars.value || "{}");
          } catch {
            throw new ApiError("session variables must be a JSON object of strings");
          }
          const res = await api("POST", "/v2/console/api/endpoints/rpc/" + enc(method.value),
            { body: body.value, user_id: user.value.trim(), session_vars: sessionVars });
          out.textContent = res.error_message ? "error: " + res.error_message : pretty(res.body);
        });
      },
    }, h("div", { class: "inline" }, h("label", {}, "RPC", method), h("label", {}, "As user id", user)),
    h("label", {}, "Session variables (JSON)", vars), h("label", {}, "Payload", body),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Call"))),
    h("h2", {}, "Answer"), out);
}

/** A form that adds a console user's note to an account. */
function addNote(path, reload) {
  const note = h("input", { name: "note", required: true });
  return h("form", {
    class: "inline",
    id: "add-note",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        await api("POST", path + "/note", { note: note.value });
        await reload();
      });
    },
  }, h("label", {}, "Note", note), h("button", { type: "submit" }, "Add note"));
}

/** A form that sends a stored notification to one player. */
function sendNotification(id, reload) {
  const subject = h("input", { name: "subject", required: true });
  const content = h("input", { name: "content", value: "{}" });
  return h("form", {
    class: "inline",
    id: "send-notification",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        let parsed;
        try {
          parsed = JSON.parse(content.value || "{}");
        } catch {
          throw new ApiError("content must be a JSON object");
        }
        await api("POST", "/v2/console/notification",
          { user_ids: [id], subject: subject.value, content: parsed, persistent: true });
        await reload();
      });
    },
  }, h("label", {}, "Subject", subject), h("label", {}, "Content (JSON)", content),
  h("button", { type: "submit" }, "Send notification"));
}

// Nakama's AuditLogAction names, by number.
const AUDIT_ACTIONS = ["unknown", "create", "update", "delete", "invoke", "import", "export"];

async function audit(params) {
  const username = h("input", { name: "username", placeholder: "any console user", value: params.get("username") || "" });
  const q = new URLSearchParams({ limit: "50" });
  for (const key of ["username", "cursor"]) if (params.get(key)) q.set(key, params.get(key));
  const r = await api("GET", "/v2/console/audit/log?" + q);
  const go = (cursor) => {
    const next = new URLSearchParams();
    if (username.value.trim()) next.set("username", username.value.trim());
    if (cursor) next.set("cursor", cursor);
    location.hash = "#/audit?" + next;
  };
  view.replaceChildren(h("h1", {}, "Audit log"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        go("");
      },
    }, h("label", {}, "Console user", username), h("button", { type: "submit" }, "Filter")),
    table([["When", (e) => when(e.timestamp)], ["Console user", (e) => e.username],
      ["Action", (e) => AUDIT_ACTIONS[e.action] || e.action], ["Resource", (e) => RESOURCES[e.resource] || e.resource],
      ["What", (e) => e.message]], r.entries || []),
    h("div", { class: "actions" },
      r.prev_cursor ? h("button", { type: "button", class: "secondary", onclick: () => go(r.prev_cursor) }, "Newer") : null,
      r.next_cursor ? h("button", { type: "button", onclick: () => go(r.next_cursor) }, "Older") : null));
}

async function purchases(params) {
  const user = h("input", { name: "user_id", placeholder: "every player", value: params.get("user_id") || "" });
  const q = new URLSearchParams();
  if (user.value) q.set("user_id", user.value);
  const bought = await api("GET", "/v2/console/purchase?" + q);
  const subs = await api("GET", "/v2/console/subscription?" + q);
  view.replaceChildren(h("h1", {}, "Purchases"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = "#/purchases?user_id=" + enc(user.value.trim());
      },
    }, h("label", {}, "Player user id", user), h("button", { type: "submit" }, "Filter")),
    table([["Product", (p) => p.product_id], ["Transaction", (p) => p.transaction_id],
      ["Player", (p) => p.user_id], ["Store", (p) => p.store || 0], ["Bought", (p) => when(p.purchase_time)],
      ["Refunded", (p) => when(p.refund_time)]], bought.validated_purchases || []),
    h("h2", {}, "Subscriptions"),
    table([["Product", (s) => s.product_id], ["Original transaction", (s) => s.original_transaction_id],
      ["Player", (s) => s.user_id], ["Active", (s) => (s.active ? "yes" : "no")], ["Expires", (s) => when(s.expiry_time)]],
    subs.validated_subscriptions || []));
}

async function chat(params) {
  const label = h("input", { name: "label", placeholder: "room name", value: params.get("label") || "" });
  const parts = [h("h1", {}, "Chat"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = "#/chat?label=" + enc(label.value.trim());
      },
    }, h("label", {}, "Room", label), h("button", { type: "submit" }, "Read"))];
  if (label.value) {
    const r = await api("GET", "/v2/console/channel?type=2&label=" + enc(label.value));
    parts.push(table([["From", (m) => m.username || m.sender_id], ["Message", (m) => m.content],
      ["When", (m) => when(m.create_time)]], r.messages || []));
  }
  view.replaceChildren(...parts);
}

async function runtime() {
  const r = await api("GET", "/v2/console/runtime");
  const list = (title, items) => [h("h2", {}, title),
    items.length ? h("ul", {}, items.map((i) => h("li", {}, i))) : h("p", { class: "muted" }, "none")];
  view.replaceChildren(h("h1", {}, "Runtime"),
    list("Lua modules", (r.lua_modules || []).map((m) => m.path)),
    list("JavaScript modules", (r.js_modules || []).map((m) => m.path)),
    list("Lua RPCs", r.lua_rpc_functions || []),
    list("JavaScript RPCs", r.js_rpc_functions || []),
    list("Native RPCs", r.go_rpc_functions || []),
    list("Hooks", r.hooks || []));
}

async function config() {
  const r = await api("GET", "/v2/console/config");
  view.replaceChildren(h("h1", {}, "Configuration"),
    h("p", { class: "muted" }, "Ludus " + r.server_version + "; secrets read REDACTED."),
    h("pre", {}, pretty(r.config)));
}

async function users() {
  const r = await api("GET", "/v2/console/user");
  const username = h("input", { name: "username", required: true });
  const email = h("input", { name: "email", type: "email", required: true });
  const role = h("select", { name: "role" }, h("option", { value: "admin" }, "everything"),
    h("option", { value: "read" }, "read only"));
  const invitation = h("p", {});
  view.replaceChildren(h("h1", {}, "Console users"),
    table([["Username", (u) => u.username], ["Email", (u) => u.email], ["Created", (u) => when(u.create_time)],
      ["", (u) => h("button", {
        class: "danger secondary",
        onclick: () => attempt(async () => {
          if (!confirm("Delete console user " + u.username + "?")) return;
          await api("DELETE", "/v2/console/user?username=" + enc(u.username));
          await users();
        }),
      }, "Delete")]], r.users || []),
    h("h2", {}, "Add a console user"),
    h("form", {
      class: "inline",
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          const acl = Object.fromEntries(RESOURCES.map((name) => [name,
            { read: true, write: role.value === "admin", delete: role.value === "admin" }]));
          const added = await api("POST", "/v2/console/user", { username: username.value, email: email.value, acl });
          await users();
          view.append(h("p", {}, "Send " + added.user.username + " this one-time code to set a password: ",
            h("code", {}, added.token)));
        });
      },
    }, h("label", {}, "Username", username), h("label", {}, "Email", email), h("label", {}, "May", role),
    h("button", { type: "submit" }, "Add")),
    invitation);
}

// --- routing ----------------------------------------------------------------

const ROUTES = [
  [/^status$/, status],
  [/^accounts$/, (m, q) => accounts(q)],
  [/^account\/([^/]+)$/, (m) => account(decodeURIComponent(m[1]))],
  [/^storage$/, (m, q) => storage(q)],
  [/^object\/new$/, () => object("new")],
  [/^object\/([^/]+)\/([^/]+)\/([^/]+)$/, (m) => object(...m.slice(1, 4).map(decodeURIComponent))],
  [/^leaderboards$/, leaderboards],
  [/^leaderboard\/([^/]+)$/, (m) => leaderboard(decodeURIComponent(m[1]))],
  [/^groups$/, (m, q) => groups(q)],
  [/^group\/([^/]+)$/, (m) => group(decodeURIComponent(m[1]))],
  [/^matches$/, matches],
  [/^match\/([^/]+)$/, (m) => matchState(decodeURIComponent(m[1]))],
  [/^explorer$/, explorer],
  [/^purchases$/, (m, q) => purchases(q)],
  [/^chat$/, (m, q) => chat(q)],
  [/^runtime$/, runtime],
  [/^config$/, config],
  [/^users$/, users],
  [/^audit$/, (m, q) => audit(q)],
];

async function route() {
  clearInterval(refreshTimer);
  delete view.dataset.page;
  showError("");
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const signedIn = Boolean(sessionStorage.getItem("token"));
  document.getElementById("nav").hidden = !signedIn;
  if (!signedIn || path === "login") {
    login();
    view.dataset.page = "login";
    return;
  }
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", path.startsWith(a.getAttribute("href").slice(2)));
  }
  const found = ROUTES.find(([re]) => re.test(path));
  if (!found) {
    location.hash = "#/status";
    return;
  }
  view.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  await attempt(() => found[1](path.match(found[0]), new URLSearchParams(query || "")));
  view.dataset.page = path.split("/")[0];
}

document.getElementById("signout").addEventListener("click", () => attempt(async () => {
  const token = sessionStorage.getItem("token");
  sessionStorage.removeItem("token");
  await api("POST", "/v2/console/authenticate/logout", { token }).catch(() => {});
  location.hash = "#/login";
}));
window.addEventListener("hashchange", route);
route();
