-- nk.notifications_list|delete, nk.channel_messages_list,
-- nk.session_logout and nk.account_delete_id, for tests/http/lua_inbox.rs.
local nk = require("nakama")

local function err(f, ...)
  local ok, e = pcall(f, ...)
  if ok then return "no error" end
  return tostring(e)
end

nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local out = {}

  for i = 1, 3 do
    nk.notification_send(p.bob, "note " .. i, { n = i }, 7, nil, true)
  end
  local page, cursor = nk.notifications_list(p.bob, 2)
  out.page1 = #page
  out.page1_subject = page[1].subject
  out.page1_content = page[1].content
  out.page1_code = page[1].code
  out.page1_sender = page[1].senderId
  out.page1_time = page[1].createTime
  out.cursor = cursor ~= nil
  local rest = nk.notifications_list(p.bob, 2, cursor)
  out.page2 = #rest
  out.page2_subject = rest[1].subject
  out.all_default = #nk.notifications_list(p.bob)
  local _, empty_cursor = nk.notifications_list(p.cat)
  out.empty_cursor = empty_cursor == nil
  out.bad_limit = err(nk.notifications_list, p.bob, 1001)
  out.bad_user = err(nk.notifications_list, "nope")
  nk.notifications_delete({ { user_id = p.bob, notification_id = page[1].id } })
  -- Someone else's id deletes nothing.
  nk.notifications_delete({ { user_id = p.cat, notification_id = page[2].id } })
  out.after_delete = #nk.notifications_list(p.bob)
  out.bad_delete = err(nk.notifications_delete, { { user_id = p.bob, notification_id = "x" } })

  local room = nk.channel_id_build(nil, "inbox-room", 1)
  for i = 1, 3 do
    nk.channel_message_send(room, { text = "hi " .. i }, nil, nil, true)
  end
  local msgs, next_cursor, prev_cursor = nk.channel_messages_list(room, 2, true)
  out.msgs1 = #msgs
  out.msg_room = msgs[1].roomName
  out.msg_channel = msgs[1].channelId == room
  out.msg_content = msgs[1].content
  out.msg_persistent = msgs[1].persistent
  out.next_cursor = next_cursor ~= nil
  out.prev_cursor_first = prev_cursor == nil
  local more = nk.channel_messages_list(room, 2, true, next_cursor)
  out.msgs2 = #more
  out.msgs2_content = more[1].content
  out.newest_first = nk.channel_messages_list(room, 1, false)[1].content
  out.msgs_default = #nk.channel_messages_list(room)
  out.bad_msg_limit = err(nk.channel_messages_list, room, 101)
  out.bad_channel = err(nk.channel_messages_list, "not a channel")
  -- The server reads a direct conversation it is not part of.
  local direct = nk.channel_id_build(p.bob, p.cat, 2)
  out.direct = #nk.channel_messages_list(direct)

  -- Update and remove as a sender, as the server.
  local edit = nk.channel_id_build(nil, "inbox-edit", 1)
  local sent = nk.channel_message_send(edit, { v = 1 }, p.bob, "bob", true)
  nk.channel_message_send(edit, { v = 2 }, p.bob, "bob", true)
  local updated = nk.channel_message_update(edit, sent.messageId, { v = 10 }, p.bob, "bob", true)
  out.update_code = updated.code
  out.update_persistent = updated.persistent
  out.updated_content = nk.channel_messages_list(edit, 10)[1].content
  out.update_other_sender = err(nk.channel_message_update, edit, sent.messageId, { v = 11 }, p.cat, "cat", true)
  out.update_bad_id = err(nk.channel_message_update, edit, "nope", { v = 11 })
  out.update_bad_sender = err(nk.channel_message_update, edit, sent.messageId, { v = 11 }, "nope")
  local removed = nk.channel_message_remove(edit, sent.messageId, p.bob, "bob", true)
  out.remove_code = removed.code
  out.after_remove = #nk.channel_messages_list(edit, 10)
  out.remove_again = err(nk.channel_message_remove, edit, sent.messageId, p.bob, "bob", true)

  -- Three users exist: two picks are two of them, ten picks all three.
  local two = nk.users_get_random(2)
  out.random_two = #two
  out.random_two_distinct = two[1].user_id ~= two[2].user_id
  out.random_all = #nk.users_get_random(10)
  out.random_default = #nk.users_get_random()
  out.random_fraction = #nk.users_get_random(1.7)
  out.random_bad = err(nk.users_get_random, 1001)

  out.bad_logout = err(nk.session_logout, "nope")
  nk.session_logout(p.bob, p.bob_token)
  out.bad_delete_account = err(nk.account_delete_id, "nope")
  nk.account_delete_id(p.cat)
  return nk.json_encode(out)
end, "lua_inbox")

-- nk.notifications_get_id and nk.notifications_delete_id: bob and cat get
-- one note each; read and delete by id, of anyone or of one user.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.notification_send(p.bob, "for bob", { who = "bob" }, 5, nil, true)
  nk.notification_send(p.cat, "for cat", { who = "cat" }, 6, nil, true)
  local bobs = nk.notifications_list(p.bob)
  local cats = nk.notifications_list(p.cat)
  local ids = { bobs[1].id, cats[1].id }
  local out = {}
  local all = nk.notifications_get_id(ids)
  out.all = #all
  out.first_subject = all[1].subject
  out.first_who = all[1].content.who
  out.first_user = all[1].user_id
  out.first_code = all[1].code
  out.first_persistent = all[1].persistent
  out.first_time = all[1].create_time
  out.first_sender = all[1].sender_id
  out.of_cat = #nk.notifications_get_id(ids, p.cat)
  -- Scoped to cat: bob's stays.
  nk.notifications_delete_id(ids, p.cat)
  out.after_scoped = #nk.notifications_get_id(ids)
  nk.notifications_delete_id(ids)
  out.after_all = #nk.notifications_get_id(ids)
  out.bad_list = err(nk.notifications_get_id, "x")
  out.bad_id = err(nk.notifications_get_id, { "nope" })
  out.bad_type = err(nk.notifications_delete_id, { 5 })
  out.bad_user = err(nk.notifications_get_id, {}, "nope")
  return nk.json_encode(out)
end, "lua_notifications_by_id")

-- nk.notifications_update: the fields given replace the stored ones, the
-- others stay; unknown ids are ignored; bad entries are refused.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  nk.notification_send(p.bob, "before", { v = 1 }, 9, nil, true)
  local id = nk.notifications_list(p.bob)[1].id
  nk.notifications_update({
    { id = id, subject = "after", content = { v = 2 }, sender = ctx.user_id },
    { id = nk.uuid_v4(), subject = "nobody's" },
  })
  local got = nk.notifications_get_id({ id })[1]
  local out = {
    subject = got.subject,
    v = got.content.v,
    sender = got.sender_id,
    code = got.code,
    user = got.user_id,
  }
  -- Only the subject given: content and sender stay.
  nk.notifications_update({ { id = id, subject = "again" } })
  got = nk.notifications_get_id({ id })[1]
  out.again_subject = got.subject
  out.again_v = got.content.v
  out.again_sender = got.sender_id
  out.empty = err(nk.notifications_update, {})
  out.bad_id = err(nk.notifications_update, { { id = "nope" } })
  out.bad_subject = err(nk.notifications_update, { { id = id, subject = "" } })
  out.bad_content = err(nk.notifications_update, { { id = id, content = "x" } })
  out.bad_sender = err(nk.notifications_update, { { id = id, sender = "x" } })
  out.bad_entry = err(nk.notifications_update, { "x" })
  out.nul_subject = err(nk.notifications_update, { { id = id, subject = "a\0b" } })
  return nk.json_encode(out)
end, "lua_notifications_update")

-- nk.notification_send_all(subject, content, code, persistent).
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local out = {}
  out.sent = err(nk.notification_send_all, p.subject, { all = true }, 11, p.persistent)
  out.no_subject = err(nk.notification_send_all, "", {}, 1)
  out.bad_code = err(nk.notification_send_all, "s", {}, 0)
  return nk.json_encode(out)
end, "lua_notification_send_all")

-- nk.account_export_id: everything stored of a user, as Nakama's console
-- AccountExport JSON.
nk.register_rpc(function(ctx, payload)
  local p = nk.json_decode(payload)
  local me = ctx.user_id
  nk.storage_write({
    { collection = "export_a", key = "k1", user_id = me, value = { n = 1 } },
    { collection = "export_b", key = "k2", user_id = me, value = { n = 2 } },
  })
  nk.notification_send(me, "for export", { e = 1 }, 3, nil, true)
  nk.wallet_update(me, { coins = 5 }, { why = "export" }, true)
  local room = nk.channel_id_build(nil, "export-room", 1)
  nk.channel_message_send(room, { text = "mine" }, me, ctx.username, true)
  nk.leaderboard_create("export_board", false, "desc", "best", "", nil, true)
  nk.leaderboard_record_write("export_board", me, ctx.username, 42)
  nk.friends_add(me, ctx.username, { p.bob }, {})
  local e = nk.json_decode(nk.account_export_id(me))
  local out = {
    user = e.account.user.id,
    wallet = e.account.wallet,
    objects = #e.objects,
    first_collection = e.objects[1].collection,
    notifications = #e.notifications,
    notification_subject = e.notifications[1].subject,
    ledger = #e.wallet_ledgers,
    ledger_changeset = e.wallet_ledgers[1].changeset,
    messages = #e.messages,
    message_content = e.messages[1].content,
    records = #e.leaderboard_records,
    record_score = e.leaderboard_records[1].score,
    friends = #e.friends,
    friend = e.friends[1].user.id,
    groups = #(e.groups or {}),
  }
  local function err(...)
    local ok, x = pcall(nk.account_export_id, ...)
    return ok and "no error" or tostring(x)
  end
  out.bad_id = err("nope")
  out.unknown = err("00000000-0000-0000-0000-00000000beef")
  return nk.json_encode(out)
end, "lua_account_export")

-- nk.account_import_id: an export imported as a new account, then into an
-- existing one (metadata, wallet and storage replaced).
nk.register_rpc(function(ctx, payload)
  local me = ctx.user_id
  nk.storage_write({
    { collection = "import_a", key = "k1", user_id = me, value = { n = 1 } },
    { collection = "import_b", key = "k2", user_id = me, value = { n = 2 } },
  })
  nk.wallet_update(me, { gems = 3 }, {}, false)
  local e = nk.json_decode(nk.account_export_id(me))
  local copy_id = "6e0f2b1c-3a4d-4e5f-8a9b-0c1d2e3f4a5b"
  e.account.user.id = copy_id
  e.account.user.username = "imported_copy"
  e.account.devices = { { id = "imported-copy-device-01" } }
  local out = {}
  local made = nk.account_import_id(nk.json_encode(e))
  out.made_id = made.user.user_id
  out.made_username = made.user.username
  out.made_wallet = made.wallet.gems
  out.made_devices = #made.devices
  out.made_objects = #nk.storage_list(copy_id, "import_a", 10, "")
  out.again = (function()
    local ok, x = pcall(nk.account_import_id, nk.json_encode(e))
    return ok and "no error" or tostring(x)
  end)()
  -- Into the existing account: its storage becomes the export's one object.
  e.account.user.metadata = nk.json_encode({ imported = true })
  e.account.wallet = nk.json_encode({ gems = 9 })
  e.objects = { e.objects[1] }
  local into = nk.account_import_id(nk.json_encode(e), me)
  out.into_id = into.user.user_id
  out.into_username = into.user.username
  out.into_metadata = into.user.metadata.imported
  out.into_wallet = into.wallet.gems
  out.into_a = #nk.storage_list(me, "import_a", 10, "")
  out.into_b = #nk.storage_list(me, "import_b", 10, "")
  local function err(...)
    local ok, x = pcall(nk.account_import_id, ...)
    return ok and "no error" or tostring(x)
  end
  out.bad_json = err("{nope")
  out.empty = err("")
  out.bad_into = err(nk.json_encode(e), "nope")
  out.unknown_into = err(nk.json_encode(e), "00000000-0000-0000-0000-00000000beef")
  e.objects[1].value = "[1]"
  out.bad_value = err(nk.json_encode(e), me)
  return nk.json_encode(out)
end, "lua_account_import")
