//! HTTP error responses: `{"code": N, "message": "…"}` with the HTTP status
//! that `ludus_core::Code::http_status` gives, as Nakama's gateway answers,
//! and the code in the response's extensions ([`AnswerCode`]) for metrics.

use std::borrow::Cow;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ludus_core::{ApiError, Code};

/// The gRPC code of an error answer, in the response's extensions (put
/// there on the error path only), for the metrics' `rpc_code`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerCode(pub(crate) Code);

#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    code: Code,
    message: Cow<'static, str>,
    /// RPC errors repeat the message as `error`, as Nakama's RPC endpoint does.
    error_field: bool,
}

impl HttpError {
    /// An error whose status follows from its code.
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Self {
        let status =
            StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        HttpError {
            status,
            code,
            message: message.into(),
            error_field: false,
        }
    }

    /// An error with a status of its own, for HTTP-level failures such as 413.
    pub fn with_status(
        status: StatusCode,
        code: Code,
        message: impl Into<Cow<'static, str>>,
    ) -> Self {
        HttpError {
            status,
            code,
            message: message.into(),
            error_field: false,
        }
    }

    /// Adds `"error"` to the body, for `/v2/rpc` answers.
    pub fn with_error_field(mut self) -> Self {
        self.error_field = true;
        self
    }

    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }

    pub fn unauthenticated(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Unauthenticated, message)
    }
}

impl From<ApiError> for HttpError {
    fn from(e: ApiError) -> Self {
        HttpError::new(e.code, e.message)
    }
}

#[derive(serde::Serialize)]
struct Body<'a> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&Body {
            code: self.code.as_i32(),
            message: &self.message,
            error: self.error_field.then_some(&*self.message),
        })
        .unwrap_or_default();
        let mut res = (self.status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        res.extensions_mut().insert(AnswerCode(self.code));
        res
    }
}
