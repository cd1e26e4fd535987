//! Domain errors (`ApiError` with its gRPC `Code`) and the one place where a
//! code maps to an HTTP status. The bottom of the crate: it imports no other
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
}
