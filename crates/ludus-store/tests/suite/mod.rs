//! The conformance suite every `Store` backend must pass, in the manner of
//! quickwit's `metastore_test_suite!`: each case is a generic async function
//! over a [`Backend`], and [`store_test_suite!`] expands to one
//! `#[tokio::test]` per case for a given backend.

pub(crate) mod accounts;
pub(crate) mod chat;
pub(crate) mod console;
pub(crate) mod identity;
pub(crate) mod leaderboard;
pub(crate) mod lifecycle;
pub(crate) mod links;
pub(crate) mod module_sql;
pub(crate) mod purchases;
pub(crate) mod revocations;
pub(crate) mod social;
pub(crate) mod storage;
pub(crate) mod users;
pub(crate) mod wallet;

use std::path::Path;
use std::sync::Arc;

use ludus_core::Store;
use ludus_core::model::{Identity, NewUser};
use ludus_store::{MigrationInfo, OpenError, StoreOptions};
use tempfile::TempDir;
use uuid::Uuid;

/// Every migration, in order, as both dialects number and name them (the
/// migration-status tests of each backend expect exactly these).
pub(crate) fn all_migrations() -> Vec<MigrationInfo> {
    [
        (1, "init"),
        (2, "chat_notifications"),
        (3, "storage_wallet"),
        (4, "social"),
        (5, "leaderboards"),
        (6, "friend_list_index"),
        (7, "users_id_hash"),
        (8, "ledger_without_user_fkey"),
        (9, "ledger_user_index_slim"),
        (10, "ledger_recent"),
        (11, "ledger_key_by_trigger"),
        (12, "console_users"),
        (13, "purchases"),
        (14, "console_audit_log"),
        (15, "console_notes_templates_settings_mfa"),
    ]
    .into_iter()
    .map(|(version, name)| MigrationInfo { version, name })
    .collect()
}

/// A fresh, empty place to keep a store, and raw access to it for the set-ups
/// the trait cannot express.
pub(crate) trait Backend: Sized + Send + Sync + 'static {
    /// A new empty database, migrated as `ludus migrate up` would.
    async fn create() -> Self;
    fn address(&self) -> String;
    fn data_dir(&self) -> &Path;
    /// Runs SQL straight on the database.
    async fn exec(&self, sql: &str);

    async fn open(&self) -> Result<Arc<dyn Store>, OpenError> {
        ludus_store::open(&self.address(), self.data_dir(), StoreOptions::default()).await
    }

    /// Creates a backend and opens its store.
    async fn store() -> (Self, Arc<dyn Store>) {
        let backend = Self::create().await;
        let store = backend.open().await.expect("store opens");
        (backend, store)
    }
}

pub(crate) struct SqliteBackend {
    dir: TempDir,
}

impl Backend for SqliteBackend {
    async fn create() -> Self {
        SqliteBackend {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }
    fn address(&self) -> String {
        String::new()
    }
    fn data_dir(&self) -> &Path {
        self.dir.path()
    }
    async fn exec(&self, sql: &str) {
        let path = self.dir.path().join(ludus_store::SQLITE_FILE_NAME);
        let sql = sql.to_owned();
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path).expect("open sqlite file");
            conn.execute_batch(&sql).expect("raw sql runs");
        })
        .await
        .expect("raw sql task");
    }
}

pub(crate) struct PostgresBackend {
    url: String,
    dir: TempDir,
}

impl Backend for PostgresBackend {
    async fn create() -> Self {
        let url = tokio::task::spawn_blocking(ludus_testkit::postgres_database)
            .await
            .expect("test database");
        let dir = tempfile::tempdir().expect("temporary folder");
        ludus_store::migrate_up(&url, dir.path())
            .await
            .expect("migrate up");
        PostgresBackend { url, dir }
    }
    fn address(&self) -> String {
        self.url.clone()
    }
    fn data_dir(&self) -> &Path {
        self.dir.path()
    }
    async fn exec(&self, sql: &str) {
        pg_exec(&self.url, sql).await;
    }
}

/// Runs SQL on a PostgreSQL database over a connection of its own.
pub(crate) async fn pg_exec(url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    client.batch_execute(sql).await.expect("raw sql runs");
    drop(client);
    let _ = driver.await;
}

/// The creation time every test user gets.
pub(crate) const T0: i64 = 1_700_000_000;

/// The sum of what the tasks return, once all have ended.
pub(crate) async fn total(tasks: Vec<tokio::task::JoinHandle<usize>>) -> usize {
    let mut sum = 0;
    for t in tasks {
        sum += t.await.unwrap();
    }
    sum
}

pub(crate) fn new_user(username: &str, identity: Identity) -> NewUser {
    NewUser {
        id: Uuid::new_v4(),
        username: username.to_owned(),
        identity,
        password_hash: None,
        create_time: T0,
    }
}

pub(crate) fn device(id: &str) -> Identity {
    Identity::Device(id.to_owned())
}

/// Expands to one test per suite case for the backend type given.
macro_rules! store_test_suite {
    ($backend:ty) => {
        store_test_suite!(@cases $backend;
            identity::finds_users_by_each_identity,
            identity::unknown_identities_are_none,
            identity::emails_are_stored_lower_cased,
            identity::username_clash_writes_nothing,
            identity::device_clash_leaves_no_user_row,
            identity::custom_and_email_clashes_leave_no_user_row,
            identity::taken_identity_wins_over_taken_username,
            identity::concurrent_creates_of_one_device_have_one_winner,
            identity::concurrent_creates_of_distinct_users_all_succeed,
            identity::concurrent_lookups_each_find_their_own_user,
            identity::concurrent_username_clashes_have_one_winner_each,
            accounts::new_account_has_defaults,
            accounts::account_devices_are_sorted,
            accounts::unknown_account_is_none,
            accounts::update_changes_only_given_fields,
            accounts::update_renames_user,
            accounts::update_username_clash_changes_nothing,
            accounts::update_unknown_user_is_not_found,
            accounts::delete_cascades_to_devices,
            accounts::delete_leaves_other_users_alone,
            users::get_users_by_ids_and_usernames_deduplicated,
            users::get_users_with_nothing_asked_is_empty,
            users::get_users_returns_public_fields,
            purchases::a_transaction_is_kept_once_by_its_first_owner,
            purchases::purchases_list_newest_first_by_user_and_page,
            purchases::subscriptions_take_renewals_and_keep_their_owner,
            revocations::revoked_tokens_load_until_they_expire,
            revocations::revoking_twice_keeps_the_later_expiry,
            revocations::session_cutoffs_keep_the_latest_and_outlive_the_user,
            revocations::bans_set_disable_time_and_revoke_in_one_go,
            console::console_users_add_find_list_and_delete,
            console::console_user_changes_move_the_token_cutoff,
            console::console_mfa_is_set_up_once_and_codes_used_once,
            console::notes_templates_and_settings,
            chat::messages_page_both_ways_by_time_then_id,
            chat::only_the_sender_updates_or_removes_a_message,
            chat::notifications_list_delete_and_go_with_their_user,
            chat::notifications_by_id_of_anyone_or_of_one_user,
            chat::notifications_update_changes_only_the_fields_given,
            links::linked_identities_sign_in,
            links::linking_another_users_identity_is_refused,
            links::unlinking_keeps_the_last_identity,
            links::concurrent_unlinks_leave_one_identity,
            lifecycle::close_then_reopen_keeps_data,
            lifecycle::calls_after_close_are_unavailable,
            lifecycle::close_finishes_queued_writes,
            lifecycle::newer_schema_is_refused,
            lifecycle::schema_is_current_after_open,
            module_sql::sql_round_trips_every_value_type,
            module_sql::sql_placeholders_bind_by_number,
            module_sql::sql_errors_say_why_and_write_nothing,
            module_sql::sql_query_refuses_more_rows_than_the_limit,
            storage::writes_read_back_with_md5_versions,
            storage::version_conditions_fail_the_whole_batch,
            storage::permission_matrix_for_owner_other_user_and_server,
            storage::conditional_deletes_and_cascade_with_the_user,
            storage::listing_pages_with_cursors_bound_to_their_listing,
            storage::rewrites_keep_creation_time_and_move_between_listings,
            storage::server_objects_belong_to_the_system_user,
            storage::bad_input_writes_nothing,
            storage::concurrent_writers_of_one_version_have_one_winner,
            storage::concurrent_creators_of_one_object_have_one_winner,
            storage::many_single_writes_at_once,
            storage::collections_are_listed_in_pages,
            wallet::wallet_updates_return_previous_and_updated,
            wallet::deleting_a_user_deletes_its_ledger,
            wallet::wallets_update_is_atomic_across_users,
            wallet::ledger_pages_newest_first_and_takes_metadata,
            wallet::ledger_pages_entries_of_one_instant_in_id_order,
            wallet::ledger_finds_entries_before_and_after_their_move,
            wallet::hot_wallet_increments_are_exact,
            wallet::concurrent_decrements_never_go_below_zero,
            wallet::many_wallets_change_at_once,
            wallet::multi_update_is_all_or_nothing,
            social::friend_invite_accept_delete_block,
            social::friends_list_carries_profiles,
            social::friends_list_follows_profile_changes,
            social::friend_changes_with_unknown_users_write_nothing,
            social::friend_lists_page_by_state_and_follow_user_deletion,
            social::friends_of_friends_skip_self_and_own_friends,
            social::groups_create_update_delete,
            social::group_users_follow_profile_changes,
            social::group_users_without_a_state_leave_out_banned_users,
            social::users_after_pages_in_id_order,
            social::group_roles_follow_nakamas_rules,
            social::group_search_filters_and_pages,
            social::concurrent_joins_never_pass_max_count,
            social::deleting_a_user_takes_the_groups_only_they_lead,
            leaderboard::random_writes_with_every_operator_rank_like_a_sort,
            leaderboard::operators_combine_scores_as_nakama,
            leaderboard::concurrent_increments_lose_no_update,
            leaderboard::bad_input_is_refused_and_writes_nothing,
            leaderboard::expired_records_leave_the_current_period,
            leaderboard::tournaments_apply_joins_sizes_and_attempts,
            leaderboard::schedules_fire_once_per_period_across_restarts,
            leaderboard::records_go_with_their_user,
            leaderboard::racing_writes_and_deletes_leave_true_ranks,
        );
    };
    (@cases $backend:ty; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                crate::suite::$module::$case::<$backend>().await;
            }
        )*
    };
}
