// The JS module of tests/http/js_nk.rs: one RPC per group of Nakama's JS
// nk functions, each calling them as a Nakama module would and answering
// what it saw, so the test checks both the answers and their effect over
// REST on both backends.

var NIL = "00000000-0000-0000-0000-000000000000";
var GONE = "00000000-0000-0000-0000-00000000dead";

// The message of what `f` throws, prefixed with the error's name.
function thrown(f) {
  try {
    f();
  } catch (e) {
    return (e.name || "Error") + ": " + e.message;
  }
  return "nothing thrown";
}

function accounts(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.accountUpdateId(p.me, null, "Display Me", null, "Berlin", null, null, { level: 3 });
  var acc = nk.accountGetId(p.me);
  out.account = acc;
  out.accounts = nk.accountsGetId([p.me, p.other, GONE]).map(function (a) { return a.user.userId; });
  out.byId = nk.usersGetId([p.other]).map(function (u) { return u.userId; });
  out.byName = nk.usersGetUsername([acc.user.username]).map(function (u) { return u.userId; });
  out.random = nk.usersGetRandom(10).length;
  out.status = nk.usersGetFriendStatus(p.me, [p.other]).length;
  out.badId = thrown(function () { nk.accountGetId("nope"); });
  out.missing = thrown(function () { nk.accountGetId(GONE); });
  out.badName = thrown(function () { nk.accountUpdateId(p.me, "has space"); });
  out.badRandom = thrown(function () { nk.usersGetRandom(5000); });
  return JSON.stringify(out);
}

function ban(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  if (p.ban) nk.usersBanId([p.user]); else nk.usersUnbanId([p.user]);
  return "";
}

function logout(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  nk.sessionLogout(p.user, p.token);
  return "";
}

function deleteAccount(ctx, logger, nk, payload) {
  nk.accountDeleteId(JSON.parse(payload).user);
  return "";
}

function auth(ctx, logger, nk, payload) {
  var out = {};
  var first = nk.authenticateDevice("js-nk-device-0042", "jsnkdevice");
  var again = nk.authenticateDevice("js-nk-device-0042", "", true);
  out.device = [first.username, first.created, again.userId === first.userId, again.created];
  out.custom = nk.authenticateCustom("js-nk-custom-0042", "jsnkcustom").created;
  out.email = nk.authenticateEmail("jsnk@example.com", "password-0042", "jsnkmail").username;
  out.noCreate = thrown(function () { nk.authenticateCustom("js-nk-nobody-0042", "", false); });
  out.emptyId = thrown(function () { nk.authenticateDevice(""); });
  nk.linkCustom(first.userId, "js-nk-linked-0042");
  out.linked = nk.accountGetId(first.userId).customId;
  nk.linkEmail(first.userId, "linked@example.com", "password-0042");
  out.linkedEmail = nk.accountGetId(first.userId).email;
  nk.unlinkCustom(first.userId, "js-nk-linked-0042");
  out.unlinked = nk.accountGetId(first.userId).customId === undefined;
  out.linkTaken = thrown(function () { nk.linkCustom(first.userId, "js-nk-custom-0042"); });
  var t = nk.authenticateTokenGenerate(first.userId, "", 0, { tier: "gold" });
  out.token = t.token;
  out.exp = t.exp;
  return JSON.stringify(out);
}

function storage(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  out.acks = nk.storageWrite([
    { collection: "saves", key: "slot1", userId: p.me, value: { hp: 10 }, permissionRead: 2, permissionWrite: 1 },
    { collection: "saves", key: "system", value: { x: 1 } },
  ]);
  out.read = nk.storageRead([
    { collection: "saves", key: "slot1", userId: p.me },
    { collection: "saves", key: "absent", userId: p.me },
  ]);
  var page = nk.storageList(p.me, "saves", 10);
  out.listed = page.objects.map(function (o) { return o.key; });
  out.cursor = page.cursor;
  nk.storageDelete([{ collection: "saves", key: "system" }]);
  out.afterDelete = nk.storageRead([{ collection: "saves", key: "system" }]).length;
  out.conflict = thrown(function () {
    nk.storageWrite([{ collection: "saves", key: "slot1", userId: p.me, value: { hp: 1 }, version: "*" }]);
  });
  out.noValue = thrown(function () { nk.storageWrite([{ collection: "saves", key: "k" }]); });
  out.wallets = nk.walletsUpdate([{ userId: p.me, changeset: { gold: 10 }, metadata: { why: "quest" } }], true);
  var ledger = nk.walletLedgerList(p.me, 10);
  out.ledger = ledger.items.map(function (i) { return [i.changeset, i.metadata]; });
  out.ledgerUpdate = nk.walletLedgerUpdate(ledger.items[0].id, { note: "ok" }).metadata;
  out.multi = nk.multiUpdate(
    [{ userId: p.me, displayName: "Multi" }],
    [{ collection: "saves", key: "multi", userId: p.me, value: { m: 1 } }],
    null,
    [{ userId: p.me, changeset: { gold: -3 } }],
    false
  );
  // A competing write during the first round makes it run again.
  function racing(key, retries) {
    var calls = 0;
    var id = { collection: "counters", key: key, userId: p.me };
    nk.storageWriteRetry([id], function (objects) {
      calls++;
      if (calls === 1) nk.storageWrite([{ collection: "counters", key: key, userId: p.me, value: { n: 100 } }]);
      var n = objects.length ? objects[0].value.n : 0;
      return [{ collection: "counters", key: key, userId: p.me, value: { n: n + 1 } }];
    }, retries);
    return [calls, nk.storageRead([id])[0].value.n];
  }
  out.race = racing("race", 2);
  out.noRetry = thrown(function () { racing("race-once", 0); });
  out.badRetries = thrown(function () { nk.storageWriteRetry([{ collection: "c", key: "k" }], function () { return []; }, 11); });
  out.overdraw = thrown(function () { nk.walletsUpdate([{ userId: p.me, changeset: { gold: -100 } }]); });
  return JSON.stringify(out);
}

function inbox(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.notificationSend(p.me, "one", { n: 1 }, 5, null, true);
  nk.notificationsSend([{ userId: p.me, subject: "two", content: { n: 2 }, code: 6, persistent: true }]);
  var list = nk.notificationsList(p.me, 10);
  out.subjects = list.notifications.map(function (n) { return [n.subject, n.content, n.code, n.senderId]; });
  var first = list.notifications[0];
  out.byId = nk.notificationsGetId([first.id], p.me).map(function (n) { return [n.subject, n.content, n.userId]; });
  nk.notificationsDelete([{ userId: p.me, notificationId: first.id }]);
  out.left = nk.notificationsList(p.me, 10).notifications.length;
  out.badCode = thrown(function () { nk.notificationSend(p.me, "zero", {}, 0); });
  var channel = nk.channelIdBuild(null, "lobby", 1);
  out.channel = channel;
  var ack = nk.channelMessageSend(channel, { text: "hi" }, null, null, true);
  out.ack = [ack.channelId === channel, ack.persistent];
  nk.channelMessageUpdate(channel, ack.messageId, { text: "edited" }, null, null, true);
  var history = nk.channelMessagesList(channel, 10, true);
  out.history = history.messages.map(function (m) { return [m.content, m.roomName]; });
  nk.channelMessageRemove(channel, ack.messageId, null, null, true);
  out.afterRemove = nk.channelMessagesList(channel, 10, true).messages.length;
  var stream = { mode: 2, subject: p.me };
  out.streamCount = nk.streamCount(stream);
  out.streamUsers = nk.streamUserList(stream).length;
  out.badStream = thrown(function () { nk.streamCount({ mode: 2, subject: "nope" }); });
  out.parties = nk.partyList(10, null, true).parties.length;
  out.badParties = thrown(function () { nk.partyList(0); });
  return JSON.stringify(out);
}

function social(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.friendsAdd(p.me, "me", [p.other], [], { since: 2024 });
  out.status = nk.usersGetFriendStatus(p.me, [p.other]).map(function (f) { return [f.user.userId === p.other, f.state]; });
  var friends = nk.friendsList(p.me, 10);
  out.friends = friends.friends.map(function (f) { return [f.user.userId === p.other, f.state, f.metadata]; });
  out.theirs = nk.friendsList(p.other, 10, 2).friends.length;
  var g = nk.groupCreate(p.me, "js-nk-group", null, "en", "a group", "", true, { tag: "x" }, 10);
  out.group = [g.name, g.open, g.maxCount, g.edgeCount, g.metadata, g.creatorId];
  nk.groupUserJoin(g.id, p.other, "other");
  var members = nk.groupUsersList(g.id, 10);
  out.members = members.groupUsers.map(function (u) { return u.state; }).sort();
  nk.groupUpdate(g.id, null, "js-nk-group-2", null, null, "changed");
  out.renamed = nk.groupsGetId([g.id])[0].description;
  out.mine = nk.userGroupsList(p.me).userGroups.map(function (u) { return [u.group.name, u.state]; });
  out.listed = nk.groupsList("js-nk-group-2").groups.length;
  nk.groupUsersKick(g.id, [p.other]);
  out.afterKick = nk.groupUsersList(g.id).groupUsers.length;
  nk.groupDelete(g.id);
  out.afterDelete = nk.groupsGetId([g.id]).length;
  nk.friendsDelete(p.me, "me", [p.other], []);
  out.afterUnfriend = nk.friendsList(p.me).friends.length;
  out.noName = thrown(function () { nk.groupCreate(p.me, ""); });
  return JSON.stringify(out);
}

function util(ctx, logger, nk, payload) {
  var out = {};
  nk.sqlExec("CREATE TABLE IF NOT EXISTS js_nk_scores (id BIGINT PRIMARY KEY, name TEXT NOT NULL, score DOUBLE PRECISION)");
  out.inserted = nk.sqlExec("INSERT INTO js_nk_scores (id, name, score) VALUES ($1, $2, $3)", [1, "ann", 12.5]).rowsAffected;
  out.rows = nk.sqlQuery("SELECT id, name, score FROM js_nk_scores WHERE id >= $1 ORDER BY id", [1]);
  out.badSql = thrown(function () { nk.sqlQuery("SELECT nope FROM js_nk_scores"); });
  var sealed = nk.aes256Encrypt("secret", "0123456789abcdef0123456789abcdef");
  out.aes = nk.aes256Decrypt(sealed, "0123456789abcdef0123456789abcdef");
  out.badKey = thrown(function () { nk.aes128Encrypt("x", "short"); });
  out.hmac = nk.base16Encode(nk.hmacSha256Hash("hello", "key"));
  out.jwt = nk.jwtGenerate("HS256", "key", { sub: "u1" });
  out.bcrypt = nk.bcryptCompare(nk.bcryptHash("pw"), "pw");
  out.file = nk.fileRead("index.js").split("\n")[0];
  out.escape = thrown(function () { nk.fileRead("../js/index.js"); });
  out.cronPrev = nk.cronPrev("0 * * * *", 1700003000);
  out.random = nk.secureRandomBytes(8).byteLength;
  out.satori = thrown(function () { nk.getSatori().flagsList("u"); });
  nk.metricsCounterAdd("js_nk_calls", { mode: "test" }, 2);
  nk.metricsCounterAdd("js_nk_calls", { mode: "test" }, 3);
  nk.metricsGaugeSet("js_nk_queue", {}, 7.5);
  nk.metricsTimerRecord("js_nk_work", null, 1500000);
  out.badTags = thrown(function () { nk.metricsCounterAdd("js_nk_bad", { mode: 1 }, 1); });
  nk.event("js_nk_event", { a: "b" });
  return JSON.stringify(out);
}

function boards(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.leaderboardCreate("js-nk-board", true, "desc", "best", null, { season: 1 });
  out.board = nk.leaderboardsGetId(["js-nk-board", "absent"]);
  out.first = nk.leaderboardRecordWrite("js-nk-board", p.me, "me", 10, 1, { run: 1 });
  nk.leaderboardRecordWrite("js-nk-board", p.me, "me", 5);
  nk.leaderboardRecordWrite("js-nk-board", p.other, "other", 20);
  var list = nk.leaderboardRecordsList("js-nk-board", [p.me], 10);
  out.list = list.records.map(function (r) { return [r.username, r.score, r.rank]; });
  out.owners = list.ownerRecords.map(function (r) { return [r.ownerId === p.me, r.numScore]; });
  out.cursors = [list.nextCursor, list.prevCursor];
  out.haystack = nk.leaderboardRecordsHaystack("js-nk-board", p.me, 10).records.length;
  out.listed = nk.leaderboardList(10).leaderboards.map(function (b) { return b.id; });
  nk.leaderboardRecordDelete("js-nk-board", p.other);
  out.afterDelete = nk.leaderboardRecordsList("js-nk-board", null, 10).records.length;
  out.badSort = thrown(function () { nk.leaderboardCreate("js-nk-bad", false, "sideways"); });
  var now = Math.floor(Date.now() / 1000);
  nk.tournamentCreate("js-nk-cup", true, "desc", "incr", 3600, null, { cup: true }, "Cup", "a cup", 1, now - 10, 0, 10, 3, true);
  nk.tournamentJoin("js-nk-cup", p.me, "me");
  nk.tournamentRecordWrite("js-nk-cup", p.me, "me", 3);
  nk.tournamentRecordWrite("js-nk-cup", p.me, "me", 4);
  out.cup = nk.tournamentsGetId(["js-nk-cup"]).map(function (t) {
    return [t.title, t.size, t.maxSize, t.joinRequired, t.operator, t.endTime, t.canEnter];
  });
  out.cupRecords = nk.tournamentRecordsList("js-nk-cup", [], 10).records.map(function (r) { return [r.score, r.numScore]; });
  out.cups = nk.tournamentList(0, 127).tournaments.map(function (t) { return t.id; });
  out.notJoined = thrown(function () { nk.tournamentRecordWrite("js-nk-cup", p.other, "other", 1); });
  nk.tournamentDelete("js-nk-cup");
  out.cupsAfter = nk.tournamentsGetId(["js-nk-cup"]).length;
  return JSON.stringify(out);
}

function purchases(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  out.apple = nk.purchaseValidateApple(ctx.userId, p.apple).validatedPurchases;
  out.again = nk.purchaseValidateApple(ctx.userId, p.apple).validatedPurchases[0].seenBefore;
  out.get = nk.purchaseGetByTransactionId(p.appleTx);
  out.list = nk.purchasesList(ctx.userId, 10);
  out.google = thrown(function () { nk.purchaseValidateGoogle(ctx.userId, p.google); });
  out.samsung = thrown(function () { nk.purchaseValidateSamsung(ctx.userId, "x"); });
  out.sub = nk.subscriptionValidateApple(ctx.userId, p.appleSub).validatedSubscription;
  out.subGet = nk.subscriptionGetByProductId(ctx.userId, out.sub.productId).originalTransactionId;
  out.subs = nk.subscriptionsList(ctx.userId, 10).validatedSubscriptions.length;
  out.badLimit = thrown(function () { nk.purchasesList(ctx.userId, 101); });
  return JSON.stringify(out);
}

// An nk error the module does not catch.
function uncaught(ctx, logger, nk, payload) {
  nk.accountGetId(payload === "type" ? "nope" : GONE);
  return "";
}

// accountExportId, accountImportId, notificationsUpdate and
// notificationSendAll.
function porting(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.storageWrite([{ collection: "port", key: "k", userId: p.me, value: { n: 1 } }]);
  nk.notificationSend(p.me, "to update", { v: 1 }, 7, null, true);
  var e = JSON.parse(nk.accountExportId(p.me));
  out.exported = [e.account.user.id, e.objects.length, e.notifications.length];
  e.account.user.id = "4a7b9c2d-1e3f-4a5b-8c6d-7e8f9a0b1c2d";
  e.account.user.username = "js_imported";
  e.account.devices = [{ id: "js-imported-device-01" }];
  var made = nk.accountImportId(JSON.stringify(e));
  out.imported = [made.user.userId, made.user.username, made.devices.length];
  out.importedObjects = nk.storageRead([{ collection: "port", key: "k", userId: made.user.userId }]).length;
  out.importTwice = thrown(function () { nk.accountImportId(JSON.stringify(e)); });
  out.badImport = thrown(function () { nk.accountImportId("{nope"); });
  var id = nk.notificationsList(p.me, 10).notifications[0].id;
  nk.notificationsUpdate([{ id: id, subject: "updated", content: { v: 2 } }]);
  var got = nk.notificationsGetId([id])[0];
  out.updated = [got.subject, got.content.v, got.code];
  out.badUpdate = thrown(function () { nk.notificationsUpdate([{ id: "nope" }]); });
  nk.notificationSendAll("to everyone", { all: true }, 8, false);
  out.badSendAll = thrown(function () { nk.notificationSendAll("", {}, 8); });
  return JSON.stringify(out);
}


// The pure functions, the node's cache and httpRequest. payload: {url,
// pem} (the server's own healthcheck URL, an RSA key made by the test).
function pure(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  var id = nk.uuidv4();
  out.uuid = [id.length, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id), id !== nk.uuidv4()];
  out.cronNext = nk.cronNext("0 * * * *", 1700003000);
  out.b64 = [nk.base64Encode("hi?>"), nk.base64Encode("hi?>", false), nk.binaryToString(nk.base64Decode("aGk/Pg=="))];
  out.b64url = [nk.base64UrlEncode("hi?>"), nk.base64UrlEncode("hi?>", false), nk.binaryToString(nk.base64UrlDecode("aGk_Pg==")), nk.binaryToString(nk.base64UrlDecode("aGk_Pg", false))];
  out.b16 = nk.binaryToString(nk.base16Decode("6869"));
  out.badB16 = thrown(function () { nk.base16Decode("zz"); });
  out.binary = [nk.stringToBinary("héllo").byteLength, nk.binaryToString(nk.stringToBinary("héllo"))];
  var key = "0123456789abcdef";
  out.aes128 = nk.aes128Decrypt(nk.aes128Encrypt("round trip", key), key);
  out.md5 = nk.md5Hash("hello");
  out.sha256 = nk.sha256Hash("hello");
  out.rsa = nk.base64Encode(nk.rsaSha256Hash("signed text", p.pem));
  out.badRsa = thrown(function () { nk.rsaSha256Hash("x", "not a key"); });
  nk.localcachePut("js-nk-key", "one");
  nk.localcachePut("js-nk-num", 1, 60);
  nk.localcachePut("js-nk-bool", true);
  out.cached = [nk.localcacheGet("js-nk-key"), nk.localcacheGet("js-nk-num"), nk.localcacheGet("js-nk-bool")];
  out.badCache = thrown(function () { nk.localcachePut("js-nk-obj", { n: 1 }); });
  out.fallback = nk.localcacheGet("js-nk-absent", "default");
  nk.localcacheDelete("js-nk-key");
  out.deleted = nk.localcacheGet("js-nk-key") === undefined || nk.localcacheGet("js-nk-key") === null;
  nk.localcachePut("js-nk-a", 1);
  nk.localcachePut("js-nk-b", 2);
  nk.localcacheClear();
  out.cleared = [nk.localcacheGet("js-nk-a", "gone"), nk.localcacheGet("js-nk-b", "gone")];
  var res = nk.httpRequest(p.url, "get", { Accept: "application/json" });
  out.http = [res.code, res.body];
  return JSON.stringify(out);
}

// Friends of friends, blocks, friend metadata, group membership changes,
// random groups and deleting notifications by id.
function socialMore(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  // me - friend - far: far is a friend of a friend.
  nk.friendsAdd(p.me, "me", [p.friend], []);
  nk.friendsAdd(p.friend, "friend", [p.me, p.far], []);
  nk.friendsAdd(p.far, "far", [p.friend], []);
  out.fof = nk.friendsOfFriendsList(p.me, 10).friendsOfFriends.map(function (f) {
    return [f.referrer === p.friend, f.user.userId === p.far];
  });
  nk.friendMetadataUpdate(p.me, p.friend, { since: 2025 });
  out.metadata = nk.friendsList(p.me, 10, 0).friends.map(function (f) { return f.metadata; });
  nk.friendsBlock(p.me, "me", [p.far], []);
  out.blocked = nk.friendsList(p.me, 10, 3).friends.map(function (f) { return f.user.userId === p.far; });
  out.badMetadata = thrown(function () { nk.friendMetadataUpdate(p.me, p.friend, "text"); });

  var g = nk.groupCreate(p.me, "js-nk-more-group", p.me, "en", "", "", false, {}, 10);
  nk.groupUsersAdd(g.id, [p.friend, p.far]);
  var states = function () {
    var byUser = {};
    nk.groupUsersList(g.id, 10).groupUsers.forEach(function (u) { byUser[u.user.userId] = u.state; });
    return [byUser[p.me], byUser[p.friend], byUser[p.far]];
  };
  out.added = states();
  nk.groupUsersPromote(g.id, [p.friend]);
  out.promoted = states();
  nk.groupUsersDemote(g.id, [p.friend]);
  out.demoted = states();
  nk.groupUsersBan(g.id, [p.far]);
  out.banned = states();
  out.bannedList = nk.groupUsersList(g.id, 10, 4).groupUsers.map(function (u) { return [u.user.userId === p.far, u.state]; });
  nk.groupUserLeave(g.id, p.friend, "friend");
  out.left = states();
  out.random = nk.groupsGetRandom(5).map(function (r) { return r.id === g.id; });
  out.badRandom = thrown(function () { nk.groupsGetRandom(-1); });

  nk.notificationSend(p.me, "keep", {}, 9, null, true);
  nk.notificationSend(p.me, "drop", {}, 9, null, true);
  var list = nk.notificationsList(p.me, 10).notifications;
  var drop = list.filter(function (n) { return n.subject === "drop"; })[0];
  nk.notificationsDeleteId([drop.id], p.me);
  out.notificationsLeft = nk.notificationsList(p.me, 10).notifications
    .filter(function (n) { return n.code === 9; })
    .map(function (n) { return n.subject; });
  return JSON.stringify(out);
}

// Leaderboard and tournament calls the nk_boards group leaves out, and
// the storage index the module declares.
function boardsMore(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  nk.leaderboardCreate("js-nk-more-board", false, "desc", "set");
  [p.me, p.other, p.third].forEach(function (id, i) {
    nk.leaderboardRecordWrite("js-nk-more-board", id, "u" + i, 100 - i * 10);
  });
  var cursor = nk.leaderboardRecordsListCursorFromRank("js-nk-more-board", 2);
  out.fromRank = nk.leaderboardRecordsList("js-nk-more-board", null, 10, cursor).records.map(function (r) { return r.rank; });
  nk.leaderboardRanksDisable("js-nk-more-board");
  out.afterDisable = nk.leaderboardRecordsList("js-nk-more-board", null, 10).records.length;
  nk.leaderboardDelete("js-nk-more-board");
  out.boardsAfter = nk.leaderboardsGetId(["js-nk-more-board"]).length;

  var now = Math.floor(Date.now() / 1000);
  nk.tournamentCreate("js-nk-more-cup", false, "desc", "best", 3600, null, {}, "Cup", "", 0, now - 10, 0, 10, 1, false);
  nk.tournamentRecordWrite("js-nk-more-cup", p.me, "me", 5);
  out.noAttempts = thrown(function () { nk.tournamentRecordWrite("js-nk-more-cup", p.me, "me", 6); });
  nk.tournamentAddAttempt("js-nk-more-cup", p.me, 1);
  nk.tournamentRecordWrite("js-nk-more-cup", p.me, "me", 6);
  nk.tournamentRecordWrite("js-nk-more-cup", p.other, "other", 3);
  out.cupHaystack = nk.tournamentRecordsHaystack("js-nk-more-cup", p.other, 10).records.map(function (r) { return [r.score, r.rank]; });
  nk.tournamentRecordDelete("js-nk-more-cup", p.other);
  out.cupAfterDelete = nk.tournamentRecordsList("js-nk-more-cup", [], 10).records.map(function (r) { return r.score; });
  nk.tournamentsRanksDisable("js-nk-more-cup");
  nk.tournamentDelete("js-nk-more-cup");

  nk.storageWrite([
    { collection: "js_idx", key: "a", userId: p.me, value: { level: 3 } },
    { collection: "js_idx", key: "b", userId: p.other, value: { level: 7 } },
  ]);
  out.indexed = nk.storageIndexList("js_nk_index", "+value.level:>=5", 10).objects.map(function (o) { return [o.key, o.value.level]; });
  out.badIndex = thrown(function () { nk.storageIndexList("no_such_index", "*", 10); });
  return JSON.stringify(out);
}

// The purchase and subscription validations nk_purchases leaves out:
// Facebook Instant (signed here with the app secret the test configures),
// and Huawei and Google subscriptions, which this server has no keys for.
function purchasesMore(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  var body = nk.base64UrlEncode(JSON.stringify({
    algorithm: "HMAC-SHA256", app_id: "42", is_consumed: false, payment_id: "js-pay-1",
    product_id: "gems", purchase_time: 1700000000, purchase_token: "js-token-1",
  }), false);
  var sig = nk.base64UrlEncode(nk.hmacSha256Hash(body, p.secret), false);
  var first = nk.purchaseValidateFacebookInstant(p.me, sig + "." + body);
  out.instant = first.validatedPurchases.map(function (v) { return [v.productId, v.transactionId, v.seenBefore]; });
  var again = nk.purchaseValidateFacebookInstant(p.me, sig + "." + body);
  out.instantAgain = again.validatedPurchases.map(function (v) { return v.seenBefore; });
  var forged = nk.base64UrlEncode(nk.hmacSha256Hash(body, "not the secret"), false);
  out.instantForged = thrown(function () { nk.purchaseValidateFacebookInstant(p.me, forged + "." + body); });
  out.huawei = thrown(function () { nk.purchaseValidateHuawei(p.me, "{}", "sig"); });
  out.googleSub = thrown(function () { nk.subscriptionValidateGoogle(p.me, "{}"); });
  return JSON.stringify(out);
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerStorageIndex("js_nk_index", "js_idx", "", ["level"], ["level"], 100, false);
  initializer.registerRpc("nk_pure", pure);
  initializer.registerRpc("nk_social_more", socialMore);
  initializer.registerRpc("nk_boards_more", boardsMore);
  initializer.registerRpc("nk_purchases_more", purchasesMore);
  initializer.registerRpc("nk_porting", porting);
  initializer.registerRpc("nk_uncaught", uncaught);
  initializer.registerRpc("nk_purchases", purchases);
  initializer.registerRpc("nk_boards", boards);
  initializer.registerRpc("nk_util", util);
  initializer.registerRpc("nk_accounts", accounts);
  initializer.registerRpc("nk_ban", ban);
  initializer.registerRpc("nk_logout", logout);
  initializer.registerRpc("nk_delete", deleteAccount);
  initializer.registerRpc("nk_auth", auth);
  initializer.registerRpc("nk_storage", storage);
  initializer.registerRpc("nk_inbox", inbox);
  initializer.registerRpc("nk_social", social);
}
