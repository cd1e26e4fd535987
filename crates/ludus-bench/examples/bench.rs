//! `ludus bench` without the server: the same command line, in a binary
//! that links only the load generator (quick to build in release mode for
//! measuring the tool's own ceiling).
//!
//!   cargo build --release -p ludus-bench --examples
//!   target/release/examples/bench echo --target http://127.0.0.1:7399

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ludus_bench::main(&args));
}
