//! The socket workloads: `ccu`, `echo`, `fanout` and `match`. Each virtual
//! user signs in a device over HTTP, opens one realtime socket
//! (`/ws?token=…&format=json`) and drives it until the deadline; a user whose
//! socket fails counts the error by kind, waits a little and starts again.
//!
//! Messages are the JSON envelopes of Nakama's realtime protocol, written by
//! hand and read by scanning for the few fields a workload needs, so the
//! tool stays lean; only the rare replies (channel and match joins, match
//! data) go through `serde_json`. Timestamps are microseconds since the
//! run's start, shared by every user of the process.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::time::{Instant as TokioInstant, sleep_until, timeout_at};

use crate::http::Conn;
use crate::http::basic;
use crate::options::{Format, Options, Protocol, Workload};
use crate::stats::Recorder;
use crate::workload::centrifugo;
use crate::workload::envelope::{self, Incoming, Writer};
use crate::workload::http::Progress;
use crate::ws::{self, WsConn, WsError};

/// Payload sizes of Nakama's published match workload.
pub const ECHO_PAYLOAD: usize = 44;
pub const BROADCAST_PAYLOAD: usize = 35;
/// How long a user waits before trying again after a failure.
const RETRY: Duration = Duration::from_millis(500);
/// How long fan-out subscribers keep reading after the deadline, so
/// messages published just before it are counted.
const DRAIN: Duration = Duration::from_millis(500);

/// Runs the workload's virtual users until the deadline; returns their
/// merged record and the bytes in and out.
pub async fn run(
    opts: Arc<Options>,
    tag: String,
    progress: Arc<Progress>,
    start: Instant,
) -> (Recorder, u64, u64) {
    let mut tasks = Vec::with_capacity(opts.concurrency);
    let pool = Arc::new(HttpPool::new(opts.targets.len()));
    for i in 0..opts.concurrency {
        let (opts, tag, progress, pool) =
            (opts.clone(), tag.clone(), progress.clone(), pool.clone());
        tasks.push(tokio::spawn(async move {
            let mut vu = Vu::new(i, &opts, &tag, &progress, &pool, start);
            vu.run().await;
            vu.rec
        }));
    }
    let mut total = Recorder::default();
    for t in tasks {
        if let Ok(rec) = t.await {
            total.merge(&rec);
        }
    }
    let bytes_in = total.seconds.iter().map(|s| s.bytes_in).sum();
    let bytes_out = total.seconds.iter().map(|s| s.bytes_out).sum();
    (total, bytes_in, bytes_out)
}

/// Keep-alive HTTP connections shared by the users' sign-ins and RPC
/// calls, one pool per target (a user signs in on the server its socket
/// goes to). One connection per user would leave a TIME_WAIT port behind
/// for every socket (half of one address's ports in a 14,000-socket run,
/// and slow connects as the kernel searches for a free one).
struct HttpPool {
    idle: Vec<std::sync::Mutex<Vec<Conn>>>,
}

/// Idle pooled connections kept at most, over all targets.
const POOL_MAX: usize = 256;

impl HttpPool {
    fn new(targets: usize) -> HttpPool {
        HttpPool {
            idle: (0..targets).map(|_| Default::default()).collect(),
        }
    }

    /// A connection to virtual user `i`'s target.
    fn take(&self, opts: &Options, i: usize) -> Conn {
        let idle = &self.idle[i % self.idle.len()];
        let pooled = idle.lock().ok().and_then(|mut v| v.pop());
        // Never bound to a source address: these are few and short-lived.
        pooled.unwrap_or_else(|| Conn::new(opts.target(i), None, opts.timeout))
    }

    /// Gives back a connection taken for virtual user `i`.
    fn give(&self, conn: Conn, i: usize) {
        if let Ok(mut v) = self.idle[i % self.idle.len()].lock()
            && v.len() < POOL_MAX.div_ceil(self.idle.len())
        {
            v.push(conn);
        }
    }
}

/// Why a session ended without an error.
enum End {
    Deadline,
}

struct Vu<'a> {
    i: usize,
    opts: &'a Options,
    tag: &'a str,
    progress: &'a Progress,
    pool: &'a HttpPool,
    start: Instant,
    deadline: Instant,
    last_second: usize,
    rec: Recorder,
    /// Bytes of the current connection already recorded.
    seen_in: u64,
    seen_out: u64,
    token: Option<String>,
}

impl<'a> Vu<'a> {
    fn new(
        i: usize,
        opts: &'a Options,
        tag: &'a str,
        progress: &'a Progress,
        pool: &'a HttpPool,
        start: Instant,
    ) -> Vu<'a> {
        Vu {
            i,
            opts,
            tag,
            progress,
            pool,
            start,
            deadline: start + opts.duration,
            last_second: (opts.duration.as_secs() as usize).saturating_sub(1),
            rec: Recorder::sparse(),
            seen_in: 0,
            seen_out: 0,
            token: None,
        }
    }

    fn second(&self) -> usize {
        (self.start.elapsed().as_secs() as usize).min(self.last_second)
    }

    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn error(&mut self, kind: &str) {
        let s = self.second();
        self.rec.error(s, kind);
        self.progress.errors.fetch_add(1, Ordering::Relaxed);
    }

    fn ok(&mut self, micros: u64) {
        let s = self.second();
        self.rec.ok(s, micros);
        self.progress.ok.fetch_add(1, Ordering::Relaxed);
    }

    fn sent(&mut self, n: u64) {
        let s = self.second();
        self.rec.second(s).messages_sent += n;
    }

    fn received(&mut self, n: u64) {
        let s = self.second();
        self.rec.second(s).messages_received += n;
        self.progress.received.fetch_add(n, Ordering::Relaxed);
    }

    /// Records the connection's new bytes in the current second.
    fn bytes(&mut self, conn: &WsConn) {
        let s = self.second();
        let sec = self.rec.second(s);
        sec.bytes_in += conn.bytes_in - self.seen_in;
        sec.bytes_out += conn.bytes_out - self.seen_out;
        self.seen_in = conn.bytes_in;
        self.seen_out = conn.bytes_out;
    }

    /// One HTTP request over a pooled keep-alive connection.
    async fn http(
        &mut self,
        path: &str,
        auth: &str,
        body: &[u8],
    ) -> Result<crate::http::Response, crate::http::HttpError> {
        let mut conn = self.pool.take(self.opts, self.i);
        let (before_in, before_out) = (conn.bytes_in, conn.bytes_out);
        let mut r = conn.request("POST", path, Some(auth), body).await;
        // A pooled connection the server closed while it sat idle: once
        // more on a fresh one (the failed one is dropped by `request`).
        if before_out > 0
            && matches!(
                r,
                Err(crate::http::HttpError::Closed | crate::http::HttpError::Io(_))
            )
        {
            r = conn.request("POST", path, Some(auth), body).await;
        }
        let s = self.second();
        let sec = self.rec.second(s);
        sec.bytes_in += conn.bytes_in - before_in;
        sec.bytes_out += conn.bytes_out - before_out;
        if r.is_ok() {
            self.pool.give(conn, self.i);
        }
        r
    }

    /// The socket's source address. With one address the kernel picks the
    /// port at connect time (by the whole address pair, reusing TIME_WAIT
    /// ports on loopback); binding first would take a port per socket from
    /// a single pool, TIME_WAIT ones included.
    fn source(&self) -> Option<std::net::IpAddr> {
        (self.opts.sources.len() > 1).then(|| self.opts.source(self.i))
    }

    /// When this user starts: evenly over `--ramp`, or at `--rate` users/s
    /// for `ccu` without a ramp.
    fn start_at(&self) -> Instant {
        let n = self.opts.concurrency as f64;
        let delay = if !self.opts.ramp.is_zero() {
            self.opts.ramp.mul_f64(self.i as f64 / n)
        } else if self.opts.workload == Workload::Ccu {
            Duration::from_secs_f64(self.i as f64 / self.opts.rate)
        } else {
            Duration::ZERO
        };
        self.start + delay
    }

    async fn run(&mut self) {
        sleep_until(self.start_at().into()).await;
        while Instant::now() < self.deadline {
            let t0 = Instant::now();
            let result = match self.open().await {
                Ok(mut conn) => {
                    let connected_at = self.second();
                    self.progress.users.fetch_add(1, Ordering::Relaxed);
                    if self.opts.workload == Workload::Ccu {
                        self.ok(t0.elapsed().as_micros() as u64);
                    }
                    let r = match self.opts.workload {
                        Workload::Ccu => self.hold(&mut conn).await,
                        Workload::Echo => self.echo(&mut conn).await,
                        Workload::Fanout => self.fanout(&mut conn).await,
                        _ => self.play(&mut conn).await,
                    };
                    self.bytes(&conn);
                    self.progress.users.fetch_sub(1, Ordering::Relaxed);
                    let until = if r.is_ok() {
                        self.last_second + 1
                    } else {
                        self.second()
                    };
                    self.rec.connected(connected_at, until);
                    if r.is_ok() {
                        conn.close().await;
                    }
                    r
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(End::Deadline) => return,
                Err(kind) => {
                    self.error(&kind);
                    let wake = (Instant::now() + RETRY).min(self.deadline);
                    sleep_until(wake.into()).await;
                }
            }
        }
    }

    /// Signs in (once) and opens the socket; for `match`, finds the match first.
    async fn open(&mut self) -> Result<WsConn, String> {
        if self.opts.protocol == Protocol::Centrifugo {
            return self.open_centrifugo().await;
        }
        let token = match &self.token {
            Some(t) => t.clone(),
            None => {
                let t = self.sign_in().await?;
                self.token = Some(t.clone());
                t
            }
        };
        let path = format!(
            "/ws?token={token}&format={}{}",
            self.opts.format.name(),
            if self.opts.status { "&status=true" } else { "" }
        );
        let conn = ws::connect(
            self.opts.target(self.i),
            self.source(),
            &path,
            self.opts.timeout,
        )
        .await
        .map_err(|e| {
            if matches!(e, WsError::Status(401)) {
                // The token may have expired: sign in again next time.
                self.token = None;
            }
            e.kind()
        })?;
        self.seen_in = 0;
        self.seen_out = 0;
        Ok(conn)
    }

    /// Centrifugo: opens the socket and connects anonymously.
    async fn open_centrifugo(&mut self) -> Result<WsConn, String> {
        let mut conn = ws::connect(
            self.opts.target(self.i),
            self.source(),
            centrifugo::PATH,
            self.opts.timeout,
        )
        .await
        .map_err(|e| e.kind())?;
        self.seen_in = 0;
        self.seen_out = 0;
        conn.queue_text(&centrifugo::connect());
        conn.flush().await.map_err(|e| e.kind())?;
        self.sent(1);
        self.centrifugo_reply(&mut conn, centrifugo::CONNECT_ID, "connect")
            .await?;
        Ok(conn)
    }

    /// Centrifugo: waits for the reply to command `id`, answering pings.
    async fn centrifugo_reply(
        &mut self,
        conn: &mut WsConn,
        id: u64,
        what: &str,
    ) -> Result<(), String> {
        let until = Instant::now() + self.opts.timeout;
        loop {
            let Some(m) = self.next(conn, until).await? else {
                return Err(format!("timeout ({what})"));
            };
            let mut pings = 0;
            let mut answer = None;
            for line in centrifugo::read(conn.payload(&m)) {
                pings += usize::from(line.ping);
                if line.id == Some(id) {
                    answer = Some(line.error.map_or(Ok(()), Err));
                }
            }
            pong(conn, pings).await?;
            if let Some(a) = answer {
                return a;
            }
        }
    }

    async fn sign_in(&mut self) -> Result<String, String> {
        let body = format!(
            r#"{{"id":"{}-{}-{:07}"}}"#,
            self.opts.workload.name(),
            self.tag,
            self.i
        );
        let auth = basic(&self.opts.server_key);
        let r = self
            .http(
                "/v2/account/authenticate/device?create=true",
                &auth,
                body.as_bytes(),
            )
            .await;
        let r = r.map_err(|e| match e.kind() {
            "connect" => "refused or unreachable (sign-in)".to_string(),
            k => format!("sign-in {k}"),
        })?;
        if r.status == 401 {
            return Err("sign-in 401 (wrong --server-key?)".into());
        }
        if r.status != 200 {
            return Err(format!("sign-in status {}", r.status));
        }
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        v["token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "sign-in reply without a token".into())
    }

    /// Waits for the next message until `until`; `Ok(None)` at `until`.
    async fn next(&mut self, conn: &mut WsConn, until: Instant) -> Result<Option<ws::Msg>, String> {
        match timeout_at(TokioInstant::from_std(until), conn.recv()).await {
            Ok(Ok(m)) => {
                self.received(1);
                Ok(Some(m))
            }
            Ok(Err(e)) => Err(e.kind()),
            Err(_) => Ok(None),
        }
    }

    /// `ccu`: hold the socket until the deadline, answering pings.
    async fn hold(&mut self, conn: &mut WsConn) -> Result<End, String> {
        loop {
            match self.next(conn, self.deadline).await? {
                Some(m) => {
                    let body = conn.payload(&m);
                    let inc = envelope::read(self.opts.format, body, false);
                    let sent_at = envelope::number_after(body, b"bench_epoch_us");
                    if let Some(kind) = inc.error {
                        self.error(&kind);
                    }
                    if let Some(sent_at) = sent_at {
                        self.rec
                            .broadcast
                            .record(epoch_us().saturating_sub(sent_at));
                    }
                    self.bytes(conn);
                }
                None => return Ok(End::Deadline),
            }
        }
    }

    /// `echo`: round trips by cid, `--in-flight` at a time.
    async fn echo(&mut self, conn: &mut WsConn) -> Result<End, String> {
        let window = self.opts.in_flight;
        let format = self.opts.format;
        let mut sent_at = vec![Instant::now(); window];
        let mut next_cid: u64 = 0;
        let mut outstanding = 0usize;
        let pad = "x".repeat(self.opts.payload_size.saturating_sub(24));
        let mut w = Writer::new(format);
        let mut queue = |vu: &mut Vu, conn: &mut WsConn, cid: u64, sent_at: &mut [Instant]| {
            let msg = match &vu.opts.echo_rpc {
                Some(id) => {
                    let payload = format!(r#"{{"ts":{},"pad":"{pad}"}}"#, vu.now_us());
                    w.rpc(cid, id, &payload)
                }
                None => w.ping(cid),
            };
            queue_in(conn, format, msg);
            sent_at[cid as usize % window] = Instant::now();
        };
        for _ in 0..window {
            queue(self, conn, next_cid, &mut sent_at);
            next_cid += 1;
            outstanding += 1;
        }
        self.sent(window as u64);
        let mut last_answer = Instant::now();
        loop {
            let until = self.deadline.min(last_answer + self.opts.timeout);
            let Some(m) = self.next(conn, until).await? else {
                if Instant::now() >= self.deadline {
                    return Ok(End::Deadline);
                }
                return Err("timeout".into());
            };
            let now = Instant::now();
            let inc = envelope::read(format, conn.payload(&m), false);
            if let Some(kind) = inc.error {
                return Err(kind);
            }
            let Some(cid) = inc.cid else {
                continue; // a notification or other push: counted, not timed
            };
            if cid >= next_cid || outstanding == 0 {
                continue;
            }
            let lat = now.duration_since(sent_at[cid as usize % window]);
            self.ok(lat.as_micros() as u64);
            last_answer = now;
            outstanding -= 1;
            if now < self.deadline {
                queue(self, conn, next_cid, &mut sent_at);
                next_cid += 1;
                outstanding += 1;
                self.sent(1);
            }
            if !conn.has_buffered_frame() {
                self.bytes(conn);
            }
        }
    }

    /// Sends one envelope now.
    async fn send(&mut self, conn: &mut WsConn, msg: &[u8]) -> Result<(), String> {
        queue_in(conn, self.opts.format, msg);
        conn.flush().await.map_err(|e| e.kind())?;
        self.sent(1);
        Ok(())
    }

    /// Waits for the reply to a join (cid `j`); returns it read.
    async fn join_reply(&mut self, conn: &mut WsConn, what: &str) -> Result<Incoming, String> {
        let until = Instant::now() + self.opts.timeout;
        loop {
            let Some(m) = self.next(conn, until).await? else {
                return Err(format!("timeout ({what})"));
            };
            let inc = envelope::read(self.opts.format, conn.payload(&m), true);
            if inc.join_reply {
                return Ok(inc);
            }
        }
    }

    /// `fanout`: join a room; publishers also send at their share of `--rate`.
    async fn fanout(&mut self, conn: &mut WsConn) -> Result<End, String> {
        let format = self.opts.format;
        let centrifugo = self.opts.protocol == Protocol::Centrifugo;
        let mut w = Writer::new(format);
        let room = format!("bench-{}-room-{}", self.tag, self.i % self.opts.rooms);
        let channel_id = if centrifugo {
            self.send(conn, &centrifugo::subscribe(&room)).await?;
            self.centrifugo_reply(conn, centrifugo::SUBSCRIBE_ID, "subscribe")
                .await?;
            room
        } else {
            self.send(conn, w.channel_join(&room)).await?;
            let reply = self.join_reply(conn, "channel join").await?;
            if let Some(kind) = reply.error {
                return Err(kind);
            }
            reply
                .channel_id
                .ok_or("channel join reply without a channel")?
        };
        self.progress.ready.fetch_add(1, Ordering::Relaxed);
        let mut command_id = centrifugo::SUBSCRIBE_ID;
        let publisher = self.i < self.opts.publishers;
        let period = Duration::from_secs_f64(self.opts.publishers as f64 / self.opts.rate);
        // Publishers wait until every subscriber has joined (or the ramp and
        // one timeout have passed), so early messages reach everyone.
        let mut next_send = if publisher {
            let give_up = self.start + self.opts.ramp + self.opts.timeout;
            while (self.progress.ready.load(Ordering::Relaxed) as usize) < self.opts.concurrency
                && Instant::now() < give_up.min(self.deadline)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // Spread publishers over one period.
            Instant::now() + period.mul_f64(self.i as f64 / self.opts.publishers.max(1) as f64)
        } else {
            self.deadline + DRAIN
        };
        let stop = self.deadline + DRAIN;
        loop {
            let until = if next_send < self.deadline {
                next_send
            } else {
                stop
            };
            match self.next(conn, until).await? {
                Some(m) if centrifugo => {
                    let now_us = self.now_us();
                    let mut pings = 0;
                    let mut seen = Vec::new();
                    for line in centrifugo::read(conn.payload(&m)) {
                        pings += usize::from(line.ping);
                        seen.push((line.error, line.delivery_ts));
                    }
                    for (error, ts) in seen {
                        match (error, ts) {
                            (Some(kind), _) => self.error(&kind),
                            (None, Some(ts)) => self.ok(now_us.saturating_sub(ts)),
                            _ => {}
                        }
                    }
                    pong(conn, pings).await?;
                    if !conn.has_buffered_frame() {
                        self.bytes(conn);
                    }
                }
                Some(m) => {
                    let now_us = self.now_us();
                    let inc = envelope::read(format, conn.payload(&m), true);
                    if let Some(kind) = inc.error {
                        self.error(&kind);
                    } else if let Some(ts) = inc.delivery_ts {
                        self.ok(now_us.saturating_sub(ts));
                    }
                    if !conn.has_buffered_frame() {
                        self.bytes(conn);
                    }
                }
                None if Instant::now() >= stop => return Ok(End::Deadline),
                None if next_send < self.deadline && Instant::now() >= next_send => {
                    let now_us = self.now_us();
                    if centrifugo {
                        command_id += 1;
                        self.send(conn, &centrifugo::publish(command_id, &channel_id, now_us))
                            .await?;
                    } else {
                        self.send(conn, w.channel_message(&channel_id, now_us))
                            .await?;
                    }
                    next_send += period;
                }
                None => {}
            }
        }
    }

    /// `match`: find or create a match through the RPC, join it, then
    /// alternate op 1 (echo) and op 2 (broadcast) every `--interval-ms`.
    async fn play(&mut self, conn: &mut WsConn) -> Result<End, String> {
        let format = self.opts.format;
        let mut w = Writer::new(format);
        let mut attempts = 0;
        let match_id = loop {
            let id = self.find_match().await?;
            self.send(conn, w.match_join(&id)).await?;
            match self.join_reply(conn, "match join").await?.error {
                None => break id,
                // Full, or gone between the RPC and the join: look again.
                Some(_) if attempts < 5 => attempts += 1,
                Some(kind) => return Err(format!("match join: {kind}")),
            }
        };
        let floor_us = self.opts.tick_floor.as_micros() as u64;
        let ramp_us = self.opts.ramp.as_micros() as u64;
        let mut next_send = Instant::now();
        let mut op_echo = true;
        loop {
            let until = next_send.min(self.deadline);
            match self.next(conn, until).await? {
                Some(m) => {
                    let now_us = self.now_us();
                    let inc = envelope::read(format, conn.payload(&m), true);
                    if let Some(kind) = inc.error {
                        self.error(&kind);
                    } else if let Some((1, data)) = inc.match_data
                        && let Some(ts) = envelope::number_after(&data, b"t=")
                    {
                        let lat = now_us.saturating_sub(ts);
                        self.ok(lat);
                        self.rec.above_floor.record(lat.saturating_sub(floor_us));
                        if ts >= ramp_us {
                            self.rec.held.record(lat);
                        }
                    }
                    if !conn.has_buffered_frame() {
                        self.bytes(conn);
                    }
                }
                None if Instant::now() >= self.deadline => return Ok(End::Deadline),
                None => {
                    let (op, size) = if op_echo {
                        (1, ECHO_PAYLOAD)
                    } else {
                        (2, BROADCAST_PAYLOAD)
                    };
                    op_echo = !op_echo;
                    let data = match_payload(self.now_us(), size);
                    self.send(conn, w.match_data(&match_id, op, &data)).await?;
                    next_send += self.opts.interval;
                }
            }
        }
    }

    /// Calls the find-or-create RPC over HTTP; returns the match id.
    async fn find_match(&mut self) -> Result<String, String> {
        let token = self.token.clone().unwrap_or_default();
        let path = format!("/v2/rpc/{}", self.opts.match_rpc);
        let r = self
            .http(&path, &format!("Bearer {token}"), br#""{}""#)
            .await;
        let r = r.map_err(|e| format!("match rpc {}", e.kind()))?;
        if r.status == 404 {
            return Err(format!(
                "match rpc 404 (install bench/modules: no `{}` function)",
                self.opts.match_rpc
            ));
        }
        if r.status != 200 {
            // Say why, briefly: the server's message names the missing piece.
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
            let message: String = v["message"]
                .as_str()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            return Err(format!("match rpc status {}: {message}", r.status));
        }
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let payload = v["payload"].as_str().unwrap_or_default();
        let p: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
        p["match_id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| "match rpc reply without match_id".into())
    }
}

/// Answers `pings` Centrifugo pings, each with its pong.
async fn pong(conn: &mut WsConn, pings: usize) -> Result<(), String> {
    if pings == 0 {
        return Ok(());
    }
    for _ in 0..pings {
        conn.queue_text(centrifugo::PONG);
    }
    conn.flush().await.map_err(|e| e.kind())
}

/// This machine's wall clock in µs since the Unix epoch: what a broadcast's
/// `bench_epoch_us` is measured against, across client processes.
fn epoch_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A match payload of exactly `size` characters starting with `t=<micros>`.
pub fn match_payload(now_us: u64, size: usize) -> Vec<u8> {
    let mut p = format!("t={now_us};").into_bytes();
    p.resize(size.max(p.len()), b'x');
    p
}

/// Queues an envelope as a text (JSON) or binary (protobuf) message.
fn queue_in(conn: &mut WsConn, format: Format, msg: &[u8]) {
    match format {
        Format::Json => conn.queue_text(msg),
        Format::Protobuf => conn.queue_binary(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_payloads_have_the_published_sizes() {
        let p = match_payload(123_456_789, ECHO_PAYLOAD);
        assert_eq!(p.len(), 44);
        assert_eq!(envelope::number_after(&p, b"t="), Some(123_456_789));
        assert_eq!(match_payload(5, BROADCAST_PAYLOAD).len(), 35);
    }
}
