//! Purchases and subscriptions on PostgreSQL: each upsert is one
//! transaction of `INSERT … ON CONFLICT DO UPDATE … RETURNING` statements,
//! so the stored owner and `seen_before` come from the row as committed,
//! whatever runs concurrently; lookups and keyset listings.

use ludus_core::purchase::{IapListQuery, Purchase, StoreEnvironment, StoreProvider, Subscription};
use ludus_core::store::{StoreError, StoreResult};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::errors::{Failure, with_retry};
use super::pool::Pool;

const PURCHASE_COLUMNS: &str = "transaction_id, user_id, store, product_id, environment, \
     raw_response, purchase_time, create_time, update_time, refund_time";

const SUBSCRIPTION_COLUMNS: &str = "original_transaction_id, user_id, store, product_id, \
     environment, raw_response, raw_notification, purchase_time, create_time, update_time, \
     expire_time, refund_time";

fn provider(code: i16) -> Result<StoreProvider, Failure> {
    StoreProvider::from_code(code.into()).ok_or_else(|| {
        Failure::Fatal(StoreError::Backend(format!(
            "unknown store {code} in a stored row"
        )))
    })
}

fn purchase_from_row(row: &Row) -> Result<Purchase, Failure> {
    Ok(Purchase {
        transaction_id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        store: provider(row.try_get(2)?)?,
        product_id: row.try_get(3)?,
        environment: StoreEnvironment::from_code(row.try_get::<_, i16>(4)?.into()),
        raw_response: row.try_get(5)?,
        purchase_time_ms: row.try_get(6)?,
        create_time_ms: row.try_get(7)?,
        update_time_ms: row.try_get(8)?,
        refund_time_ms: row.try_get(9)?,
        seen_before: false,
    })
}

fn subscription_from_row(row: &Row) -> Result<Subscription, Failure> {
    Ok(Subscription {
        original_transaction_id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        store: provider(row.try_get(2)?)?,
        product_id: row.try_get(3)?,
        environment: StoreEnvironment::from_code(row.try_get::<_, i16>(4)?.into()),
        raw_response: row.try_get(5)?,
        raw_notification: row.try_get(6)?,
        purchase_time_ms: row.try_get(7)?,
        create_time_ms: row.try_get(8)?,
        update_time_ms: row.try_get(9)?,
        expire_time_ms: row.try_get(10)?,
        refund_time_ms: row.try_get(11)?,
    })
}

pub(super) async fn upsert_purchases(
    pool: &Pool,
    purchases: &[Purchase],
    now_ms: i64,
) -> StoreResult<Vec<Purchase>> {
    let sql = format!(
        "INSERT INTO purchase ({PURCHASE_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, COALESCE(NULLIF($6, ''), '{{}}'), $7, $8, $8, $9)
         ON CONFLICT (transaction_id) DO UPDATE SET
             refund_time = CASE WHEN EXCLUDED.refund_time <> 0
                                THEN EXCLUDED.refund_time ELSE purchase.refund_time END,
             update_time = EXCLUDED.update_time
         RETURNING {PURCHASE_COLUMNS}, (xmax <> 0) AS seen_before"
    );
    with_retry("upsert purchases", || async {
        let mut conn = pool.get().await?;
        let tx = conn.client.transaction().await?;
        let mut out = Vec::with_capacity(purchases.len());
        for p in purchases {
            let store = p.store.code() as i16;
            let environment = p.environment.code() as i16;
            let row = tx
                .query_one(
                    &sql,
                    &[
                        &p.transaction_id,
                        &p.user_id,
                        &store,
                        &p.product_id,
                        &environment,
                        &p.raw_response,
                        &p.purchase_time_ms,
                        &now_ms,
                        &p.refund_time_ms,
                    ],
                )
                .await?;
            let mut kept = purchase_from_row(&row)?;
            kept.seen_before = row.try_get(10)?;
            out.push(kept);
        }
        tx.commit().await?;
        Ok(out)
    })
    .await
}

pub(super) async fn get_purchase(
    pool: &Pool,
    transaction_id: &str,
) -> StoreResult<Option<Purchase>> {
    let sql = format!("SELECT {PURCHASE_COLUMNS} FROM purchase WHERE transaction_id = $1");
    with_retry("get purchase", || async {
        let conn = pool.get().await?;
        let row = conn.client.query_opt(&sql, &[&transaction_id]).await?;
        row.as_ref().map(purchase_from_row).transpose()
    })
    .await
}

/// The WHERE clause and parameters of a newest-first keyset page.
fn page_filter(
    query: &IapListQuery,
    id_column: &str,
) -> (String, Vec<Box<dyn ToSql + Sync + Send>>) {
    let mut clauses = Vec::new();
    let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    if let Some(user) = query.user {
        values.push(Box::new(user));
        clauses.push(format!("user_id = ${}", values.len()));
    }
    if let Some(c) = &query.after {
        values.push(Box::new(c.purchase_time_ms));
        values.push(Box::new(c.user_id));
        values.push(Box::new(c.id.clone()));
        let n = values.len();
        clauses.push(format!(
            "(purchase_time, user_id, {id_column}) < (${}, ${}, ${n})",
            n - 2,
            n - 1
        ));
    }
    values.push(Box::new(query.limit as i64));
    let limit = values.len();
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (
        format!(
            "{filter} ORDER BY purchase_time DESC, user_id DESC, {id_column} DESC LIMIT ${limit}"
        ),
        values,
    )
}

fn refs(values: &[Box<dyn ToSql + Sync + Send>]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

pub(super) async fn list_purchases(
    pool: &Pool,
    query: &IapListQuery,
) -> StoreResult<Vec<Purchase>> {
    let (tail, values) = page_filter(query, "transaction_id");
    let sql = format!("SELECT {PURCHASE_COLUMNS} FROM purchase {tail}");
    with_retry("list purchases", || async {
        let conn = pool.get().await?;
        let rows = conn.client.query(&sql, &refs(&values)).await?;
        rows.iter().map(purchase_from_row).collect()
    })
    .await
}

pub(super) async fn upsert_subscriptions(
    pool: &Pool,
    subs: &[Subscription],
    now_ms: i64,
) -> StoreResult<Vec<Subscription>> {
    let sql = format!(
        "INSERT INTO subscription ({SUBSCRIPTION_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, COALESCE(NULLIF($6, ''), '{{}}'),
                 COALESCE(NULLIF($7, ''), '{{}}'), $8, $9, $9, $10, $11)
         ON CONFLICT (original_transaction_id) DO UPDATE SET
             product_id = EXCLUDED.product_id,
             expire_time = EXCLUDED.expire_time,
             update_time = EXCLUDED.update_time,
             raw_response = CASE WHEN $6 = '' THEN subscription.raw_response ELSE $6 END,
             raw_notification = CASE WHEN $7 = '' THEN subscription.raw_notification ELSE $7 END,
             refund_time = CASE WHEN EXCLUDED.refund_time <> 0
                                THEN EXCLUDED.refund_time ELSE subscription.refund_time END
         RETURNING {SUBSCRIPTION_COLUMNS}"
    );
    with_retry("upsert subscriptions", || async {
        let mut conn = pool.get().await?;
        let tx = conn.client.transaction().await?;
        let mut out = Vec::with_capacity(subs.len());
        for s in subs {
            let store = s.store.code() as i16;
            let environment = s.environment.code() as i16;
            let row = tx
                .query_one(
                    &sql,
                    &[
                        &s.original_transaction_id,
                        &s.user_id,
                        &store,
                        &s.product_id,
                        &environment,
                        &s.raw_response,
                        &s.raw_notification,
                        &s.purchase_time_ms,
                        &now_ms,
                        &s.expire_time_ms,
                        &s.refund_time_ms,
                    ],
                )
                .await?;
            out.push(subscription_from_row(&row)?);
        }
        tx.commit().await?;
        Ok(out)
    })
    .await
}

pub(super) async fn get_subscription(
    pool: &Pool,
    user: Uuid,
    product_id: &str,
) -> StoreResult<Option<Subscription>> {
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription WHERE user_id = $1 AND product_id = $2
          ORDER BY expire_time DESC LIMIT 1"
    );
    with_retry("get subscription", || async {
        let conn = pool.get().await?;
        let row = conn.client.query_opt(&sql, &[&user, &product_id]).await?;
        row.as_ref().map(subscription_from_row).transpose()
    })
    .await
}

pub(super) async fn subscription_by_original_id(
    pool: &Pool,
    original_transaction_id: &str,
) -> StoreResult<Option<Subscription>> {
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscription WHERE original_transaction_id = $1"
    );
    with_retry("get subscription by id", || async {
        let conn = pool.get().await?;
        let row = conn
            .client
            .query_opt(&sql, &[&original_transaction_id])
            .await?;
        row.as_ref().map(subscription_from_row).transpose()
    })
    .await
}

pub(super) async fn list_subscriptions(
    pool: &Pool,
    query: &IapListQuery,
) -> StoreResult<Vec<Subscription>> {
    let (tail, values) = page_filter(query, "original_transaction_id");
    let sql = format!("SELECT {SUBSCRIPTION_COLUMNS} FROM subscription {tail}");
    with_retry("list subscriptions", || async {
        let conn = pool.get().await?;
        let rows = conn.client.query(&sql, &refs(&values)).await?;
        rows.iter().map(subscription_from_row).collect()
    })
    .await
}
