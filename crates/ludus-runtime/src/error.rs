//! Errors of the runtime: what a failed call answers (a gRPC code and a
//! message the transports pass on) and why modules could not be loaded.

use std::path::PathBuf;

use ludus_core::{ApiError, Code};

/// A call into a module that failed; the transports answer with `code`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuntimeError {
    pub code: Code,
    pub message: String,
}

impl RuntimeError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        RuntimeError {
            code,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Code::Internal, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Code::NotFound, message)
    }

    /// Every VM is busy and the wait for one timed out or the queue is full.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(Code::ResourceExhausted, message)
    }
}

impl From<ApiError> for RuntimeError {
    fn from(e: ApiError) -> Self {
        RuntimeError::new(e.code, e.message)
    }
}

/// Why the modules under `runtime.path` could not be loaded; stops start-up.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read runtime modules in {path}: {source}; check runtime.path")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A syntax error or an error raised while the module ran; `message`
    /// starts with `file:line:`.
    #[error("lua module {module} failed to load: {message}")]
    Module { module: String, message: String },
    #[error("cannot set up the lua runtime: {0}")]
    Setup(String),
    #[error("run_once function failed: {0}")]
    RunOnce(String),
}
