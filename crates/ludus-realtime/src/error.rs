//! Realtime error codes (Nakama's `Error.Code`, 0-7) and the one place that
//! turns a failure into an `error` envelope.

use ludus_core::{ApiError, Code};
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, Error};

/// Nakama's realtime error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum RtCode {
    RuntimeException = 0,
    UnrecognizedPayload = 1,
    MissingPayload = 2,
    BadInput = 3,
    MatchNotFound = 4,
    MatchJoinRejected = 5,
    RuntimeFunctionNotFound = 6,
    RuntimeFunctionException = 7,
}

/// A failed realtime request: answered with an `error` envelope, the socket
/// stays open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RtError {
    pub code: RtCode,
    pub message: String,
}

impl RtError {
    pub fn new(code: RtCode, message: impl Into<String>) -> RtError {
        RtError {
            code,
            message: message.into(),
        }
    }

    pub fn bad_input(message: impl Into<String>) -> RtError {
        RtError::new(RtCode::BadInput, message)
    }

    pub fn internal(message: impl Into<String>) -> RtError {
        RtError::new(RtCode::RuntimeException, message)
    }

    /// The reply envelope, echoing `cid`.
    pub fn envelope(&self, cid: &str) -> Envelope {
        error_envelope(cid, self.code, &self.message)
    }
}

/// Domain errors on the socket: invalid input is `BAD_INPUT`, the rest is a
/// runtime exception (the message still says what went wrong).
impl From<ApiError> for RtError {
    fn from(e: ApiError) -> RtError {
        let code = match e.code {
            Code::InvalidArgument
            | Code::NotFound
            | Code::AlreadyExists
            | Code::PermissionDenied => RtCode::BadInput,
            _ => RtCode::RuntimeException,
        };
        RtError::new(code, e.message.to_string())
    }
}

pub(crate) fn error_envelope(cid: &str, code: RtCode, message: &str) -> Envelope {
    Envelope {
        cid: cid.to_owned(),
        message: Some(Message::Error(Error {
            code: code as i32,
            message: message.to_owned(),
            context: Default::default(),
        })),
    }
}
