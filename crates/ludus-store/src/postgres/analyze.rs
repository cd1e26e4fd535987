//! Fresh planner statistics for young tables.
//!
//! PostgreSQL plans a prepared statement, and each foreign-key check, from
//! the table statistics it has when it first runs them, and keeps that plan
//! until the statistics change. A database that starts empty has statistics
//! of empty tables: every sign-up's check that its device's user exists
//! then scans `users` whole, so sign-up slows with every user (6,400/s in
//! the first second, 1,340/s after eight; back to 16,000/s at once after an
//! `ANALYZE users`; BENCHMARKS.md). Autovacuum fixes that, but it visits a
//! database once a minute (`autovacuum_naptime`), a long first minute for a
//! game that opens its doors.
//!
//! So every `database.analyze_interval_ms` this task asks which tables of
//! the schema are still young (fewer than [`YOUNG_ROWS`] live rows) and
//! whose live rows have grown or shrunk by more than half (plus 50 rows)
//! since the count their statistics hold (`pg_class.reltuples`, which
//! `ANALYZE` and `VACUUM` set), and analyzes those. Growth by half means a
//! few analyses per tenfold growth, each a sample of at most 30,000 rows;
//! past [`YOUNG_ROWS`] autovacuum's own rule (a tenth changed) is left
//! alone.
//!
//! Only the row count decides, not every change: updates leave plans as
//! good as they were, and a young table updated all the time (a few
//! thousand players' wallets, each update a change of `users`) was
//! otherwise analyzed on every tick, each `ANALYZE` sampling the table
//! again and making every pooled connection plan its statements on the
//! table anew. Autovacuum still analyzes such a table by its own rule.
//! Every node of a cluster may run it; a table another node is analyzing
//! waits for it. Tables the role may not analyze are left out.

use std::sync::Mutex;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::pool::Pool;

/// Tables with more live rows than this are left to autovacuum.
const YOUNG_ROWS: i64 = 100_000;

/// The young tables whose statistics are stale, schema-qualified and
/// quoted; only tables this role may analyze (it owns them, or has its
/// owner's privileges), so a table of another role is not retried, with
/// PostgreSQL's warning, on every tick.
const STALE_TABLES: &str = "SELECT quote_ident(s.schemaname) || '.' || quote_ident(s.relname)
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
        AND s.n_live_tup < $1
        AND abs(s.n_live_tup - greatest(c.reltuples, 0)::int8) > 50 + greatest(c.reltuples, 0)::int8 / 2
        AND pg_has_role(c.relowner, 'USAGE')
      ORDER BY s.relname";

pub(super) struct Analyzer {
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Analyzer {
    /// Starts the task; `every` zero starts nothing.
    pub(super) fn start(pool: Pool, every: Duration) -> Analyzer {
        let task = (!every.is_zero()).then(|| tokio::spawn(run(pool, every)));
        Analyzer {
            task: Mutex::new(task),
        }
    }

    /// Stops the task (an `ANALYZE` under way is abandoned with its connection).
    pub(super) fn close(&self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

/// A store dropped without `close` must not leave the task ticking, with a
/// handle on the pool and its connections.
impl Drop for Analyzer {
    fn drop(&mut self) {
        self.close();
    }
}

async fn run(pool: Pool, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match analyze_stale(&pool).await {
            Ok(tables) if !tables.is_empty() => {
                tracing::debug!(tables = %tables.join(", "), "analyzed young tables");
            }
            Ok(_) => {}
            // The pool is busy or the database away: the next tick tries again.
            Err(e) => tracing::debug!(error = %e, "analyzing young tables skipped"),
        }
    }
}

/// Analyzes the young tables with stale statistics; returns their names.
async fn analyze_stale(pool: &Pool) -> Result<Vec<String>, String> {
    let conn = pool.get().await.map_err(|e| e.to_string())?;
    let rows = conn
        .client
        .query(STALE_TABLES, &[&YOUNG_ROWS])
        .await
        .map_err(|e| e.to_string())?;
    let tables: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    if !tables.is_empty() {
        conn.client
            .batch_execute(&format!("ANALYZE {}", tables.join(", ")))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(tables)
}
