//! The console's users: adding (and re-adding, which sets the ACL), look-up
//! by id, username or email, listing without the root user, changes with
//! their token cutoff and the once-only guard of invitation codes, MFA's
//! once-only setup and recovery codes, and deletion; and what the console
//! keeps beside them: notes on accounts (paged, gone with the account),
//! ACL templates with unique names, and settings.

use ludus_core::StoreError;
use ludus_core::console::{ConsoleUser, ConsoleUserChange};
use ludus_core::console_acl::Acl;
use ludus_core::console_records::{AclTemplate, NoteWrite, NotesPosition};
use ludus_core::store::ConsoleUserKey;
use uuid::Uuid;

use super::{Backend, T0, device, new_user};

fn user(name: &str, acl: Acl) -> ConsoleUser {
    ConsoleUser {
        id: Uuid::new_v4(),
        username: name.to_owned(),
        email: format!("{name}@example.com"),
        acl,
        mfa_required: false,
        mfa_enabled: false,
        create_time: T0,
        update_time: T0,
        tokens_after_ms: T0 * 1000,
    }
}

fn name(n: &str) -> ConsoleUserKey {
    ConsoleUserKey::Name(n.to_owned())
}

pub(crate) async fn console_users_add_find_list_and_delete<B: Backend>() {
    let (_b, store) = B::store().await;
    let ops = store
        .console_user_put(&user("ops", Acl::ADMIN))
        .await
        .unwrap();
    assert_eq!(ops.acl, Acl::ADMIN);
    let found = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(found.user, ops);
    assert_eq!(found.password_hash, None);
    assert!(!found.disabled);
    let by_email = store
        .console_user_get(&name("ops@example.com"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_email.user.id, ops.id);
    let by_id = store
        .console_user_get(&ConsoleUserKey::Id(ops.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_id.user.username, "ops");
    assert!(
        store
            .console_user_get(&name("nobody"))
            .await
            .unwrap()
            .is_none()
    );

    // Re-adding a username sets its ACL and keeps its id and creation time.
    let mut again = user("ops", Acl::NONE);
    again.update_time = T0 + 5;
    let again = store.console_user_put(&again).await.unwrap();
    assert_eq!((again.id, again.create_time), (ops.id, T0));
    assert_eq!((again.acl, again.update_time), (Acl::NONE, T0 + 5));
    // Another username with a taken email is refused and writes nothing.
    let mut clash = user("other", Acl::ADMIN);
    clash.email = "ops@example.com".into();
    assert_eq!(
        store.console_user_put(&clash).await.unwrap_err(),
        StoreError::ConsoleUserTaken
    );

    // The root user's row (nil id) is never listed nor deleted by name.
    let mut root = user("", Acl::ADMIN);
    root.id = Uuid::nil();
    root.email = String::new();
    store.console_user_put(&root).await.unwrap();
    store
        .console_user_put(&user("alpha", Acl::ADMIN))
        .await
        .unwrap();
    let names: Vec<String> = store
        .console_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(names, ["alpha", "ops"]);
    assert!(!store.console_user_delete("").await.unwrap());
    assert!(store.console_user_delete("ops").await.unwrap());
    assert!(!store.console_user_delete("ops").await.unwrap());
    assert!(
        store
            .console_user_get(&name("ops"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .console_user_get(&ConsoleUserKey::Id(Uuid::nil()))
            .await
            .unwrap()
            .is_some()
    );
}

pub(crate) async fn console_user_changes_move_the_token_cutoff<B: Backend>() {
    let (_b, store) = B::store().await;
    let ops = store
        .console_user_put(&user("ops", Acl::ADMIN))
        .await
        .unwrap();
    let key = ConsoleUserKey::Id(ops.id);
    let t1 = T0 * 1000 + 1_500;
    let changed = store
        .console_user_change(&key, &ConsoleUserChange::Acl(Acl::NONE), t1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.acl, Acl::NONE);
    assert_eq!((changed.tokens_after_ms, changed.update_time), (t1, T0 + 1));

    // A password with a guard: applies once, then the guard refuses.
    let guarded = |hash: &str| ConsoleUserChange::Password {
        hash: hash.to_owned(),
        unchanged_since_ms: Some(t1),
    };
    let t2 = t1 + 10;
    assert!(
        store
            .console_user_change(&name("ops"), &guarded("h1"), t2)
            .await
            .unwrap()
            .is_some()
    );
    let stored = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(stored.password_hash.as_deref(), Some("h1"));
    assert!(
        store
            .console_user_change(&name("ops"), &guarded("h2"), t2 + 10)
            .await
            .unwrap()
            .is_none()
    );
    let stored = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(
        stored.password_hash.as_deref(),
        Some("h1"),
        "nothing written"
    );

    // A sign-out moves the cutoff only; unknown users change nothing.
    let t3 = t2 + 1_000_000;
    let out = store
        .console_user_change(&key, &ConsoleUserChange::SignOut, t3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((out.tokens_after_ms, out.update_time), (t3, T0 + 1));
    assert!(
        store
            .console_user_change(&name("nobody"), &ConsoleUserChange::SignOut, t3)
            .await
            .unwrap()
            .is_none()
    );
}

pub(crate) async fn console_mfa_is_set_up_once_and_codes_used_once<B: Backend>() {
    let (_b, store) = B::store().await;
    let ops = store
        .console_user_put(&user("ops", Acl::ADMIN))
        .await
        .unwrap();
    let key = ConsoleUserKey::Id(ops.id);
    let cutoff = ops.tokens_after_ms;
    let set = |since: i64| ConsoleUserChange::MfaSet {
        secret: b"sealed secret".to_vec(),
        recovery_codes: b"codes 1".to_vec(),
        unchanged_since_ms: since,
    };
    // A setup token issued before the cutoff sets nothing up.
    let t = cutoff + 10;
    assert!(
        store
            .console_user_change(&key, &set(cutoff - 1), t)
            .await
            .unwrap()
            .is_none()
    );
    let on = store
        .console_user_change(&key, &set(cutoff + 1), t)
        .await
        .unwrap()
        .unwrap();
    assert!(on.mfa_enabled);
    assert_eq!(on.tokens_after_ms, cutoff, "sessions go on");
    let stored = store.console_user_get(&key).await.unwrap().unwrap();
    assert_eq!(stored.mfa_secret.as_deref(), Some(&b"sealed secret"[..]));
    assert_eq!(stored.mfa_recovery_codes.as_deref(), Some(&b"codes 1"[..]));
    // Set up once only.
    assert!(
        store
            .console_user_change(&key, &set(cutoff + 1), t)
            .await
            .unwrap()
            .is_none()
    );
    // Recovery codes change only from what was read.
    let codes = |before: &[u8], after: &[u8]| ConsoleUserChange::MfaRecoveryCodes {
        before: before.to_vec(),
        after: after.to_vec(),
    };
    assert!(
        store
            .console_user_change(&key, &codes(b"other", b"x"), t)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .console_user_change(&key, &codes(b"codes 1", b"codes 2"), t)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .console_user_change(&key, &codes(b"codes 1", b"codes 3"), t)
            .await
            .unwrap()
            .is_none()
    );
    // Required or not: sessions go on.
    let req = store
        .console_user_change(&key, &ConsoleUserChange::MfaRequired(true), t)
        .await
        .unwrap()
        .unwrap();
    assert!(req.mfa_required);
    assert_eq!(req.tokens_after_ms, cutoff);
    // A reset clears both and ends the sessions.
    let reset = store
        .console_user_change(&key, &ConsoleUserChange::MfaReset, t + 5)
        .await
        .unwrap()
        .unwrap();
    assert!(!reset.mfa_enabled && reset.mfa_required);
    assert_eq!(reset.tokens_after_ms, t + 5);
    let stored = store.console_user_get(&key).await.unwrap().unwrap();
    assert_eq!((stored.mfa_secret, stored.mfa_recovery_codes), (None, None));
    // An old setup token no longer works; a new one does.
    assert!(
        store
            .console_user_change(&key, &set(t + 1), t + 6)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .console_user_change(&key, &set(t + 6), t + 7)
            .await
            .unwrap()
            .is_some()
    );
}

pub(crate) async fn notes_templates_and_settings<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("console-notes-ann01"));
    store.create_user(ann.clone()).await.unwrap();
    let by = Uuid::new_v4();
    let write = |id: Uuid, note: &str, at: i64, create: bool| NoteWrite {
        user_id: ann.id,
        id,
        note: note.to_owned(),
        by,
        now_us: at,
        create,
    };
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (i, id) in ids.iter().enumerate() {
        let added = store
            .account_note_put(&write(*id, &format!("n{i}"), 1_000 + i as i64, true))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((added.create_id, added.update_id), (by, by));
    }
    // No such account; no such note to change.
    let ghost = NoteWrite {
        user_id: Uuid::new_v4(),
        ..write(Uuid::new_v4(), "x", 5, true)
    };
    assert!(store.account_note_put(&ghost).await.unwrap().is_none());
    assert!(
        store
            .account_note_put(&write(Uuid::new_v4(), "x", 5, false))
            .await
            .unwrap()
            .is_none()
    );
    let changed = store
        .account_note_put(&write(ids[0], "n0 again", 9_000, false))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (changed.create_time_us, changed.update_time_us),
        (1_000, 9_000)
    );
    // Newest first, limit + 1, from a position.
    let page = store.account_notes(ann.id, None, 2).await.unwrap();
    let texts: Vec<&str> = page.iter().map(|n| n.note.as_str()).collect();
    assert_eq!(texts, ["n2", "n1", "n0 again"]);
    let from = NotesPosition {
        user_id: ann.id,
        create_time_us: page[2].create_time_us,
        id: page[2].id,
    };
    let rest = store.account_notes(ann.id, Some(from), 2).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert!(store.account_note_delete(ann.id, ids[1]).await.unwrap());
    assert!(!store.account_note_delete(ann.id, ids[1]).await.unwrap());
    assert!(
        !store
            .account_note_delete(Uuid::new_v4(), ids[2])
            .await
            .unwrap()
    );
    // Notes go with their account.
    assert!(store.delete_user(ann.id).await.unwrap());
    assert!(
        store
            .account_notes(ann.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Templates: unique names, by name.
    let template = |name: &str| AclTemplate {
        id: Uuid::new_v4(),
        name: name.to_owned(),
        description: String::new(),
        acl: Acl::ADMIN,
        create_time: T0,
        update_time: T0,
    };
    let b = store.acl_template_add(&template("b")).await.unwrap();
    store.acl_template_add(&template("a")).await.unwrap();
    assert_eq!(
        store.acl_template_add(&template("b")).await.unwrap_err(),
        StoreError::AclTemplateTaken
    );
    let renamed = AclTemplate {
        name: "a".into(),
        ..b.clone()
    };
    assert_eq!(
        store.acl_template_update(&renamed).await.unwrap_err(),
        StoreError::AclTemplateTaken
    );
    let renamed = AclTemplate {
        name: "c".into(),
        acl: Acl::NONE,
        update_time: T0 + 1,
        ..b.clone()
    };
    let updated = store.acl_template_update(&renamed).await.unwrap().unwrap();
    assert_eq!(updated, renamed);
    assert!(
        store
            .acl_template_update(&template("z"))
            .await
            .unwrap()
            .is_none()
    );
    let names: Vec<String> = store
        .acl_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert!(store.acl_template_delete(b.id).await.unwrap());
    assert!(!store.acl_template_delete(b.id).await.unwrap());

    // Settings: Nakama's one, changed in place; unknown names are none.
    let all = store.console_settings(&[]).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].name.as_str(), all[0].value.as_str()),
        ("utc_toggle", "false")
    );
    let set = store
        .console_setting_set("utc_toggle", "true", T0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((set.value.as_str(), set.update_time), ("true", T0));
    assert!(
        store
            .console_setting_set("theme", "1", T0)
            .await
            .unwrap()
            .is_none()
    );
    let some = store
        .console_settings(&["theme".into(), "utc_toggle".into()])
        .await
        .unwrap();
    assert_eq!(some, [set]);
}
