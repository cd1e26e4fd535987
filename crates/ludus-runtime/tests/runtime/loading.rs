//! Start-up: modules that do not compile or fail while loading stop start-up
//! with an error naming the file and line.

use crate::support::{settings, start};

#[tokio::test]
async fn syntax_error_names_file_and_line() {
    let err = start(settings("syntax_error"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken.lua:3:"), "{err}");
    assert!(err.contains("lua module broken failed to load"), "{err}");
}

#[tokio::test]
async fn error_while_loading_names_file_and_line() {
    let err = start(settings("startup_error"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("boom.lua:2: boom at start-up"), "{err}");
}

#[tokio::test]
async fn runaway_module_is_stopped_at_start_up() {
    let err = start(settings("runaway_load"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("instruction"), "{err}");
}

#[tokio::test]
async fn missing_folder_means_no_modules() {
    let runtime = start(settings("does_not_exist")).await.unwrap();
    assert!(runtime.rpc_ids().is_empty());
}
