//! The HTTP workloads: `register`, `login`, `rpc`, `storage`, `wallet`,
//! `social` (its seeding and requests in `social.rs`) and `leaderboard`.
//! Each virtual user owns one keep-alive connection and keeps one request in flight (a closed loop),
//! as Nakama's published Tsung runs do.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::http::{Conn, basic, token_user_id};
use crate::options::{LeaderboardOp, Options, StorageOp, Workload};
use crate::stats::Recorder;

/// Counters the progress line reads while the run goes on.
#[derive(Debug, Default)]
pub struct Progress {
    pub ok: AtomicU64,
    pub errors: AtomicU64,
    pub users: AtomicU64,
    /// Socket messages received.
    pub received: AtomicU64,
    /// Fan-out subscribers that have joined their room.
    pub ready: AtomicU64,
}

/// A JSON payload of exactly `size` bytes (at least the envelope's 14).
pub fn payload(size: usize) -> String {
    let filler = size.saturating_sub(r#"{"message":""}"#.len());
    format!(r#"{{"message":"{}"}}"#, "x".repeat(filler))
}

/// What one request of the workload looks like for virtual user `vu`.
struct Plan {
    method: &'static str,
    path: String,
    auth: String,
    body: Vec<u8>,
}

/// Registers `opts.users` devices named `login-<tag>-<i>` before a login run.
pub async fn seed_logins(opts: &Options, tag: &str) -> Result<(), String> {
    let auth = basic(&opts.server_key);
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for vu in 0..opts.concurrency.min(opts.users) {
        let (next, auth, tag) = (next.clone(), auth.clone(), tag.to_owned());
        let (addr, source, timeout, users) = (
            opts.target(vu),
            opts.source(vu),
            opts.timeout,
            opts.users as u64,
        );
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(addr, Some(source), timeout);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= users {
                    return Ok(());
                }
                let body = format!(r#"{{"id":"login-{tag}-{i}"}}"#);
                match conn
                    .request(
                        "POST",
                        "/v2/account/authenticate/device",
                        Some(&auth),
                        body.as_bytes(),
                    )
                    .await
                {
                    Ok(r) if r.status == 200 => {}
                    Ok(r) => {
                        return Err(format!(
                            "seeding login devices: status {}: {}",
                            r.status,
                            String::from_utf8_lossy(&r.body)
                        ));
                    }
                    Err(e) => return Err(format!("seeding login devices: {e}")),
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// Runs the workload's virtual users until the deadline; returns their merged record.
pub async fn run(
    opts: Arc<Options>,
    tag: String,
    progress: Arc<Progress>,
    start: Instant,
) -> (Recorder, u64, u64) {
    let mut tasks = Vec::with_capacity(opts.concurrency);
    for vu in 0..opts.concurrency {
        let (opts, tag, progress) = (opts.clone(), tag.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            virtual_user(vu, &opts, &tag, &progress, start).await
        }));
    }
    let mut total = Recorder::default();
    let (mut bytes_in, mut bytes_out) = (0, 0);
    for t in tasks {
        if let Ok((rec, bi, bo)) = t.await {
            total.merge(&rec);
            bytes_in += bi;
            bytes_out += bo;
        }
    }
    (total, bytes_in, bytes_out)
}

async fn virtual_user(
    vu: usize,
    opts: &Options,
    tag: &str,
    progress: &Progress,
    start: Instant,
) -> (Recorder, u64, u64) {
    let mut rec = Recorder::default();
    let deadline = start + opts.duration;
    if !opts.ramp.is_zero() {
        let delay = opts.ramp.mul_f64(vu as f64 / opts.concurrency as f64);
        tokio::time::sleep_until((start + delay).into()).await;
    }
    let mut conn = Conn::new(opts.target(vu), Some(opts.source(vu)), opts.timeout);
    let key_auth = basic(&opts.server_key);
    // Workloads with a session sign in once, outside the measurement.
    let signed_in = matches!(
        opts.workload,
        Workload::Rpc | Workload::Storage | Workload::Wallet | Workload::Leaderboard
    );
    let bearer = if signed_in {
        let body = format!(r#"{{"id":"rpc-{tag}-{vu:06}"}}"#);
        match conn
            .request(
                "POST",
                "/v2/account/authenticate/device",
                Some(&key_auth),
                body.as_bytes(),
            )
            .await
        {
            Ok(r) if r.status == 200 => {
                let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
                format!("Bearer {}", v["token"].as_str().unwrap_or_default())
            }
            Ok(r) => {
                rec.error(second_of(start), &format!("sign-in status {}", r.status));
                progress.errors.fetch_add(1, Ordering::Relaxed);
                return (rec, conn.bytes_in, conn.bytes_out);
            }
            Err(e) => {
                rec.error(second_of(start), &format!("sign-in {}", e.kind()));
                progress.errors.fetch_add(1, Ordering::Relaxed);
                return (rec, conn.bytes_in, conn.bytes_out);
            }
        }
    } else {
        String::new()
    };
    let bearer = match &opts.social {
        Some(seed) => seed.hub.clone(),
        None => bearer,
    };
    let mut cursor = String::new();
    let rpc_body = serde_json::to_vec(&payload(opts.payload_size)).unwrap_or_default();
    let user_id = token_user_id(&bearer);
    // Records around the user's own need one, and reading or listing
    // storage objects needs them written: done before the clock runs.
    let first_write = match opts.workload {
        Workload::Leaderboard if opts.leaderboard_op == LeaderboardOp::Around => {
            Some(leaderboard_write(opts, vu, u64::MAX, &bearer))
        }
        Workload::Storage if matches!(opts.storage_op, StorageOp::Read | StorageOp::List) => {
            Some(storage_step(StorageOp::Write, vu, 0, &user_id, &bearer))
        }
        _ => None,
    };
    if let Some(plan) = first_write {
        match conn
            .request(plan.method, &plan.path, Some(&plan.auth), &plan.body)
            .await
        {
            Ok(r) if r.status == 200 => {}
            Ok(r) => {
                rec.error(
                    second_of(start),
                    &format!("first write status {}", r.status),
                );
                progress.errors.fetch_add(1, Ordering::Relaxed);
                return (rec, conn.bytes_in, conn.bytes_out);
            }
            Err(e) => {
                rec.error(second_of(start), &format!("first write {}", e.kind()));
                progress.errors.fetch_add(1, Ordering::Relaxed);
                return (rec, conn.bytes_in, conn.bytes_out);
            }
        }
    }
    progress.users.fetch_add(1, Ordering::Relaxed);
    let mut n: u64 = 0;
    let last_second = (opts.duration.as_secs() as usize).saturating_sub(1);
    while Instant::now() < deadline {
        let plan = match opts.workload {
            Workload::Register => Plan {
                method: "POST",
                path: "/v2/account/authenticate/device".into(),
                auth: key_auth.clone(),
                body: format!(r#"{{"id":"reg-{tag}-{vu}-{n}"}}"#).into_bytes(),
            },
            Workload::Login => {
                let i = (vu as u64 * 7919 + n) % opts.users as u64;
                Plan {
                    method: "POST",
                    path: "/v2/account/authenticate/device?create=false".into(),
                    auth: key_auth.clone(),
                    body: format!(r#"{{"id":"login-{tag}-{i}"}}"#).into_bytes(),
                }
            }
            Workload::Storage => storage_step(opts.storage_op, vu, n, &user_id, &bearer),
            Workload::Social => {
                let seed = opts.social.as_ref().expect("seeded before the run");
                let r = super::social::request(seed, opts.social_op, n, &cursor);
                Plan {
                    method: r.method,
                    path: r.path,
                    auth: bearer.clone(),
                    body: Vec::new(),
                }
            }
            Workload::Leaderboard => match opts.leaderboard_op {
                LeaderboardOp::Write => leaderboard_write(opts, vu, n, &bearer),
                LeaderboardOp::Top => Plan {
                    method: "GET",
                    path: format!("/v2/leaderboard/{}?limit=100", opts.leaderboard_id),
                    auth: bearer.clone(),
                    body: Vec::new(),
                },
                LeaderboardOp::Around => Plan {
                    method: "GET",
                    path: format!(
                        "/v2/leaderboard/{}/owner/{user_id}?limit=100",
                        opts.leaderboard_id
                    ),
                    auth: bearer.clone(),
                    body: Vec::new(),
                },
            },
            Workload::Wallet => Plan {
                method: "POST",
                path: "/v2/rpc/ludus_bench_wallet".into(),
                auth: bearer.clone(),
                body: b"\"{}\"".to_vec(),
            },
            _ => Plan {
                method: "POST",
                path: format!("/v2/rpc/{}", opts.rpc_id),
                auth: bearer.clone(),
                body: rpc_body.clone(),
            },
        };
        n += 1;
        let t0 = Instant::now();
        let result = conn
            .request(plan.method, &plan.path, Some(&plan.auth), &plan.body)
            .await;
        let now = Instant::now();
        // A request sent before the deadline and answered after it counts in the last second.
        let second = (now.duration_since(start).as_secs() as usize).min(last_second);
        match result {
            Ok(r) if r.status == 200 => {
                rec.ok(second, now.duration_since(t0).as_micros() as u64);
                progress.ok.fetch_add(1, Ordering::Relaxed);
                if opts.workload == Workload::Social
                    && opts.social_op == crate::options::SocialOp::Members
                {
                    cursor = super::social::next_cursor(&r.body);
                }
            }
            Ok(r) => {
                rec.error(second, &format!("status {}", r.status));
                progress.errors.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                rec.error(second, e.kind());
                progress.errors.fetch_add(1, Ordering::Relaxed);
                // A refused connection fails at once; don't spin on it.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    progress.users.fetch_sub(1, Ordering::Relaxed);
    // Busy users per second, for the chart: this user was active throughout.
    let last = opts.duration.as_secs() as usize;
    let first = if opts.ramp.is_zero() {
        0
    } else {
        opts.ramp
            .mul_f64(vu as f64 / opts.concurrency as f64)
            .as_secs() as usize
    };
    for s in first..last {
        rec.second(s).users += 1;
    }
    (rec, conn.bytes_in, conn.bytes_out)
}

/// A write of a pseudo-random score in `0..=score_max` (SplitMix64 of the
/// user and request number: no shared generator, same sequence every run).
fn leaderboard_write(opts: &Options, vu: usize, n: u64, bearer: &str) -> Plan {
    let mut x = (vu as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    let score = x % (opts.score_max + 1);
    Plan {
        method: "POST",
        path: format!("/v2/leaderboard/{}", opts.leaderboard_id),
        auth: bearer.to_owned(),
        body: format!(r#"{{"score":"{score}"}}"#).into_bytes(),
    }
}

/// The `storage` workload's `n`th request of virtual user `vu`: write its
/// own object, read it back, list the shared collection, in turn
/// (`StorageOp::Mixed`), or always the one `op` names.
fn storage_step(op: StorageOp, vu: usize, n: u64, user_id: &str, bearer: &str) -> Plan {
    let step = match op {
        StorageOp::Mixed => n % 3,
        StorageOp::Write => 0,
        StorageOp::Read => 1,
        StorageOp::List => 2,
    };
    match step {
        0 => Plan {
            method: "PUT",
            path: "/v2/storage".into(),
            auth: bearer.to_owned(),
            body: format!(
                r#"{{"objects":[{{"collection":"ludus_bench","key":"vu-{vu}","value":"{{\"n\":{n}}}","permission_read":2}}]}}"#
            )
            .into_bytes(),
        },
        1 => Plan {
            method: "POST",
            path: "/v2/storage".into(),
            auth: bearer.to_owned(),
            body: format!(
                r#"{{"object_ids":[{{"collection":"ludus_bench","key":"vu-{vu}","user_id":"{user_id}"}}]}}"#
            )
            .into_bytes(),
        },
        _ => Plan {
            method: "GET",
            path: "/v2/storage/ludus_bench?limit=10".into(),
            auth: bearer.to_owned(),
            body: Vec::new(),
        },
    }
}

fn second_of(start: Instant) -> usize {
    start.elapsed().as_secs() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_steps_write_read_list_in_turn() {
        let bearer = "Bearer x";
        let steps: Vec<_> = (0..4)
            .map(|n| storage_step(StorageOp::Mixed, 3, n, "u-1", bearer))
            .collect();
        assert_eq!(
            steps.iter().map(|p| p.method).collect::<Vec<_>>(),
            ["PUT", "POST", "GET", "PUT"]
        );
        let write: serde_json::Value = serde_json::from_slice(&steps[0].body).unwrap();
        assert_eq!(write["objects"][0]["key"], "vu-3");
        assert_eq!(write["objects"][0]["value"], r#"{"n":0}"#);
        let read: serde_json::Value = serde_json::from_slice(&steps[1].body).unwrap();
        assert_eq!(read["object_ids"][0]["user_id"], "u-1");
    }

    #[test]
    fn a_storage_op_repeats_one_request() {
        let bearer = "Bearer x";
        for (op, method) in [
            (StorageOp::Write, "PUT"),
            (StorageOp::Read, "POST"),
            (StorageOp::List, "GET"),
        ] {
            let steps: Vec<_> = (0..3)
                .map(|n| storage_step(op, 3, n, "u-1", bearer))
                .collect();
            assert!(steps.iter().all(|p| p.method == method), "{op:?}");
        }
        // Each write stores a new value, so no write is a no-op.
        let values: Vec<serde_json::Value> = (0..2)
            .map(|n| {
                let p = storage_step(StorageOp::Write, 3, n, "u-1", bearer);
                serde_json::from_slice::<serde_json::Value>(&p.body).unwrap()["objects"][0]["value"]
                    .clone()
            })
            .collect();
        assert_ne!(values[0], values[1]);
    }

    #[test]
    fn payload_has_the_requested_size() {
        assert_eq!(payload(40).len(), 40);
        assert_eq!(payload(44).len(), 44);
        assert!(serde_json::from_str::<serde_json::Value>(&payload(40)).is_ok());
    }
}
