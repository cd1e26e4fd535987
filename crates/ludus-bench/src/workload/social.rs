//! The `social` workload: reads of the social graph at the sizes a big game
//! reaches. Before the clock starts it seeds (once per `--tag`; a later run
//! with the same tag reuses the data) a hub user with `--friends` mutual
//! friends, an open group with `--members` members, and `--groups` groups
//! named `social-<tag>-g<i>`. The measured requests are then, by `--op`:
//!
//! - `friends`: `GET /v2/friend?limit=1000`, the hub's whole friend list;
//! - `members`: `GET /v2/group/{id}/user?limit=100`, paging through the big
//!   group's members with the cursor each page returns;
//! - `search`: `GET /v2/group?name=social-<tag>-g<k>%&limit=100`, a prefix
//!   search over the groups (k cycles through 1-9).
//!
//! Every request is Nakama's REST API, so the same run measures Nakama.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::Conn;
use crate::options::{Options, Seeded, SocialOp};

/// One measured request.
pub(crate) struct Request {
    pub method: &'static str,
    pub path: String,
}

/// The `n`th request of a virtual user for `op`; `cursor` is where the
/// member listing goes on.
pub(crate) fn request(seed: &Seeded, op: SocialOp, n: u64, cursor: &str) -> Request {
    let path = match op {
        SocialOp::Friends => "/v2/friend?limit=1000".to_owned(),
        SocialOp::Members if cursor.is_empty() => {
            format!("/v2/group/{}/user?limit=100", seed.group_id)
        }
        SocialOp::Members => format!(
            "/v2/group/{}/user?limit=100&cursor={}",
            seed.group_id,
            encode(cursor)
        ),
        SocialOp::Search => format!(
            "/v2/group?name={}g{}%25&limit=100",
            encode(&seed.prefix),
            n % 9 + 1
        ),
    };
    Request {
        method: "GET",
        path,
    }
}

/// The cursor of a listing's reply; empty at the end.
pub(crate) fn next_cursor(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["cursor"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Signs in (creating) the device `id`; answers the bearer and the user id.
async fn sign_in(conn: &mut Conn, opts: &Options, id: &str) -> Result<(String, String), String> {
    let auth = crate::http::basic(&opts.server_key);
    let body = format!(r#"{{"id":"{id}"}}"#);
    let r = conn
        .request(
            "POST",
            "/v2/account/authenticate/device",
            Some(&auth),
            body.as_bytes(),
        )
        .await
        .map_err(|e| format!("signing in {id}: {e}"))?;
    if r.status != 200 {
        return Err(format!(
            "signing in {id}: status {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    let token = v["token"].as_str().unwrap_or_default();
    let bearer = format!("Bearer {token}");
    let user = crate::http::token_user_id(&bearer);
    Ok((bearer, user))
}

/// One request during seeding; any status but 200 is a failure.
async fn call(
    conn: &mut Conn,
    method: &str,
    path: &str,
    bearer: &str,
    body: &str,
) -> Result<Vec<u8>, String> {
    let r = conn
        .request(method, path, Some(bearer), body.as_bytes())
        .await
        .map_err(|e| format!("{method} {path}: {e}"))?;
    if r.status != 200 {
        return Err(format!(
            "{method} {path}: status {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        ));
    }
    Ok(r.body)
}

/// Seeds the data of `--tag` unless it is there already.
pub async fn seed(opts: &Options) -> Result<Seeded, String> {
    let tag = &opts.tag;
    let prefix = format!("social-{tag}-");
    let mut conn = Conn::new(opts.target(0), Some(opts.source(0)), opts.timeout);
    let (hub, hub_id) = sign_in(&mut conn, opts, &format!("{prefix}hub")).await?;
    let big = format!("{prefix}big");
    let found = call(
        &mut conn,
        "GET",
        &format!("/v2/group?name={}&limit=1", encode(&big)),
        &hub,
        "",
    )
    .await?;
    let existing = serde_json::from_slice::<serde_json::Value>(&found)
        .ok()
        .and_then(|v| v["groups"][0]["id"].as_str().map(str::to_owned));
    if let Some(group_id) = existing {
        if !opts.quiet {
            eprintln!("reusing the social data of --tag {tag}");
        }
        return Ok(Seeded {
            hub,
            group_id,
            prefix,
        });
    }
    if !opts.quiet {
        eprintln!(
            "seeding --tag {tag}: {} friends, a group of {} members, {} groups…",
            opts.friends, opts.members, opts.groups
        );
    }
    let group = format!(
        r#"{{"name":"{big}","description":"ludus bench","open":true,"max_count":{}}}"#,
        opts.members + 1
    );
    let created = call(&mut conn, "POST", "/v2/group", &hub, &group).await?;
    let group_id = serde_json::from_slice::<serde_json::Value>(&created)
        .ok()
        .and_then(|v| v["id"].as_str().map(str::to_owned))
        .ok_or("creating the big group: no id in the reply")?;
    let seed = Seeded {
        hub: hub.clone(),
        group_id,
        prefix,
    };

    // Users: each signs in, invites the hub (the first --friends), joins
    // the big group (the first --members).
    let users = opts.friends.max(opts.members) as u64;
    let next = Arc::new(AtomicU64::new(0));
    let friends = Arc::new(std::sync::Mutex::new(Vec::new()));
    let workers = opts.concurrency.clamp(1, 64);
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (next, friends, seed, opts) = (
            next.clone(),
            friends.clone(),
            seed.clone(),
            Arc::new(opts.clone()),
        );
        let hub_id = hub_id.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(opts.target(w), Some(opts.source(w)), opts.timeout);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= users {
                    return Ok::<(), String>(());
                }
                let (bearer, id) =
                    sign_in(&mut conn, &opts, &format!("{}u{i}", seed.prefix)).await?;
                if (i as usize) < opts.friends {
                    let path = format!("/v2/friend?ids={hub_id}");
                    call(&mut conn, "POST", &path, &bearer, "").await?;
                    friends.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                }
                if (i as usize) < opts.members {
                    let path = format!("/v2/group/{}/join", seed.group_id);
                    call(&mut conn, "POST", &path, &bearer, "").await?;
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    // The hub accepts every invite, 50 at a time, on a new connection with
    // a new session: seeding may outlast the server's idle keep-alive and
    // the token's expiry (Nakama's default is 60 s).
    let mut conn = Conn::new(opts.target(0), Some(opts.source(0)), opts.timeout);
    let (hub, _) = sign_in(&mut conn, opts, &format!("{}hub", seed.prefix)).await?;
    let invited = std::mem::take(&mut *friends.lock().unwrap_or_else(|e| e.into_inner()));
    for chunk in invited.chunks(50) {
        let ids: Vec<String> = chunk.iter().map(|id| format!("ids={id}")).collect();
        let path = format!("/v2/friend?{}", ids.join("&"));
        call(&mut conn, "POST", &path, &hub, "").await?;
    }

    // Groups to search: each worker creates its share as its own user.
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (next, seed, opts) = (next.clone(), seed.clone(), Arc::new(opts.clone()));
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(opts.target(w), Some(opts.source(w)), opts.timeout);
            let owner = format!("{}owner{w}", seed.prefix);
            let (mut bearer, _) = sign_in(&mut conn, &opts, &owner).await?;
            let mut created = 0u64;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= opts.groups as u64 {
                    return Ok::<(), String>(());
                }
                // A new session now and then: sessions expire (Nakama's
                // and Ludus's default is 60 s) and seeding takes longer.
                created += 1;
                if created.is_multiple_of(500) {
                    bearer = sign_in(&mut conn, &opts, &owner).await?.0;
                }
                let body = format!(
                    r#"{{"name":"{}g{i}","description":"ludus bench","lang_tag":"en","open":true}}"#,
                    seed.prefix
                );
                call(&mut conn, "POST", "/v2/group", &bearer, &body).await?;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    // A fresh session for the measured requests, for the same reason.
    let mut conn = Conn::new(opts.target(0), Some(opts.source(0)), opts.timeout);
    let (hub, _) = sign_in(&mut conn, opts, &format!("{}hub", seed.prefix)).await?;
    Ok(Seeded { hub, ..seed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded() -> Seeded {
        Seeded {
            hub: "Bearer h".into(),
            group_id: "g-1".into(),
            prefix: "social-t-".into(),
        }
    }

    #[test]
    fn requests_follow_the_op() {
        let s = seeded();
        assert_eq!(
            request(&s, SocialOp::Friends, 0, "").path,
            "/v2/friend?limit=1000"
        );
        assert_eq!(
            request(&s, SocialOp::Members, 0, "").path,
            "/v2/group/g-1/user?limit=100"
        );
        assert_eq!(
            request(&s, SocialOp::Members, 1, "a+b/c=").path,
            "/v2/group/g-1/user?limit=100&cursor=a%2Bb%2Fc%3D"
        );
        assert_eq!(
            request(&s, SocialOp::Search, 0, "").path,
            "/v2/group?name=social-t-g1%25&limit=100"
        );
        assert_eq!(
            request(&s, SocialOp::Search, 8, "").path,
            "/v2/group?name=social-t-g9%25&limit=100"
        );
    }

    #[test]
    fn the_cursor_comes_from_the_reply() {
        assert_eq!(next_cursor(br#"{"group_users":[],"cursor":"abc"}"#), "abc");
        assert_eq!(next_cursor(br#"{"group_users":[]}"#), "");
        assert_eq!(next_cursor(b"not json"), "");
    }
}
