// Friends, groups and group chat through the real Nakama JavaScript client
// (@heroiclabs/nakama-js), as games call them: add and accept friends,
// list them with their states, create and join groups, manage members,
// search, and chat in a group channel over the socket.
//
// The server is started by the caller (scripts/test); LUDUS_HOST and
// LUDUS_PORT say where it listens.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { Client } from "@heroiclabs/nakama-js";

globalThis.WebSocket = WebSocket;

const HOST = process.env.LUDUS_HOST ?? "127.0.0.1";
const PORT = process.env.LUDUS_PORT ?? "7350";
const SERVER_KEY = process.env.LUDUS_SERVER_KEY ?? "defaultkey";
const client = new Client(SERVER_KEY, HOST, PORT, false, 5000, false);

const unique = () => randomUUID().replaceAll("-", "");
const player = () => client.authenticateDevice(`device-${unique()}`, true);

/** Awaits `promise`, which must reject with an HTTP error of `status`. */
async function assertHttpError(promise, status, what) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof Response, `${what}: expected an HTTP error, got ${e}`);
    assert.equal(e.status, status, `${what}: ${await e.text()}`);
    return;
  }
  assert.fail(`${what}: expected HTTP ${status}, but the call succeeded`);
}

/** Resolves with the first value `register(resolve)` delivers, or fails after `ms`. */
function nextEvent(register, what, ms = 5000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    register((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

describe("friends", () => {
  test("invite, accept, list with states, block and delete", async () => {
    const [ann, ben, cid] = [await player(), await player(), await player()];
    assert.equal(await client.addFriends(ann, [ben.user_id]), true);
    let list = await client.listFriends(ben);
    assert.equal(list.friends.length, 1);
    assert.equal(list.friends[0].user.id, ann.user_id);
    assert.equal(list.friends[0].state, 2);

    await client.addFriends(ben, undefined, [ann.username]);
    list = await client.listFriends(ann, 0);
    assert.equal(list.friends.length, 1);
    assert.equal(list.friends[0].user.username, ben.username);
    // Nakama omits zero values; the client reads a missing state as 0.
    assert.equal(list.friends[0].state ?? 0, 0);

    // Friends of friends: cid befriends ben, ann sees cid through ben.
    await client.addFriends(cid, [ben.user_id]);
    await client.addFriends(ben, [cid.user_id]);
    const fof = await client.listFriendsOfFriends(ann);
    assert.equal(fof.friends_of_friends.length, 1);
    assert.equal(fof.friends_of_friends[0].referrer, ben.user_id);
    assert.equal(fof.friends_of_friends[0].user.id, cid.user_id);

    await client.blockFriends(cid, [ann.user_id]);
    await client.addFriends(ann, [cid.user_id]);
    list = await client.listFriends(ann);
    assert.deepEqual(list.friends.map((f) => f.user.id), [ben.user_id]);

    await client.deleteFriends(ann, [ben.user_id]);
    list = await client.listFriends(ann);
    assert.equal(list.friends.length, 0);
    await assertHttpError(client.addFriends(ann, [ann.user_id]), 400, "adding self");
  });
});

describe("groups", () => {
  test("create, join a closed group, manage members, search", async () => {
    const [ann, ben] = [await player(), await player()];
    const name = `guild-${unique().slice(0, 12)}`;
    const group = await client.createGroup(ann, { name, description: "js", open: false, max_count: 10 });
    assert.equal(group.name, name);
    assert.equal(group.creator_id, ann.user_id);
    assert.equal(group.edge_count, 1);
    assert.equal(group.max_count, 10);

    assert.equal(await client.joinGroup(ben, group.id), true);
    let users = await client.listGroupUsers(ann, group.id);
    assert.deepEqual(
      users.group_users.map((u) => [u.user.id, u.state ?? 0]),
      [[ann.user_id, 0], [ben.user_id, 3]],
    );
    await client.addGroupUsers(ann, group.id, [ben.user_id]);
    await client.promoteGroupUsers(ann, group.id, [ben.user_id]);
    users = await client.listGroupUsers(ann, group.id);
    assert.equal(users.group_users[1].state, 1);

    const mine = await client.listUserGroups(ben, ben.user_id);
    assert.equal(mine.user_groups.length, 1);
    assert.equal(mine.user_groups[0].group.id, group.id);
    assert.equal(mine.user_groups[0].state, 1);

    const found = await client.listGroups(ann, `${name.slice(0, 10)}%`, undefined, 10);
    assert.ok(found.groups.some((g) => g.id === group.id), JSON.stringify(found));

    await assertHttpError(client.leaveGroup(ann, group.id), 400, "last superadmin leaving");
    await client.kickGroupUsers(ann, group.id, [ben.user_id]);
    users = await client.listGroupUsers(ann, group.id);
    assert.equal(users.group_users.length, 1);
    assert.equal(await client.deleteGroup(ann, group.id), true);
  });

  describe("group chat", () => {
    let ann, ben, annSocket, benSocket, group;

    before(async () => {
      [ann, ben] = [await player(), await player()];
      group = await client.createGroup(ann, { name: `chat-${unique().slice(0, 12)}`, open: true });
      await client.joinGroup(ben, group.id);
      annSocket = client.createSocket(false, false);
      benSocket = client.createSocket(false, false);
      await annSocket.connect(ann, true);
      await benSocket.connect(ben, true);
    });

    after(() => {
      annSocket.disconnect(false);
      benSocket.disconnect(false);
    });

    test("members chat; the history has the messages", async () => {
      const channel = await annSocket.joinChat(group.id, 3, true, false);
      assert.equal(channel.id, `3.${group.id}..`);
      await benSocket.joinChat(group.id, 3, true, false);
      const received = nextEvent((done) => {
        annSocket.onchannelmessage = (m) => {
          if ((m.code ?? 0) === 0) done(m);
        };
      }, "channel message");
      await benSocket.writeChatMessage(channel.id, { text: "for the guild" });
      const m = await received;
      assert.equal(m.sender_id, ben.user_id);
      assert.equal(m.group_id, group.id);
      assert.deepEqual(m.content, { text: "for the guild" });
      const history = await client.listChannelMessages(ann, channel.id, 10, true);
      assert.ok(history.messages.some((h) => h.content?.text === "for the guild"));
    });

    test("a non-member cannot join the channel", async () => {
      const outsider = await player();
      const socket = client.createSocket(false, false);
      await socket.connect(outsider, false);
      try {
        await assert.rejects(socket.joinChat(group.id, 3, true, false));
      } finally {
        socket.disconnect(false);
      }
    });
  });
});
