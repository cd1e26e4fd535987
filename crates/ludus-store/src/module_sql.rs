//! Rules shared by both backends for modules' own SQL (`nk.sql_exec` and
//! `nk.sql_query`): which statements are refused, and the scanner that
//! finds `$n` placeholders outside quotes and comments (SQLite binds them
//! as `?n`).

use ludus_core::store::StoreError;

/// Leading keywords of transaction control. Each call is already one
/// transaction; a `BEGIN` left open would poison a pooled PostgreSQL
/// connection or the SQLite writer's batch.
const TRANSACTION_CONTROL: &[&str] = &[
    "BEGIN",
    "START",
    "COMMIT",
    "END",
    "ROLLBACK",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
];

/// Refuses an empty statement and transaction control, with a message the
/// module's author can act on.
pub(crate) fn check(sql: &str) -> Result<(), StoreError> {
    let keyword = first_keyword(sql);
    if keyword.is_empty() {
        return Err(StoreError::Sql("expects a query string".into()));
    }
    if TRANSACTION_CONTROL
        .iter()
        .any(|k| k.eq_ignore_ascii_case(keyword))
    {
        return Err(StoreError::Sql(format!(
            "{} is not allowed: each nk.sql_exec or nk.sql_query call already runs in its own transaction",
            keyword.to_ascii_uppercase()
        )));
    }
    Ok(())
}

/// PostgreSQL functions that read or write the database server's files
/// (core and `adminpack`). Refused by name in module SQL; the role Ludus
/// connects with should not hold `pg_read_server_files`,
/// `pg_write_server_files` or `pg_execute_server_program` in the first
/// place (docs/runtime.md), since SQL built at run time (`EXECUTE` in a `DO` block)
/// could name them without spelling them.
const PG_FILE_FUNCTIONS: &[&str] = &[
    "pg_read_file",
    "pg_read_binary_file",
    "pg_stat_file",
    "pg_ls_dir",
    "pg_ls_logdir",
    "pg_ls_waldir",
    "pg_ls_tmpdir",
    "pg_ls_archive_statusdir",
    "pg_file_write",
    "pg_file_rename",
    "pg_file_unlink",
    "pg_file_sync",
    "pg_logdir_ls",
    "lo_import",
    "lo_export",
];

/// On PostgreSQL, also refuses `COPY` (which reads and writes server files
/// or runs programs) and the file functions above.
pub(crate) fn check_postgres(sql: &str) -> Result<(), StoreError> {
    if first_keyword(sql).eq_ignore_ascii_case("COPY") {
        return Err(StoreError::Sql(
            "COPY is not allowed in module SQL: it reads and writes the database server's files; \
             use INSERT and SELECT"
                .into(),
        ));
    }
    let lower = sql.to_ascii_lowercase();
    let named = PG_FILE_FUNCTIONS.iter().find(|f| {
        lower.match_indices(*f).any(|(i, _)| {
            let before = lower[..i].bytes().next_back();
            !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    });
    if let Some(f) = named {
        return Err(StoreError::Sql(format!(
            "{f}() is not allowed in module SQL: it touches the database server's files"
        )));
    }
    Ok(())
}

/// The error for a query that matched more rows than the caller allows.
pub(crate) fn too_many_rows(max_rows: usize) -> StoreError {
    StoreError::Sql(format!(
        "the query returned more than {max_rows} rows, the most one call may read \
         (runtime.sql_max_rows); add a LIMIT or page through the results"
    ))
}

/// The error for a parameter list that does not match the placeholders.
pub(crate) fn wrong_param_count(expected: usize, given: usize) -> StoreError {
    StoreError::Sql(format!(
        "the query has {expected} placeholder(s) but {given} parameter(s) were given; \
         pass one value per $1, $2…"
    ))
}

/// The first word of the statement, after whitespace and comments.
fn first_keyword(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Rewrites every `$n` placeholder outside quotes and comments as `?n`,
/// SQLite's numbered form (SQLite would read `$1` as a *named* parameter and
/// number it by first appearance, so `$2 … $1` would bind the wrong values).
pub(crate) fn dollar_to_question(sql: &str) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"' | b'`') => {
                // A doubled quote inside is an escaped quote: the loop sees it
                // as the end and a new start, which keeps the scan in step.
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += 1;
                }
                i += 1;
            }
            b'[' => {
                while i < bytes.len() && bytes[i] != b']' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'$' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                out.push_str(&sql[copied..i]);
                out.push('?');
                copied = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_rewritten_outside_quotes_and_comments() {
        assert_eq!(
            dollar_to_question("SELECT $2, $1 FROM t WHERE a = $10"),
            "SELECT ?2, ?1 FROM t WHERE a = ?10"
        );
        assert_eq!(
            dollar_to_question("SELECT '$1', \"$2\", $3 -- $4\n, $5 /* $6 */"),
            "SELECT '$1', \"$2\", ?3 -- $4\n, ?5 /* $6 */"
        );
        assert_eq!(
            dollar_to_question("SELECT 'it''s $1', $1"),
            "SELECT 'it''s $1', ?1"
        );
        assert_eq!(dollar_to_question("SELECT $ FROM t$"), "SELECT $ FROM t$");
        assert_eq!(
            dollar_to_question("SELECT 'unterminated $1"),
            "SELECT 'unterminated $1"
        );
    }

    #[test]
    fn postgres_file_access_is_refused() {
        for sql in [
            "COPY t TO '/tmp/x'",
            " copy t FROM PROGRAM 'id'",
            "SELECT pg_read_file('/etc/passwd')",
            "select PG_LS_DIR('.')",
            "SELECT lo_import('/etc/passwd')",
            "SELECT pg_catalog.lo_export(1, '/tmp/x')",
        ] {
            let err = check_postgres(sql).unwrap_err();
            assert!(
                matches!(&err, StoreError::Sql(m) if m.contains("not allowed")),
                "{sql}: {err:?}"
            );
        }
        for sql in [
            "SELECT my_pg_read_file_count FROM t",
            "SELECT 1",
            "INSERT INTO copy_log VALUES (1)",
        ] {
            assert_eq!(check_postgres(sql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn transaction_control_is_refused() {
        for sql in [
            "BEGIN",
            "  commit;",
            "-- note\nROLLBACK",
            "/* x */ savepoint a",
            "end",
        ] {
            assert!(matches!(check(sql), Err(StoreError::Sql(_))), "{sql}");
        }
        assert!(matches!(check("  "), Err(StoreError::Sql(_))));
        for sql in [
            "SELECT 1",
            "insert into t values (1)",
            "WITH x AS (SELECT 1) SELECT * FROM x",
        ] {
            assert_eq!(check(sql), Ok(()), "{sql}");
        }
    }
}
