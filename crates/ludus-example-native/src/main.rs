//! `ludus-example-native`: the `ludus` server with the example native module.

fn main() -> std::process::ExitCode {
    ludus_example_native::builder().run()
}
