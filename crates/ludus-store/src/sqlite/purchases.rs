//! Purchases and subscriptions on SQLite: upserts that read the stored row
//! first inside the writer's transaction (so `seen_before` and the kept
//! owner are decided on what is committed), lookups and keyset listings.

use ludus_core::purchase::{IapListQuery, Purchase, StoreEnvironment, StoreProvider, Subscription};
use ludus_core::store::StoreResult;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{IdText, map_err, uuid_at};

const PURCHASE_COLUMNS: &str = "transaction_id, user_id, store, product_id, environment, \
     raw_response, purchase_time, create_time, update_time, refund_time";

const SUBSCRIPTION_COLUMNS: &str = "original_transaction_id, user_id, store, product_id, \
     environment, raw_response, raw_notification, purchase_time, create_time, update_time, \
     expire_time, refund_time";

fn provider(code: i64) -> rusqlite::Result<StoreProvider> {
    StoreProvider::from_code(code).ok_or(rusqlite::Error::IntegralValueOutOfRange(2, code))
}

fn purchase_from_row(row: &Row<'_>) -> rusqlite::Result<Purchase> {
    Ok(Purchase {
        transaction_id: row.get(0)?,
        user_id: uuid_at(row, 1)?,
        store: provider(row.get(2)?)?,
        product_id: row.get(3)?,
        environment: StoreEnvironment::from_code(row.get(4)?),
        raw_response: row.get(5)?,
        purchase_time_ms: row.get(6)?,
        create_time_ms: row.get(7)?,
        update_time_ms: row.get(8)?,
        refund_time_ms: row.get(9)?,
        seen_before: false,
    })
}

fn subscription_from_row(row: &Row<'_>) -> rusqlite::Result<Subscription> {
    Ok(Subscription {
        original_transaction_id: row.get(0)?,
        user_id: uuid_at(row, 1)?,
        store: provider(row.get(2)?)?,
        product_id: row.get(3)?,
        environment: StoreEnvironment::from_code(row.get(4)?),
        raw_response: row.get(5)?,
        raw_notification: row.get(6)?,
        purchase_time_ms: row.get(7)?,
        create_time_ms: row.get(8)?,
        update_time_ms: row.get(9)?,
        expire_time_ms: row.get(10)?,
        refund_time_ms: row.get(11)?,
    })
}

fn or_empty(text: &str) -> &str {
    if text.is_empty() { "{}" } else { text }
}

pub(super) fn upsert_purchases(
    conn: &Connection,
    purchases: &[Purchase],
    now_ms: i64,
) -> StoreResult<Vec<Purchase>> {
    let mut out = Vec::with_capacity(purchases.len());
    for p in purchases {
        let stored = get_purchase(conn, &p.transaction_id)?;
        match stored {
            Some(mut stored) => {
                let refund = if p.refund_time_ms != 0 {
                    p.refund_time_ms
                } else {
                    stored.refund_time_ms
                };
                conn.prepare_cached(
                    "UPDATE purchase SET refund_time = ?2, update_time = ?3 WHERE transaction_id = ?1",
                )
                .and_then(|mut s| s.execute(params![p.transaction_id, refund, now_ms]))
                .map_err(map_err)?;
                stored.refund_time_ms = refund;
                stored.update_time_ms = now_ms;
                stored.seen_before = true;
                out.push(stored);
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO purchase (transaction_id, user_id, store, product_id, environment,
                         raw_response, purchase_time, create_time, update_time, refund_time)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        p.transaction_id,
                        IdText::new(p.user_id),
                        p.store.code(),
                        p.product_id,
                        p.environment.code(),
                        or_empty(&p.raw_response),
                        p.purchase_time_ms,
                        now_ms,
                        p.refund_time_ms,
                    ])
                })
                .map_err(map_err)?;
                let mut kept = p.clone();
                kept.raw_response = or_empty(&p.raw_response).to_owned();
                kept.create_time_ms = now_ms;
                kept.update_time_ms = now_ms;
                kept.seen_before = false;
                out.push(kept);
            }
        }
    }
    Ok(out)
}

pub(super) fn get_purchase(
    conn: &Connection,
    transaction_id: &str,
) -> StoreResult<Option<Purchase>> {
    conn.prepare_cached(&format!(
        "SELECT {PURCHASE_COLUMNS} FROM purchase WHERE transaction_id = ?1"
    ))
    .and_then(|mut s| s.query_row([transaction_id], purchase_from_row).optional())
    .map_err(map_err)
}

/// The WHERE clause and parameters of a newest-first keyset page.
fn page_filter(query: &IapListQuery, id_column: &str) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    if let Some(user) = query.user {
        values.push(Value::Text(user.to_string()));
        clauses.push(format!("user_id = ?{}", values.len()));
    }
    if let Some(c) = &query.after {
        values.push(Value::Integer(c.purchase_time_ms));
        values.push(Value::Text(c.user_id.to_string()));
        values.push(Value::Text(c.id.clone()));
        let n = values.len();
        clauses.push(format!(
            "(purchase_time, user_id, {id_column}) < (?{}, ?{}, ?{n})",
            n - 2,
            n - 1
        ));
    }
    values.push(Value::Integer(query.limit as i64));
    let limit = values.len();
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (
        format!(
            "{filter} ORDER BY purchase_time DESC, user_id DESC, {id_column} DESC LIMIT ?{limit}"
        ),
        values,
    )
}

pub(super) fn list_purchases(
    conn: &Connection,
    query: &IapListQuery,
) -> StoreResult<Vec<Purchase>> {
    let (tail, values) = page_filter(query, "transaction_id");
    let mut stmt = conn
        .prepare(&format!("SELECT {PURCHASE_COLUMNS} FROM purchase {tail}"))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values), purchase_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn upsert_subscriptions(
    conn: &Connection,
    subs: &[Subscription],
    now_ms: i64,
) -> StoreResult<Vec<Subscription>> {
    let mut out = Vec::with_capacity(subs.len());
    for s in subs {
        let stored = conn
            .prepare_cached(&format!(
                "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription WHERE original_transaction_id = ?1"
            ))
            .and_then(|mut q| {
                q.query_row([&s.original_transaction_id], subscription_from_row)
                    .optional()
            })
            .map_err(map_err)?;
        let kept = match stored {
            Some(old) => Subscription {
                product_id: s.product_id.clone(),
                expire_time_ms: s.expire_time_ms,
                update_time_ms: now_ms,
                raw_response: if s.raw_response.is_empty() {
                    old.raw_response.clone()
                } else {
                    s.raw_response.clone()
                },
                raw_notification: if s.raw_notification.is_empty() {
                    old.raw_notification.clone()
                } else {
                    s.raw_notification.clone()
                },
                refund_time_ms: if s.refund_time_ms != 0 {
                    s.refund_time_ms
                } else {
                    old.refund_time_ms
                },
                ..old
            },
            None => Subscription {
                raw_response: or_empty(&s.raw_response).to_owned(),
                raw_notification: or_empty(&s.raw_notification).to_owned(),
                create_time_ms: now_ms,
                update_time_ms: now_ms,
                ..s.clone()
            },
        };
        conn.prepare_cached(
            "INSERT INTO subscription (original_transaction_id, user_id, store, product_id,
                 environment, raw_response, raw_notification, purchase_time, create_time,
                 update_time, expire_time, refund_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (original_transaction_id) DO UPDATE SET
                 product_id = excluded.product_id, raw_response = excluded.raw_response,
                 raw_notification = excluded.raw_notification, update_time = excluded.update_time,
                 expire_time = excluded.expire_time, refund_time = excluded.refund_time",
        )
        .and_then(|mut q| {
            q.execute(params![
                kept.original_transaction_id,
                IdText::new(kept.user_id),
                kept.store.code(),
                kept.product_id,
                kept.environment.code(),
                kept.raw_response,
                kept.raw_notification,
                kept.purchase_time_ms,
                kept.create_time_ms,
                kept.update_time_ms,
                kept.expire_time_ms,
                kept.refund_time_ms,
            ])
        })
        .map_err(map_err)?;
        out.push(kept);
    }
    Ok(out)
}

pub(super) fn get_subscription(
    conn: &Connection,
    user: Uuid,
    product_id: &str,
) -> StoreResult<Option<Subscription>> {
    conn.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription WHERE user_id = ?1 AND product_id = ?2
          ORDER BY expire_time DESC LIMIT 1"
    ))
    .and_then(|mut s| {
        s.query_row(
            params![IdText::new(user), product_id],
            subscription_from_row,
        )
        .optional()
    })
    .map_err(map_err)
}

pub(super) fn subscription_by_original_id(
    conn: &Connection,
    original_transaction_id: &str,
) -> StoreResult<Option<Subscription>> {
    conn.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription WHERE original_transaction_id = ?1"
    ))
    .and_then(|mut s| {
        s.query_row([original_transaction_id], subscription_from_row)
            .optional()
    })
    .map_err(map_err)
}

pub(super) fn list_subscriptions(
    conn: &Connection,
    query: &IapListQuery,
) -> StoreResult<Vec<Subscription>> {
    let (tail, values) = page_filter(query, "original_transaction_id");
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription {tail}"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values), subscription_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}
