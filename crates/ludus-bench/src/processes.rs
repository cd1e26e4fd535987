//! `--processes N`: one run spread over N processes of this same program,
//! because one process holds only as many sockets as its open-files limit
//! (about 19,900 here). Each process runs the workload with its share of
//! `--concurrency` and of the source addresses and writes what it measured
//! (its [`Recorder`], histograms whole) to a file; the first process merges
//! them into one result, so percentiles are those of every request, not an
//! average of each process's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::options::{Options, Workload};
use crate::stats::Recorder;

/// What one process of a run writes for the first to merge.
#[derive(Debug, Serialize, Deserialize)]
pub struct Measured {
    pub recorder: Recorder,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Writes a process's measurements where `--recorder-out` names.
pub fn write(path: &Path, measured: &Measured) -> Result<(), String> {
    let json = serde_json::to_vec(measured).map_err(|e| e.to_string())?;
    std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The workloads a run may spread over processes: each user stands alone
/// (fan-out's rooms and login's seeding span users, so they may not).
pub fn supported(workload: Workload) -> bool {
    matches!(
        workload,
        Workload::Ccu | Workload::Echo | Workload::Match | Workload::Rpc | Workload::Register
    )
}

/// The flags a process gets from the run's `args`: the run's own, less the
/// ones each process gets its own value of (its share of the users, of the
/// opening rate and of the source addresses).
fn shared_args(args: &[String]) -> Vec<String> {
    const OWN: [&str; 7] = [
        "--processes",
        "--concurrency",
        "--rate",
        "--sources",
        "--json",
        "--svg",
        "--recorder-out",
    ];
    let mut out = Vec::with_capacity(args.len());
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        // Every process runs quietly: the run's table is the merged one.
        if a == "--quiet" {
            continue;
        }
        if OWN.contains(&a.as_str()) {
            skip_value = true;
            continue;
        }
        if OWN.iter().any(|f| a.starts_with(&format!("{f}="))) {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// The share of `total` that process `i` of `n` takes.
fn share(total: usize, i: usize, n: usize) -> usize {
    total / n + usize::from(i < total % n)
}

/// Runs the workload in `opts.processes` processes and merges what they
/// measured: the run's totals and the byte counts.
pub fn run(args: &[String], opts: &Options) -> Result<Measured, String> {
    let n = opts.processes;
    if !supported(opts.workload) {
        return Err(format!(
            "--processes runs ccu, echo, match, rpc and register; {} spans users, run it in one process",
            opts.workload.name()
        ));
    }
    if opts.concurrency < n {
        return Err(format!(
            "--processes {n} needs at least {n} users (--concurrency {})",
            opts.concurrency
        ));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = std::env::temp_dir().join(format!("ludus-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let shared = shared_args(args);
    let mut children: Vec<(Child, PathBuf)> = Vec::with_capacity(n);
    for i in 0..n {
        // Every process gets whole source addresses when there are enough,
        // else all of them (their ports are shared by the kernel).
        let sources: Vec<String> = if opts.sources.len() >= n {
            opts.sources
                .iter()
                .enumerate()
                .filter(|(k, _)| k % n == i)
                .map(|(_, s)| s.to_string())
                .collect()
        } else {
            opts.sources.iter().map(ToString::to_string).collect()
        };
        let out = dir.join(format!("process-{i}.json"));
        let child = Command::new(&exe)
            .arg("bench")
            .args(&shared)
            .args(["--concurrency", &share(opts.concurrency, i, n).to_string()])
            .args(["--rate", &(opts.rate / n as f64).to_string()])
            .args(["--sources", &sources.join(",")])
            .arg("--quiet")
            .arg("--recorder-out")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start process {i} of {n}: {e}"))?;
        children.push((child, out));
    }
    let mut merged = Measured {
        recorder: Recorder::default(),
        bytes_in: 0,
        bytes_out: 0,
    };
    let mut failures = Vec::new();
    for (i, (mut child, out)) in children.into_iter().enumerate() {
        let status = child.wait().map_err(|e| e.to_string())?;
        match std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice::<Measured>(&b).ok())
        {
            Some(m) => {
                merged.recorder.merge(&m.recorder);
                merged.bytes_in += m.bytes_in;
                merged.bytes_out += m.bytes_out;
            }
            None => failures.push(format!("process {i} wrote no result ({status})")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failures.len() == n {
        return Err(failures.join("; "));
    }
    for f in failures {
        eprintln!("ludus bench: {f}; the result is the other processes'");
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn each_process_gets_the_run_flags_but_its_own_share() {
        let args = strings(&[
            "echo",
            "--processes",
            "3",
            "--concurrency=25000",
            "--ramp",
            "333s",
            "--sources",
            "8",
            "--json",
            "out.json",
            "--target",
            "http://127.0.0.1:7350",
            "--quiet",
        ]);
        assert_eq!(
            shared_args(&args),
            strings(&[
                "echo",
                "--ramp",
                "333s",
                "--target",
                "http://127.0.0.1:7350"
            ])
        );
        let shares: Vec<usize> = (0..3).map(|i| share(25_000, i, 3)).collect();
        assert_eq!(shares, vec![8_334, 8_333, 8_333]);
        assert_eq!(shares.iter().sum::<usize>(), 25_000);
    }

    #[test]
    fn a_measurement_survives_its_file() {
        let mut recorder = Recorder::default();
        recorder.ok(0, 1_500);
        recorder.ok(1, 250_000);
        recorder.error(1, "timeout");
        let m = Measured {
            recorder,
            bytes_in: 7,
            bytes_out: 9,
        };
        let back: Measured = serde_json::from_slice(&serde_json::to_vec(&m).unwrap()).unwrap();
        assert_eq!(back.recorder.latency.count(), 2);
        assert_eq!(back.recorder.latency.max(), 250_000);
        assert_eq!(
            back.recorder.latency.quantile(0.5),
            m.recorder.latency.quantile(0.5)
        );
        assert_eq!(back.recorder.seconds, m.recorder.seconds);
        assert_eq!(back.recorder.errors, m.recorder.errors);
        assert_eq!((back.bytes_in, back.bytes_out), (7, 9));
    }
}
