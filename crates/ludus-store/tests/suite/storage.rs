//! Storage objects through `StorageService`: versions, the permission
//! matrix (owner, other user, server) for read, list, write and delete,
//! batches that are all or nothing, listing cursors, the race of many
//! writers naming one version, and bad input that writes nothing.

use std::sync::Arc;

use ludus_core::Code;
use ludus_core::storage::{
    Access, ObjectId, ReadPermission, SYSTEM_USER_ID, StorageDelete, StorageWrite, WritePermission,
    version_of,
};
use ludus_core::storage_service::{StorageLimits, StorageService};
use ludus_core::{ApiError, Store};
use uuid::Uuid;

use super::{Backend, device, new_user};

const VERSION_REJECTED: &str = "storage write rejected - version check failed";
const PERMISSION_REJECTED: &str = "storage write rejected - permission denied";

pub(crate) fn service(store: &Arc<dyn Store>) -> StorageService {
    StorageService::new(store.clone(), StorageLimits::default())
}

pub(crate) async fn user(store: &Arc<dyn Store>, name: &str) -> Uuid {
    let u = new_user(name, device(&format!("{name}-storage-device")));
    store.create_user(u.clone()).await.unwrap();
    u.id
}

fn id(collection: &str, key: &str, owner: Uuid) -> ObjectId {
    ObjectId::new(collection, key, owner).unwrap()
}

fn write(
    collection: &str,
    key: &str,
    owner: Uuid,
    value: &str,
    version: &str,
    read: ReadPermission,
    write: WritePermission,
) -> StorageWrite {
    StorageWrite::new(
        id(collection, key, owner),
        value.into(),
        version,
        read,
        write,
    )
    .unwrap()
}

fn owner_write(
    collection: &str,
    key: &str,
    owner: Uuid,
    value: &str,
    version: &str,
) -> StorageWrite {
    write(
        collection,
        key,
        owner,
        value,
        version,
        ReadPermission::OwnerRead,
        WritePermission::OwnerWrite,
    )
}

fn rejected(e: ApiError, message: &str) {
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert_eq!(e.message, message);
}

fn values(objects: &[ludus_core::storage::StorageObject]) -> Vec<serde_json::Value> {
    objects
        .iter()
        .map(|o| serde_json::from_str(&o.value).unwrap())
        .collect()
}

pub(crate) async fn writes_read_back_with_md5_versions<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let value = r#"{"hp": 10, "items": ["sword"]}"#;
    let acks = svc
        .write(
            Access::User(ann),
            vec![
                owner_write("saves", "slot1", ann, value, ""),
                owner_write("saves", "slot2", ann, "{}", "*"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(acks.len(), 2);
    assert_eq!(acks[0].key, "slot1");
    assert_eq!(acks[0].version, version_of(value));
    assert_eq!(acks[0].user_id, ann);
    assert!(acks[0].create_time > 0 && acks[0].update_time >= acks[0].create_time);
    assert_eq!(acks[1].key, "slot2");

    let read = svc
        .read(
            Access::User(ann),
            vec![id("saves", "slot1", ann), id("saves", "missing", ann)],
        )
        .await
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].version, version_of(value));
    assert_eq!(read[0].read, ReadPermission::OwnerRead);
    assert_eq!(
        values(&read),
        vec![serde_json::json!({"hp": 10, "items": ["sword"]})]
    );

    // Writing again with the stored version replaces the value.
    let acks = svc
        .write(
            Access::User(ann),
            vec![owner_write(
                "saves",
                "slot1",
                ann,
                r#"{"hp":9}"#,
                &version_of(value),
            )],
        )
        .await
        .unwrap();
    assert_eq!(acks[0].version, version_of(r#"{"hp":9}"#));
}

pub(crate) async fn version_conditions_fail_the_whole_batch<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    svc.write(
        Access::User(ann),
        vec![owner_write("c", "a", ann, r#"{"v":1}"#, "")],
    )
    .await
    .unwrap();
    // "*" on an existing object fails, and takes the new object with it.
    let e = svc
        .write(
            Access::User(ann),
            vec![
                owner_write("c", "fresh", ann, r#"{"v":1}"#, ""),
                owner_write("c", "a", ann, r#"{"v":2}"#, "*"),
            ],
        )
        .await
        .unwrap_err();
    rejected(e, VERSION_REJECTED);
    // A version that is not the stored one fails; so does one for a missing object.
    let e = svc
        .write(
            Access::User(ann),
            vec![owner_write("c", "a", ann, r#"{"v":2}"#, "not-the-version")],
        )
        .await
        .unwrap_err();
    rejected(e, VERSION_REJECTED);
    let e = svc
        .write(
            Access::Server,
            vec![owner_write("c", "nothing", ann, "{}", &version_of("{}"))],
        )
        .await
        .unwrap_err();
    rejected(e, VERSION_REJECTED);
    let all = svc
        .read(
            Access::Server,
            vec![
                id("c", "a", ann),
                id("c", "fresh", ann),
                id("c", "nothing", ann),
            ],
        )
        .await
        .unwrap();
    assert_eq!(values(&all), vec![serde_json::json!({"v": 1})]);
}

pub(crate) async fn permission_matrix_for_owner_other_user_and_server<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let perms = [
        ("none", ReadPermission::NoRead, WritePermission::NoWrite),
        (
            "owner",
            ReadPermission::OwnerRead,
            WritePermission::OwnerWrite,
        ),
        (
            "public",
            ReadPermission::PublicRead,
            WritePermission::OwnerWrite,
        ),
    ];
    // The server writes objects a user could not (write permission 0 included).
    let writes = perms
        .iter()
        .map(|(key, r, w)| write("m", key, ann, r#"{"x":1}"#, "", *r, *w))
        .collect();
    svc.write(Access::Server, writes).await.unwrap();
    let ids: Vec<_> = perms.iter().map(|(k, _, _)| id("m", k, ann)).collect();
    let keys = |objects: Vec<ludus_core::storage::StorageObject>| {
        let mut k: Vec<String> = objects.into_iter().map(|o| o.key).collect();
        k.sort();
        k
    };

    // Read.
    assert_eq!(
        keys(svc.read(Access::User(ann), ids.clone()).await.unwrap()),
        ["owner", "public"]
    );
    assert_eq!(
        keys(svc.read(Access::User(bob), ids.clone()).await.unwrap()),
        ["public"]
    );
    assert_eq!(
        keys(svc.read(Access::Server, ids.clone()).await.unwrap()),
        ["none", "owner", "public"]
    );

    // List: one's own, another's, the whole collection.
    let list = |access, owner| {
        let svc = &svc;
        async move { keys(svc.list(access, "m", owner, 10, "").await.unwrap().objects) }
    };
    assert_eq!(
        list(Access::User(ann), Some(ann)).await,
        ["owner", "public"]
    );
    assert_eq!(list(Access::User(bob), Some(ann)).await, ["public"]);
    assert_eq!(list(Access::User(bob), None).await, ["public"]);
    assert_eq!(
        list(Access::Server, Some(ann)).await,
        ["none", "owner", "public"]
    );
    assert_eq!(
        list(Access::Server, None).await,
        ["none", "owner", "public"]
    );

    // Write: the owner may change what is writable; nobody else may.
    let e = svc
        .write(
            Access::User(ann),
            vec![owner_write("m", "none", ann, r#"{"x":2}"#, "")],
        )
        .await
        .unwrap_err();
    rejected(e, PERMISSION_REJECTED);
    svc.write(
        Access::User(ann),
        vec![owner_write("m", "owner", ann, r#"{"x":2}"#, "")],
    )
    .await
    .unwrap();
    let e = svc
        .write(
            Access::User(bob),
            vec![owner_write("m", "public", ann, r#"{"x":2}"#, "")],
        )
        .await
        .unwrap_err();
    rejected(e, PERMISSION_REJECTED);
    svc.write(
        Access::Server,
        vec![write(
            "m",
            "none",
            ann,
            r#"{"x":3}"#,
            "",
            ReadPermission::NoRead,
            WritePermission::NoWrite,
        )],
    )
    .await
    .unwrap();

    // Delete: the same rules.
    let del = |key: &str| vec![StorageDelete::new(id("m", key, ann), "")];
    let delete_rejected =
        "storage delete rejected - not found, version check failed, or permission denied";
    rejected(
        svc.delete(Access::User(bob), del("public"))
            .await
            .unwrap_err(),
        delete_rejected,
    );
    rejected(
        svc.delete(Access::User(ann), del("none"))
            .await
            .unwrap_err(),
        delete_rejected,
    );
    svc.delete(Access::User(ann), del("public")).await.unwrap();
    svc.delete(Access::Server, del("none")).await.unwrap();
    // The server deleting what is not there is no error; a user doing so is.
    svc.delete(Access::Server, del("none")).await.unwrap();
    rejected(
        svc.delete(Access::User(ann), del("public"))
            .await
            .unwrap_err(),
        delete_rejected,
    );
    assert_eq!(
        keys(svc.read(Access::Server, ids).await.unwrap()),
        ["owner"]
    );
}

pub(crate) async fn conditional_deletes_and_cascade_with_the_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    svc.write(
        Access::User(ann),
        vec![
            owner_write("c", "a", ann, r#"{"a":1}"#, ""),
            owner_write("c", "b", ann, r#"{"b":1}"#, ""),
        ],
    )
    .await
    .unwrap();
    // A wrong version fails the batch: "a" stays although its own delete was fine.
    let e = svc
        .delete(
            Access::User(ann),
            vec![
                StorageDelete::new(id("c", "a", ann), ""),
                StorageDelete::new(id("c", "b", ann), "wrong"),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert_eq!(
        svc.list(Access::Server, "c", None, 10, "")
            .await
            .unwrap()
            .objects
            .len(),
        2
    );
    svc.delete(
        Access::User(ann),
        vec![StorageDelete::new(
            id("c", "b", ann),
            &version_of(r#"{"b":1}"#),
        )],
    )
    .await
    .unwrap();
    assert!(store.delete_user(ann).await.unwrap());
    assert!(
        svc.list(Access::Server, "c", None, 10, "")
            .await
            .unwrap()
            .objects
            .is_empty()
    );
}

/// The keys of the `profile` objects `viewer` lists as another user.
async fn public_keys(svc: &StorageService, viewer: Uuid) -> Vec<String> {
    let page = svc
        .list(Access::User(viewer), "profile", None, 100, "")
        .await
        .unwrap();
    page.objects.into_iter().map(|o| o.key).collect()
}

/// A write over a stored object keeps its creation time, takes a new
/// update time, and moves it between listings when, and only when, its
/// read permission changes.
pub(crate) async fn rewrites_keep_creation_time_and_move_between_listings<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let first = svc
        .write(
            Access::User(ann),
            vec![owner_write("profile", "card", ann, r#"{"v":1}"#, "")],
        )
        .await
        .unwrap()
        .remove(0);
    assert_eq!(first.create_time, first.update_time);
    assert!(public_keys(&svc, bob).await.is_empty());
    // Times are whole seconds: let one pass, so a rewrite that made its
    // creation time anew would show.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    let steps = [
        // read permission changed: now public
        (
            r#"{"v":2}"#,
            ReadPermission::PublicRead,
            WritePermission::OwnerWrite,
            Access::User(ann),
        ),
        // same read permission, new value and write permission
        (
            r#"{"v":3}"#,
            ReadPermission::PublicRead,
            WritePermission::NoWrite,
            Access::Server,
        ),
        // private again
        (
            r#"{"v":4}"#,
            ReadPermission::OwnerRead,
            WritePermission::OwnerWrite,
            Access::Server,
        ),
    ];
    for (value, read, write_perm, access) in steps {
        let ack = svc
            .write(
                access,
                vec![write("profile", "card", ann, value, "", read, write_perm)],
            )
            .await
            .unwrap()
            .remove(0);
        assert_eq!(ack.create_time, first.create_time, "{value}");
        assert!(ack.update_time > first.create_time, "{value}");
        assert_eq!(ack.version, version_of(value));
        let stored = svc
            .read(Access::Server, vec![id("profile", "card", ann)])
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            (stored.version.as_str(), stored.read, stored.write),
            (ack.version.as_str(), read, write_perm),
            "{value}"
        );
        assert_eq!(
            (stored.create_time, stored.update_time),
            (ack.create_time, ack.update_time)
        );
        let listed = public_keys(&svc, bob).await;
        let expected: Vec<String> = match read {
            ReadPermission::PublicRead => vec!["card".into()],
            _ => vec![],
        };
        assert_eq!(listed, expected, "{value}");
        let own = svc
            .list(Access::User(ann), "profile", Some(ann), 100, "")
            .await
            .unwrap();
        assert_eq!(own.objects.len(), 1, "{value}");
        assert_eq!(own.objects[0].version, ack.version, "{value}");
    }
}

pub(crate) async fn listing_pages_with_cursors_bound_to_their_listing<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let mut writes = Vec::new();
    for (owner, name) in [(ann, "ann"), (bob, "bob")] {
        for i in 0..5 {
            writes.push(write(
                "board",
                &format!("{name}-{i}"),
                owner,
                "{}",
                "",
                ReadPermission::PublicRead,
                WritePermission::OwnerWrite,
            ));
        }
    }
    writes.push(owner_write("board", "ann-private", ann, "{}", ""));
    svc.write(Access::Server, writes).await.unwrap();

    // Ten public objects, pages of four: 4 + 4 + 2, in key order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    let mut pages = 0;
    loop {
        let page = svc
            .list(Access::User(bob), "board", None, 4, &cursor)
            .await
            .unwrap();
        pages += 1;
        seen.extend(page.objects.into_iter().map(|o| o.key));
        match page.cursor {
            Some(c) => cursor = c,
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut expected: Vec<String> = (0..5)
        .flat_map(|i| [format!("ann-{i}"), format!("bob-{i}")])
        .collect();
    expected.sort();
    assert_eq!(seen, expected);

    // Ann's own listing sees her private object, ordered by permission first.
    let own = svc
        .list(Access::User(ann), "board", Some(ann), 100, "")
        .await
        .unwrap();
    assert_eq!(own.objects.len(), 6);
    assert_eq!(own.objects[0].key, "ann-private");
    assert!(own.cursor.is_none());

    // A cursor is refused by any other listing.
    let page = svc
        .list(Access::User(bob), "board", None, 2, "")
        .await
        .unwrap();
    let cursor = page.cursor.unwrap();
    for (collection, owner) in [("other", None), ("board", Some(ann))] {
        let e = svc
            .list(Access::User(bob), collection, owner, 2, &cursor)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument, "{collection}");
    }
    let e = svc
        .list(Access::User(bob), "board", None, 2, "garbage!")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(
        svc.list(Access::User(bob), "board", None, 0, "")
            .await
            .unwrap()
            .objects
            .is_empty()
    );
}

pub(crate) async fn server_objects_belong_to_the_system_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    svc.write(
        Access::Server,
        vec![write(
            "config",
            "motd",
            SYSTEM_USER_ID,
            r#"{"text":"hi"}"#,
            "",
            ReadPermission::PublicRead,
            WritePermission::NoWrite,
        )],
    )
    .await
    .unwrap();
    let read = svc
        .read(
            Access::User(ann),
            vec![id("config", "motd", SYSTEM_USER_ID)],
        )
        .await
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].user_id, SYSTEM_USER_ID);
    // The system user is a row, but not one anybody can sign in as.
    let auth = store.find_user_auth(SYSTEM_USER_ID).await.unwrap().unwrap();
    assert_eq!(auth.username, "");
    assert!(auth.password_hash.is_none());
}

pub(crate) async fn bad_input_writes_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = StorageService::new(store.clone(), StorageLimits { max_batch: 3 });
    let ann = user(&store, "ann").await;
    let good = || owner_write("c", "good", ann, "{}", "");
    // Values that are not JSON objects never become writes.
    for bad in ["[1]", "{", "42", "", "\"text\""] {
        let e = StorageWrite::new(
            id("c", "bad", ann),
            bad.into(),
            "",
            ReadPermission::OwnerRead,
            WritePermission::OwnerWrite,
        )
        .unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument, "{bad}");
    }
    assert!(ObjectId::new("", "k", ann).is_err());
    assert!(ObjectId::new("c", &"k".repeat(129), ann).is_err());
    assert!(ReadPermission::parse(Some(3)).is_err());
    assert!(WritePermission::parse(Some(2)).is_err());
    // Too many objects at once.
    let e = svc
        .write(
            Access::User(ann),
            (0..4)
                .map(|i| owner_write("c", &format!("k{i}"), ann, "{}", ""))
                .collect(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    // An unknown owner fails the batch it is in.
    let e = svc
        .write(
            Access::Server,
            vec![good(), owner_write("c", "ghost", Uuid::new_v4(), "{}", "")],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound, "{e:?}");
    // Alone too (PostgreSQL writes one object as one statement).
    let e = svc
        .write(
            Access::Server,
            vec![owner_write("c", "ghost", Uuid::new_v4(), "{}", "")],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound, "{e:?}");
    assert!(
        svc.list(Access::Server, "c", None, 10, "")
            .await
            .unwrap()
            .objects
            .is_empty()
    );
}

pub(crate) async fn concurrent_writers_of_one_version_have_one_winner<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let ann = user(&store, "ann").await;
    let first = svc
        .write(
            Access::User(ann),
            vec![owner_write("race", "k", ann, r#"{"n":-1}"#, "")],
        )
        .await
        .unwrap();
    let version = first[0].version.clone();
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let svc = svc.clone();
            let version = version.clone();
            tokio::spawn(async move {
                let value = format!(r#"{{"n":{n}}}"#);
                let w = owner_write("race", "k", ann, &value, &version);
                (n, svc.write(Access::User(ann), vec![w]).await)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (n, result) = t.await.unwrap();
        match result {
            Ok(_) => winners.push(n),
            Err(e) => rejected(e, VERSION_REJECTED),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer wins: {winners:?}");
    let stored = svc
        .read(Access::User(ann), vec![id("race", "k", ann)])
        .await
        .unwrap();
    assert_eq!(
        values(&stored),
        vec![serde_json::json!({ "n": winners[0] })]
    );
}

pub(crate) async fn concurrent_creators_of_one_object_have_one_winner<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let ann = user(&store, "ann").await;
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let svc = svc.clone();
            tokio::spawn(async move {
                let w = owner_write("race", "new", ann, &format!(r#"{{"n":{n}}}"#), "*");
                svc.write(Access::User(ann), vec![w]).await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => wins += 1,
            Err(e) => rejected(e, VERSION_REJECTED),
        }
    }
    assert_eq!(wins, 1);
}

/// Many single-object saves at once (what the PostgreSQL backend writes in
/// batches): every acknowledged write is one its owner made, with the
/// version of its value; each object ends holding one of its writes;
/// writes to an object its owner may no longer write fail alone among the
/// ones that apply.
pub(crate) async fn many_single_writes_at_once<B: Backend>() {
    const USERS: usize = 10;
    const TASKS: usize = 30;
    const EACH: usize = 40;
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let mut users = Vec::new();
    for i in 0..USERS {
        let u = user(&store, &format!("saver{i}")).await;
        // An object its owner cannot write again.
        svc.write(
            Access::User(u),
            vec![write(
                "saves",
                "locked",
                u,
                r#"{"locked":true}"#,
                "",
                ReadPermission::OwnerRead,
                WritePermission::NoWrite,
            )],
        )
        .await
        .unwrap();
        users.push(u);
    }
    let users = Arc::new(users);
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (svc, users) = (svc.clone(), users.clone());
            tokio::spawn(async move {
                let mut refused = 0;
                for n in 0..EACH {
                    let owner = users[(t + n) % USERS];
                    let key = if n % 10 == 9 {
                        "locked".to_owned()
                    } else {
                        format!("slot{}", n % 3)
                    };
                    // Keys in order, so the text is the one read back (as
                    // serde_json writes it) whatever the backend stores.
                    let value = format!(r#"{{"n":{n},"t":{t}}}"#);
                    match svc
                        .write(
                            Access::User(owner),
                            vec![owner_write("saves", &key, owner, &value, "")],
                        )
                        .await
                    {
                        Ok(acks) => {
                            assert_ne!(key, "locked");
                            assert_eq!(
                                (acks[0].user_id, acks[0].key.as_str()),
                                (owner, key.as_str())
                            );
                            assert_eq!(acks[0].version, version_of(&value));
                        }
                        Err(e) => {
                            assert_eq!(key, "locked");
                            rejected(e, PERMISSION_REJECTED);
                            refused += 1;
                        }
                    }
                }
                refused
            })
        })
        .collect();
    let refused = super::total(tasks).await;
    assert_eq!(refused, TASKS * EACH / 10);
    for &owner in users.iter() {
        let ids = ["slot0", "slot1", "slot2", "locked"]
            .map(|k| id("saves", k, owner))
            .to_vec();
        let objects = svc.read(Access::Server, ids).await.unwrap();
        assert_eq!(objects.len(), 4);
        for o in objects {
            let v: serde_json::Value = serde_json::from_str(&o.value).unwrap();
            // The version is the one of the write that won.
            assert_eq!(o.version, version_of(&v.to_string()), "{o:?}");
            if o.key == "locked" {
                assert_eq!(v, serde_json::json!({ "locked": true }));
            } else {
                assert!(v["t"].as_u64().unwrap() < TASKS as u64, "{v}");
            }
        }
    }
}

/// The distinct collection names, in order, a page at a time.
pub(crate) async fn collections_are_listed_in_pages<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let (names, next) = svc.collections("", 10).await.unwrap();
    assert!(names.is_empty() && next.is_none());
    for (collection, key) in [("b", "1"), ("a", "1"), ("b", "2"), ("c", "1")] {
        svc.write(
            Access::Server,
            vec![owner_write(collection, key, ann, "{}", "")],
        )
        .await
        .unwrap();
    }
    let (names, next) = svc.collections("", 2).await.unwrap();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(next.as_deref(), Some("b"));
    let (names, next) = svc.collections("b", 2).await.unwrap();
    assert_eq!(names, ["c"]);
    assert!(next.is_none());
}
