//! The `ludus` binary: the library's command line with no native module.

fn main() -> std::process::ExitCode {
    ludus::Server::builder().run()
}
