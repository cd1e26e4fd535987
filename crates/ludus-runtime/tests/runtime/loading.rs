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

#[tokio::test]
async fn unknown_nk_functions_are_named_at_start() {
    let runtime = start(settings("unknown_nk")).await.unwrap();
    assert!(runtime.has_rpc("calls_missing"), "the module still loads");
    let found = runtime.unknown_nk_references();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].name, "no_such_function");
    assert_eq!(found[0].line, 6);
    assert!(found[0].path.ends_with("game.lua"), "{found:?}");
    // The modules of the nk fixture call only functions that exist.
    let runtime = start(settings("nk")).await.unwrap();
    assert_eq!(runtime.unknown_nk_references(), &[]);
}
