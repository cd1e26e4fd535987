//! Modules' own SQL (`nk.sql_exec` / `nk.sql_query`): every value type in
//! and out, `$n` placeholders in any order, errors that say what is wrong
//! and write nothing, and the row limit.

use ludus_core::StoreError;
use ludus_core::store::{SqlRow, SqlValue};

use super::Backend;

const TABLE: &str = "CREATE TABLE lua_things (
    id BIGINT PRIMARY KEY, flag BOOLEAN, n BIGINT, x DOUBLE PRECISION, label TEXT, data BYTEA)";

fn col<'a>(row: &'a SqlRow, name: &str) -> &'a SqlValue {
    &row.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no column {name} in {row:?}"))
        .1
}

fn sql_message(e: StoreError) -> String {
    match e {
        StoreError::Sql(m) => m,
        other => panic!("expected a module sql error, got {other:?}"),
    }
}

pub(crate) async fn sql_round_trips_every_value_type<B: Backend>() {
    let (_b, store) = B::store().await;
    assert_eq!(store.sql_exec(TABLE, vec![]).await.unwrap(), 0);
    let inserted = store
        .sql_exec(
            "INSERT INTO lua_things (id, flag, n, x, label, data) VALUES ($1, $2, $3, $4, $5, $6)",
            vec![
                SqlValue::Int(1),
                SqlValue::Bool(true),
                SqlValue::Int(-9_007_199_254_740_993),
                SqlValue::Float(1.5),
                SqlValue::Text("héllo".into()),
                SqlValue::Bytes(vec![0, 255, 1]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    let nulls = vec![SqlValue::Int(2)]
        .into_iter()
        .chain(std::iter::repeat_n(SqlValue::Null, 5))
        .collect();
    store
        .sql_exec(
            "INSERT INTO lua_things (id, flag, n, x, label, data) VALUES ($1, $2, $3, $4, $5, $6)",
            nulls,
        )
        .await
        .unwrap();

    let rows = store
        .sql_query(
            "SELECT id, flag, n, x, label, data FROM lua_things ORDER BY id",
            vec![],
            100,
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    let names: Vec<&str> = rows[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["id", "flag", "n", "x", "label", "data"]);
    assert_eq!(col(&rows[0], "id"), &SqlValue::Int(1));
    // SQLite has no boolean type: it stores 1.
    let expected_flag = if store.backend() == "sqlite" {
        SqlValue::Int(1)
    } else {
        SqlValue::Bool(true)
    };
    assert_eq!(col(&rows[0], "flag"), &expected_flag);
    assert_eq!(col(&rows[0], "n"), &SqlValue::Int(-9_007_199_254_740_993));
    assert_eq!(col(&rows[0], "x"), &SqlValue::Float(1.5));
    assert_eq!(col(&rows[0], "label"), &SqlValue::Text("héllo".into()));
    assert_eq!(col(&rows[0], "data"), &SqlValue::Bytes(vec![0, 255, 1]));
    for name in ["flag", "n", "x", "label", "data"] {
        assert_eq!(col(&rows[1], name), &SqlValue::Null, "{name}");
    }
}

pub(crate) async fn sql_placeholders_bind_by_number<B: Backend>() {
    let (_b, store) = B::store().await;
    store.sql_exec(TABLE, vec![]).await.unwrap();
    for (id, label) in [(1, "a"), (2, "b"), (3, "b")] {
        store
            .sql_exec(
                // Out of order, and a `$n` inside a string literal is left alone.
                "INSERT INTO lua_things (label, id, n) VALUES ($2, $1, length('$9'))",
                vec![SqlValue::Int(id), SqlValue::Text(label.into())],
            )
            .await
            .unwrap();
    }
    // One placeholder used twice; numbers as text where the column is numeric.
    let rows = store
        .sql_query(
            "SELECT id, n FROM lua_things WHERE label = $1 OR label = $1 || 'x' ORDER BY id",
            vec![SqlValue::Text("b".into())],
            10,
        )
        .await
        .unwrap();
    let ids: Vec<&SqlValue> = rows.iter().map(|r| col(r, "id")).collect();
    assert_eq!(ids, [&SqlValue::Int(2), &SqlValue::Int(3)]);
    assert_eq!(col(&rows[0], "n"), &SqlValue::Int(2));

    let changed = store
        .sql_exec(
            "UPDATE lua_things SET n = $1 WHERE id >= $2",
            vec![SqlValue::Int(7), SqlValue::Int(2)],
        )
        .await
        .unwrap();
    assert_eq!(changed, 2);
    let deleted = store
        .sql_exec(
            "DELETE FROM lua_things WHERE id = $1",
            vec![SqlValue::Int(99)],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 0);

    // A query that writes (RETURNING) works through sql_query too.
    let rows = store
        .sql_query(
            "INSERT INTO lua_things (id, label) VALUES ($1, $2) RETURNING id, label",
            vec![SqlValue::Int(4), SqlValue::Text("d".into())],
            10,
        )
        .await
        .unwrap();
    assert_eq!(
        rows,
        vec![vec![
            ("id".to_owned(), SqlValue::Int(4)),
            ("label".to_owned(), SqlValue::Text("d".into()))
        ]]
    );
    let count = store
        .sql_query("SELECT COUNT(*) AS c FROM lua_things", vec![], 10)
        .await
        .unwrap();
    assert_eq!(col(&count[0], "c"), &SqlValue::Int(4));
}

pub(crate) async fn sql_errors_say_why_and_write_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    store.sql_exec(TABLE, vec![]).await.unwrap();
    let insert = "INSERT INTO lua_things (id, label) VALUES ($1, $2)";

    let e = store.sql_exec("SELEC 1", vec![]).await.unwrap_err();
    assert!(sql_message(e).contains("syntax"));
    let e = store
        .sql_query("SELECT * FROM no_such_table", vec![], 10)
        .await
        .unwrap_err();
    assert!(sql_message(e).contains("no_such_table"));

    let e = store
        .sql_exec(insert, vec![SqlValue::Int(1)])
        .await
        .unwrap_err();
    assert!(sql_message(e).contains("2 placeholder(s) but 1 parameter(s)"));
    let e = store
        .sql_query("SELECT 1 AS one", vec![SqlValue::Int(1)], 10)
        .await
        .unwrap_err();
    assert!(sql_message(e).contains("0 placeholder(s) but 1 parameter(s)"));

    let e = store.sql_exec("BEGIN", vec![]).await.unwrap_err();
    assert!(sql_message(e).contains("own transaction"));

    // A failing statement changes nothing; a duplicate key fails alone.
    store
        .sql_exec(insert, vec![SqlValue::Int(1), SqlValue::Text("a".into())])
        .await
        .unwrap();
    let e = store
        .sql_exec(insert, vec![SqlValue::Int(1), SqlValue::Text("b".into())])
        .await
        .unwrap_err();
    assert!(!sql_message(e).is_empty());
    let rows = store
        .sql_query("SELECT label FROM lua_things", vec![], 10)
        .await
        .unwrap();
    assert_eq!(
        rows,
        vec![vec![("label".to_owned(), SqlValue::Text("a".into()))]]
    );

    // The store still serves its own calls afterwards.
    assert!(
        store
            .get_users(&[], &["nobody".into()])
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn sql_query_refuses_more_rows_than_the_limit<B: Backend>() {
    let (_b, store) = B::store().await;
    store.sql_exec(TABLE, vec![]).await.unwrap();
    for id in 1..=5 {
        store
            .sql_exec(
                "INSERT INTO lua_things (id) VALUES ($1)",
                vec![SqlValue::Int(id)],
            )
            .await
            .unwrap();
    }
    let select = "SELECT id FROM lua_things ORDER BY id";
    assert_eq!(store.sql_query(select, vec![], 5).await.unwrap().len(), 5);
    let e = store.sql_query(select, vec![], 4).await.unwrap_err();
    let message = sql_message(e);
    assert!(message.contains("more than 4 rows"), "{message}");
    assert!(message.contains("runtime.sql_max_rows"), "{message}");
    let limited = "SELECT id FROM lua_things ORDER BY id LIMIT 4";
    assert_eq!(store.sql_query(limited, vec![], 4).await.unwrap().len(), 4);
}
