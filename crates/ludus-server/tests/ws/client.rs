//! A small `/ws` test client: connects with a session token in either
//! format, sends envelopes, waits for replies by `cid` and keeps pushes that
//! arrive in between.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use ludus_proto::prost::Message as _;
use ludus_proto::realtime::Envelope;
use ludus_proto::realtime::envelope::Message;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message as Frame};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::support::TestServer;

pub(crate) const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fmt {
    Json,
    Protobuf,
}

pub(crate) const BOTH: [Fmt; 2] = [Fmt::Json, Fmt::Protobuf];

impl Fmt {
    pub(crate) fn query(self) -> &'static str {
        match self {
            Fmt::Json => "json",
            Fmt::Protobuf => "protobuf",
        }
    }
}

pub(crate) struct WsClient {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub format: Fmt,
    next_cid: u64,
    pushes: VecDeque<Envelope>,
}

/// What the server did instead of upgrading.
#[derive(Debug)]
pub(crate) struct Refused {
    pub status: u16,
    pub body: String,
}

pub(crate) fn ws_url(server: &TestServer, query: &str) -> String {
    format!("{}/ws?{query}", server.base.replacen("http://", "ws://", 1))
}

impl WsClient {
    pub(crate) async fn connect(server: &TestServer, token: &str, format: Fmt) -> WsClient {
        Self::connect_query(server, &format!("token={token}&format={}", format.query()))
            .await
            .unwrap()
    }

    pub(crate) async fn connect_status(server: &TestServer, token: &str, format: Fmt) -> WsClient {
        Self::connect_query(
            server,
            &format!("token={token}&format={}&status=true", format.query()),
        )
        .await
        .unwrap()
    }

    pub(crate) async fn connect_query(
        server: &TestServer,
        query: &str,
    ) -> Result<WsClient, Refused> {
        let format = if query.contains("format=protobuf") {
            Fmt::Protobuf
        } else {
            Fmt::Json
        };
        match tokio_tungstenite::connect_async_with_config(ws_url(server, query), None, true).await
        {
            Ok((ws, _)) => Ok(WsClient::from_stream(ws, format)),
            Err(tungstenite::Error::Http(res)) => Err(Refused {
                status: res.status().as_u16(),
                body: String::from_utf8_lossy(res.body().as_deref().unwrap_or_default()).into(),
            }),
            Err(e) => panic!("cannot connect: {e}"),
        }
    }

    pub(crate) fn from_stream(
        ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
        format: Fmt,
    ) -> WsClient {
        WsClient {
            ws,
            format,
            next_cid: 0,
            pushes: VecDeque::new(),
        }
    }

    pub(crate) fn encode(&self, env: &Envelope) -> Frame {
        match self.format {
            Fmt::Json => Frame::text(ludus_proto::to_json_string(env).unwrap()),
            Fmt::Protobuf => Frame::binary(env.encode_to_vec()),
        }
    }

    pub(crate) async fn send(&mut self, env: &Envelope) {
        let frame = self.encode(env);
        self.ws.send(frame).await.unwrap();
    }

    pub(crate) async fn send_frame(&mut self, frame: Frame) {
        self.ws.send(frame).await.unwrap();
    }

    /// Sends `message` with a fresh cid and returns the reply with that cid.
    pub(crate) async fn request(&mut self, message: Message) -> Envelope {
        self.next_cid += 1;
        let cid = self.next_cid.to_string();
        self.request_with_cid(&cid, message).await
    }

    pub(crate) async fn request_with_cid(&mut self, cid: &str, message: Message) -> Envelope {
        let cid = cid.to_owned();
        self.send(&Envelope {
            cid: cid.clone(),
            message: Some(message),
        })
        .await;
        loop {
            let env = self.read().await.expect("socket closed before the reply");
            if env.cid == cid {
                return env;
            }
            self.pushes.push_back(env);
        }
    }

    /// Runs RPC `id` over the socket: its payload, or the error envelope.
    pub(crate) async fn rpc(
        &mut self,
        id: &str,
        payload: &str,
    ) -> Result<String, ludus_proto::realtime::Error> {
        let r = self
            .request(Message::Rpc(ludus_proto::api::Rpc {
                id: id.into(),
                payload: payload.into(),
                http_key: String::new(),
            }))
            .await;
        match r.message {
            Some(Message::Rpc(reply)) => Ok(reply.payload),
            Some(Message::Error(e)) => Err(e),
            other => panic!("rpc {id}: unexpected reply {other:?}"),
        }
    }

    /// Writes a text frame whose payload is not checked for UTF-8: a masked
    /// frame built by hand, straight onto the TCP stream.
    pub(crate) async fn send_raw_text_frame(&mut self, payload: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        assert!(payload.len() < 126);
        let mask = [1u8, 2, 3, 4];
        let mut frame = vec![0x81, 0x80 | payload.len() as u8];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        let MaybeTlsStream::Plain(tcp) = self.ws.get_mut() else {
            panic!("plain tcp expected");
        };
        tcp.write_all(&frame).await.unwrap();
    }

    /// The next envelope (a queued push first), or `None` once closed.
    pub(crate) async fn recv(&mut self) -> Option<Envelope> {
        if let Some(env) = self.pushes.pop_front() {
            return Some(env);
        }
        self.read().await
    }

    /// Pushes that arrived while waiting for replies.
    pub(crate) fn drain_pushes(&mut self) -> Vec<Envelope> {
        self.pushes.drain(..).collect()
    }

    /// The next push, which must arrive within the test wait.
    pub(crate) async fn push(&mut self) -> Envelope {
        self.recv()
            .await
            .expect("socket closed while waiting for a push")
    }

    async fn read(&mut self) -> Option<Envelope> {
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("no message from the server in time")?;
            match frame {
                Ok(Frame::Text(t)) => {
                    assert_eq!(self.format, Fmt::Json, "text frame on a protobuf socket");
                    return Some(ludus_proto::from_json(t.as_bytes()).unwrap());
                }
                Ok(Frame::Binary(b)) => {
                    assert_eq!(self.format, Fmt::Protobuf, "binary frame on a json socket");
                    return Some(Envelope::decode(&b[..]).unwrap());
                }
                Ok(Frame::Close(_)) | Err(_) => return None,
                Ok(_) => continue,
            }
        }
    }

    /// Reads until the server closes; returns its close code, if it sent one,
    /// and the envelopes that came before.
    pub(crate) async fn closed(&mut self) -> (Option<CloseCode>, Vec<Envelope>) {
        let (code, _, before) = self.closed_with_reason().await;
        (code, before)
    }

    /// [`closed`](Self::closed) with the close frame's reason text too.
    pub(crate) async fn closed_with_reason(
        &mut self,
    ) -> (Option<CloseCode>, String, Vec<Envelope>) {
        let mut before: Vec<Envelope> = self.pushes.drain(..).collect();
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("server did not close the socket in time");
            match frame {
                None | Some(Err(_)) => return (None, String::new(), before),
                Some(Ok(Frame::Close(c))) => {
                    let reason = c.as_ref().map(|c| c.reason.to_string()).unwrap_or_default();
                    return (c.map(|c| c.code), reason, before);
                }
                Some(Ok(Frame::Text(t))) => {
                    before.push(ludus_proto::from_json(t.as_bytes()).unwrap())
                }
                Some(Ok(Frame::Binary(b))) => before.push(Envelope::decode(&b[..]).unwrap()),
                Some(Ok(_)) => {}
            }
        }
    }
}

/// Signs in a device and returns (token, user id, username).
pub(crate) async fn user(server: &TestServer, device: &str) -> (String, String, String) {
    let s = server.device_session(device).await;
    let token = crate::support::token(&s);
    let claims = crate::support::claims(&token);
    (
        token,
        claims["uid"].as_str().unwrap().to_owned(),
        claims["usn"].as_str().unwrap().to_owned(),
    )
}

/// The error of an `error` envelope, or a panic.
pub(crate) fn error_of(env: &Envelope) -> &ludus_proto::realtime::Error {
    match &env.message {
        Some(Message::Error(e)) => e,
        other => panic!("expected an error envelope, got {other:?}"),
    }
}
