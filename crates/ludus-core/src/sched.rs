//! Scheduling policy for the server's own worker threads.

/// Marks the calling thread `SCHED_BATCH` (Linux) when it runs at niceness
/// 0 (the policy is set together with a niceness, and a niced server keeps
/// its own). `what` names the thread in the debug log when the policy
/// cannot be set; the thread then runs as before.
///
/// For threads fed by a queue that sleep whenever it is empty: the Lua VM
/// threads, the SQLite writer and readers. Under the default policy the
/// kernel lets a thread that wakes preempt the running one, so on a shared
/// core every job queued to an idle worker switched the core from the I/O
/// thread to the worker and back: one job per switch pair. A batch thread
/// does not preempt on waking; the I/O thread goes on queueing the jobs it
/// has and the worker then runs them back to back, with the same share of
/// the CPU as before. On an idle core a woken thread runs at once whatever
/// its policy. (Figures in BENCHMARKS.md: "VM threads that do not preempt
/// the I/O thread", "SQLite threads that do not preempt the I/O thread".)
pub fn batch_scheduling(what: &str) {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            NormalThreadSchedulePolicy, ThreadPriority, ThreadPriorityOsValue,
            ThreadSchedulePolicy, set_thread_priority_and_policy, thread_native_id,
        };
        if niceness() != Some(0) {
            return;
        }
        let set = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Os(ThreadPriorityOsValue::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        );
        if let Err(e) = set {
            tracing::debug!(error = ?e, thread = what, "scheduling policy or niceness not set");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = what;
}

/// The calling thread's niceness (field 19 of `/proc/thread-self/stat`).
#[cfg(target_os = "linux")]
fn niceness() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    stat_field(&stat, 19)
}

/// Field `n` (numbered from 1, as in proc(5)) of a `stat` line, counted
/// after the parenthesised name, which may hold spaces and parentheses.
fn stat_field(stat: &str, n: usize) -> Option<i64> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split(' ').nth(n.checked_sub(3)?)?.parse().ok()
}

/// The scheduling policy (field 41) and niceness (field 19) of every thread
/// of this process whose name starts with `prefix`, for tests.
pub fn thread_policies(prefix: &str) -> Vec<(String, i64, i64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let dir = task.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue; // a thread that ended meanwhile
        };
        let comm = comm.trim_end().to_owned();
        if !comm.starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        if let (Some(policy), Some(nice)) = (stat_field(&stat, 41), stat_field(&stat, 19)) {
            found.push((comm, policy, nice));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn niceness_is_read_after_the_name() {
        // A name with spaces and a parenthesis, then fields 3.. as in proc(5).
        let stat = "4242 (ludus (x) y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 20 5 1 0";
        assert_eq!(stat_field(stat, 19), Some(5));
        assert_eq!(stat_field(stat, 4), Some(1));
        assert_eq!(stat_field("4242 (short) S 1", 19), None);
        assert_eq!(stat_field("garbage", 19), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_marks_itself_batch() {
        let (policy, nice) = std::thread::Builder::new()
            .name("ludus-sched-t".into())
            .spawn(|| {
                batch_scheduling("test");
                let mine = thread_policies("ludus-sched-t");
                assert_eq!(mine.len(), 1, "{mine:?}");
                (mine[0].1, mine[0].2)
            })
            .unwrap()
            .join()
            .unwrap();
        // SCHED_BATCH is policy 3; a niced test run keeps the default (0).
        assert_eq!(policy, if nice == 0 { 3 } else { 0 });
    }
}
