//! gRPC's framing over HTTP/2: the 5-byte prefix of a message (compressed
//! flag, big-endian length), and answers that end with the `grpc-status`
//! and `grpc-message` trailers.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use bytes::{BufMut as _, Bytes, BytesMut};
use hyper::body::Frame;

use super::bridge::{Code, INVALID_ARGUMENT};

/// Why a request body is not one gRPC message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("request body is not a gRPC message: it is shorter than its length prefix says")]
    Truncated,
    #[error("request body holds more than one message: a unary call takes one")]
    Trailing,
    #[error(
        "compressed messages are not accepted: send them uncompressed (grpc-encoding identity)"
    )]
    Compressed,
}

impl FrameError {
    pub(crate) fn code(&self) -> Code {
        match self {
            FrameError::Compressed => 12,
            FrameError::Truncated | FrameError::Trailing => INVALID_ARGUMENT,
        }
    }
}

/// The message inside a unary call's request body. An empty body is an
/// empty message, as some clients send for `google.protobuf.Empty`.
pub(crate) fn unframe(body: &[u8]) -> Result<&[u8], FrameError> {
    if body.is_empty() {
        return Ok(body);
    }
    let (head, rest) = body.split_at_checked(5).ok_or(FrameError::Truncated)?;
    if head[0] != 0 {
        return Err(FrameError::Compressed);
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    match rest.len().cmp(&len) {
        std::cmp::Ordering::Less => Err(FrameError::Truncated),
        std::cmp::Ordering::Greater => Err(FrameError::Trailing),
        std::cmp::Ordering::Equal => Ok(rest),
    }
}

/// A successful answer: one framed message, then `grpc-status: 0`.
pub(crate) fn message(message: &[u8]) -> Response<GrpcBody> {
    let mut framed = BytesMut::with_capacity(message.len() + 5);
    framed.put_u8(0);
    framed.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    framed.put_slice(message);
    answer(Some(framed.freeze()), 0, "")
}

/// A failed call: no message, the status in the trailers.
pub(crate) fn status(code: Code, message: &str) -> Response<GrpcBody> {
    answer(None, code, message)
}

/// A request that is not gRPC at all gets a plain HTTP status.
pub(crate) fn http_error(status: StatusCode) -> Response<GrpcBody> {
    let mut response = Response::new(GrpcBody::default());
    *response.status_mut() = status;
    response
}

fn answer(data: Option<Bytes>, code: Code, message: &str) -> Response<GrpcBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(code));
    if !message.is_empty()
        && let Ok(value) = HeaderValue::from_str(&percent_encode(message))
    {
        trailers.insert("grpc-message", value);
    }
    let mut response = Response::new(GrpcBody {
        data,
        trailers: Some(trailers),
    });
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    response
}

/// `grpc-message` is percent-encoded outside printable ASCII and `%`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x20..=0x7e).contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The body of a gRPC answer: at most one data frame, then the trailers.
#[derive(Default)]
pub(crate) struct GrpcBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl hyper::body::Body for GrpcBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unframe_takes_exactly_one_uncompressed_message() {
        assert_eq!(unframe(&[0, 0, 0, 0, 2, 8, 1]).unwrap(), &[8, 1]);
        assert_eq!(unframe(&[]).unwrap(), &[] as &[u8]);
        assert!(matches!(
            unframe(&[0, 0, 0, 0, 3, 8, 1]),
            Err(FrameError::Truncated)
        ));
        assert!(matches!(unframe(&[0, 0, 0]), Err(FrameError::Truncated)));
        assert!(matches!(
            unframe(&[0, 0, 0, 0, 1, 8, 1]),
            Err(FrameError::Trailing)
        ));
        assert!(matches!(
            unframe(&[1, 0, 0, 0, 1, 8]),
            Err(FrameError::Compressed)
        ));
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(percent_encode("bad 100% ü"), "bad 100%25 %C3%BC");
    }
}
