//! Any text as a match-listing or matchmaker query: parsing answers a query
//! or an error and never panics; a parsed query scores documents without
//! panicking, whatever their shape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ludus_realtime::query::Query;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(query) = Query::parse(text) {
        let docs = [
            serde_json::json!({"label": {"mode": "ranked", "skill": 5, "open": true,
                "tags": ["a", "b"], "nested": [{"x": 1}, {"x": "1"}]}}),
            serde_json::json!({"properties": {"region": "eu", "rank": -2.5}}),
            serde_json::json!([1, "two", null]),
            serde_json::Value::Null,
        ];
        for doc in &docs {
            let _ = query.score(doc);
        }
    }
});
