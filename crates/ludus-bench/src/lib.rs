//! `ludus bench`: a load generator that reproduces Nakama's published
//! workloads against any server speaking Nakama's client API, and prints the
//! published table's columns.
//!
//! It depends only on the wire types (`ludus-proto`), never on the server, and
//! sends nothing Ludus-specific.

mod http;
pub mod options;
pub mod processes;
pub mod report;
pub mod stats;
pub mod workload;
pub mod ws;

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use options::{Options, Workload};
use report::RunResult;
use stats::Summary;
use workload::http::Progress;

/// Runs `ludus bench ARGS`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let opts = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            // Help goes to stdout and succeeds; mistakes go to stderr.
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    // Many sockets need many descriptors; take what the hard limit allows.
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("ludus bench: cannot raise the open-files limit: {e}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ludus bench: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let outcome = if opts.processes > 1 {
        processes::run(args, &opts).and_then(|m| finish(&opts, m.recorder, m.bytes_in, m.bytes_out))
    } else {
        runtime.block_on(run(opts))
    };
    match outcome {
        Ok(result) => {
            print!("{}", report::table(&result));
            if result.summary.total_ok == 0 { 1 } else { 0 }
        }
        Err(e) => {
            eprintln!("ludus bench: {e}");
            1
        }
    }
}

/// Runs one workload and writes the requested files.
pub async fn run(mut opts: Options) -> Result<RunResult, String> {
    let tag = options::run_tag();
    match opts.workload {
        Workload::Social => {
            opts.social = Some(workload::social::seed(&opts).await?);
        }
        Workload::Register
        | Workload::Rpc
        | Workload::Storage
        | Workload::Wallet
        | Workload::Leaderboard => {}
        Workload::Ccu | Workload::Echo | Workload::Fanout | Workload::Match => {}
        Workload::Login => {
            if !opts.quiet {
                eprintln!("registering {} devices for the login run…", opts.users);
            }
            workload::http::seed_logins(&opts, &tag).await?;
        }
    }
    let opts = Arc::new(opts);
    let progress = Arc::new(Progress::default());
    let start = Instant::now();
    let ticker =
        (!opts.quiet).then(|| tokio::spawn(show_progress(progress.clone(), start, opts.duration)));
    // A hard stop: requests in flight at the deadline get their timeout, no
    // more, and sockets their closing handshake (every socket of the
    // process closes at the deadline: a millisecond each, on a busy host).
    let closing = if opts.is_socket_workload() {
        Duration::from_millis(opts.concurrency as u64)
    } else {
        Duration::ZERO
    };
    let limit = opts.duration + opts.ramp + opts.timeout + Duration::from_secs(2) + closing;
    let outcome = if opts.is_socket_workload() {
        tokio::time::timeout(
            limit,
            workload::socket::run(opts.clone(), tag, progress, start),
        )
        .await
    } else {
        tokio::time::timeout(
            limit,
            workload::http::run(opts.clone(), tag, progress, start),
        )
        .await
    };
    if let Some(t) = ticker {
        t.abort();
        eprintln!();
    }
    let (rec, bytes_in, bytes_out) =
        outcome.map_err(|_| "run did not finish by its deadline".to_string())?;
    if let Some(path) = &opts.recorder_out {
        let measured = processes::Measured {
            recorder: rec.clone(),
            bytes_in,
            bytes_out,
        };
        processes::write(path, &measured)?;
    }
    finish(&opts, rec, bytes_in, bytes_out)
}

/// The run's summary and result from what it measured, with the files
/// `--json` and `--svg` ask for.
fn finish(
    opts: &Options,
    mut rec: stats::Recorder,
    bytes_in: u64,
    bytes_out: u64,
) -> Result<RunResult, String> {
    rec.seconds.truncate(opts.duration.as_secs() as usize);
    let summary = Summary::of(&rec, opts.duration.as_secs_f64());
    let summary = if opts.workload == Workload::Match {
        summary
            .with_floor(&rec, opts.tick_floor.as_micros() as u64)
            .with_held(&rec, opts.ramp.as_secs_f64())
    } else {
        summary.with_broadcast(&rec)
    };
    if summary.total_ok == 0 && summary.total_errors > 0 {
        let kinds: Vec<String> = summary
            .errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let hint = if summary
            .errors
            .keys()
            .any(|k| k.contains("401") || k.contains("refused") || k.contains("connect"))
        {
            "; check --target and --server-key"
        } else {
            ""
        };
        eprintln!(
            "ludus bench: every attempt failed ({}){hint}",
            kinds.join(", ")
        );
    }
    let result = RunResult {
        workload: opts.workload.name().into(),
        target: opts.target_text.clone(),
        concurrency: opts.concurrency,
        socket: opts.is_socket_workload(),
        summary,
        bytes_in,
        bytes_out,
        seconds: rec.seconds,
    };
    if let Some(path) = &opts.json {
        let json = serde_json::to_vec_pretty(&result).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &opts.svg {
        std::fs::write(path, report::svg(&result))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(result)
}

async fn show_progress(p: Arc<Progress>, start: Instant, duration: Duration) {
    let (mut last_ok, mut last_received) = (0, 0);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let ok = p.ok.load(Ordering::Relaxed);
        let received = p.received.load(Ordering::Relaxed);
        eprint!(
            "\r[{:>3}s/{}s] ok {} ({}/s) received {}/s errors {} users {}   ",
            start.elapsed().as_secs(),
            duration.as_secs(),
            ok,
            ok - last_ok,
            received - last_received,
            p.errors.load(Ordering::Relaxed),
            p.users.load(Ordering::Relaxed)
        );
        let _ = std::io::stderr().flush();
        last_ok = ok;
        last_received = received;
    }
}
