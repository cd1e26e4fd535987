//! Domain errors (`ApiError` with its gRPC `Code`) and the one place where a
//! code maps to an HTTP status (and, for answers that carry no code, back). The bottom of the crate: it imports no other
//! file of it. A store's outcome maps to an `ApiError` beside `StoreError`
//! (`store.rs`); an `ApiError` maps to a realtime error code in
//! `ludus-realtime`'s `error.rs`.

use std::borrow::Cow;

/// gRPC status codes, as Nakama's clients see them in `{"code": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    /// The HTTP status grpc-gateway (and so Nakama) answers for this code.
    pub fn http_status(self) -> u16 {
        match self {
            Code::Ok => 200,
            Code::Cancelled => 499,
            Code::Unknown | Code::Internal | Code::DataLoss => 500,
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
            Code::DeadlineExceeded => 504,
            Code::NotFound => 404,
            Code::AlreadyExists | Code::Aborted => 409,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }

    /// The code of an HTTP answer that carries none of its own (a
    /// transport's 413 or 504, a router's 405): the code whose
    /// [`Code::http_status`] it is (of two, the first: 400 is
    /// `InvalidArgument`, 409 `AlreadyExists`, 500 `Internal`), `Ok` for
    /// any 1xx to 3xx, `InvalidArgument` for 413 (Nakama's code for a body
    /// too large), `Unknown` for any other status.
    pub fn from_http_status(status: u16) -> Code {
        match status {
            100..=399 => Code::Ok,
            400 | 413 => Code::InvalidArgument,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::NotFound,
            409 => Code::AlreadyExists,
            429 => Code::ResourceExhausted,
            499 => Code::Cancelled,
            500 => Code::Internal,
            501 => Code::Unimplemented,
            503 => Code::Unavailable,
            504 => Code::DeadlineExceeded,
            _ => Code::Unknown,
        }
    }

    /// The code's name as grpc-go's `codes.Code.String()` writes it
    /// (`OK`, `Canceled` with one l, `InvalidArgument`, ...): the
    /// `rpc_code` label of Nakama's metrics.
    pub fn go_name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "Canceled",
            Code::Unknown => "Unknown",
            Code::InvalidArgument => "InvalidArgument",
            Code::DeadlineExceeded => "DeadlineExceeded",
            Code::NotFound => "NotFound",
            Code::AlreadyExists => "AlreadyExists",
            Code::PermissionDenied => "PermissionDenied",
            Code::ResourceExhausted => "ResourceExhausted",
            Code::FailedPrecondition => "FailedPrecondition",
            Code::Aborted => "Aborted",
            Code::OutOfRange => "OutOfRange",
            Code::Unimplemented => "Unimplemented",
            Code::Internal => "Internal",
            Code::Unavailable => "Unavailable",
            Code::DataLoss => "DataLoss",
            Code::Unauthenticated => "Unauthenticated",
        }
    }

    pub fn as_i32(self) -> i32 {
        self as i32
    }

    pub fn from_i32(n: i32) -> Code {
        match n {
            0 => Code::Ok,
            1 => Code::Cancelled,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            6 => Code::AlreadyExists,
            7 => Code::PermissionDenied,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            10 => Code::Aborted,
            11 => Code::OutOfRange,
            12 => Code::Unimplemented,
            13 => Code::Internal,
            14 => Code::Unavailable,
            15 => Code::DataLoss,
            16 => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }
}

/// An error a client sees: a code and a message saying what it can do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: Code,
    pub message: Cow<'static, str>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::NotFound, message)
    }
    pub fn unauthenticated(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Unauthenticated, message)
    }
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Internal, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_map_to_gateway_statuses() {
        for n in 0..=16 {
            let code = Code::from_i32(n);
            assert_eq!(code.as_i32(), n);
        }
        assert_eq!(Code::InvalidArgument.http_status(), 400);
        assert_eq!(Code::Unauthenticated.http_status(), 401);
        assert_eq!(Code::PermissionDenied.http_status(), 403);
        assert_eq!(Code::NotFound.http_status(), 404);
        assert_eq!(Code::AlreadyExists.http_status(), 409);
        assert_eq!(Code::ResourceExhausted.http_status(), 429);
        assert_eq!(Code::Internal.http_status(), 500);
        assert_eq!(Code::Unavailable.http_status(), 503);
        assert_eq!(Code::from_i32(99), Code::Unknown);
    }

    #[test]
    fn every_status_a_code_answers_maps_back_to_a_code_with_that_status() {
        for n in 0..=16 {
            let code = Code::from_i32(n);
            let back = Code::from_http_status(code.http_status());
            assert_eq!(back.http_status(), code.http_status(), "{code:?}");
        }
        assert_eq!(Code::from_http_status(204), Code::Ok);
        assert_eq!(Code::from_http_status(413), Code::InvalidArgument);
        assert_eq!(Code::from_http_status(405), Code::Unknown);
    }

    #[test]
    fn go_names_are_grpc_gos() {
        let names: Vec<&str> = (0..=16).map(|n| Code::from_i32(n).go_name()).collect();
        assert_eq!(
            names,
            [
                "OK",
                "Canceled",
                "Unknown",
                "InvalidArgument",
                "DeadlineExceeded",
                "NotFound",
                "AlreadyExists",
                "PermissionDenied",
                "ResourceExhausted",
                "FailedPrecondition",
                "Aborted",
                "OutOfRange",
                "Unimplemented",
                "Internal",
                "Unavailable",
                "DataLoss",
                "Unauthenticated",
            ]
        );
    }
}
