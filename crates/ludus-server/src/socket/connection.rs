//! One socket's life: a single task that reads frames, writes the session's
//! outbound queue and keeps the liveness clock, until either side closes.
//!
//! One task per socket (no split reader and writer) keeps an idle socket
//! small. Requests are served one at a time, in the order they arrived (as
//! Nakama's pipeline does), but never block the loop: while one is served
//! the task goes on writing pushes, pinging, reading frames and counting
//! pongs. Up to `socket.max_pending_requests` further requests wait their
//! turn; more are refused with an `error` envelope. Replies and every push go
//! through the same bounded queue, so a client that stops reading is closed
//! when the queue fills instead of stalling anyone else.
//!
//! Frame rules, as Nakama: a frame of the wrong type (binary on a JSON
//! socket, text on a protobuf socket), a malformed envelope, invalid UTF-8
//! or a message over `socket.max_message_size_bytes` closes the socket.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use bytes::Bytes;
use futures_util::SinkExt as _;
use ludus_proto::realtime::Envelope;
use ludus_realtime::liveness::{Due, Liveness};
use ludus_realtime::{
    CloseReason, Flow, Format, Modules, Next, Realtime, RtCode, RtError, SessionHandle, codec,
};
use tokio::time::{Instant, timeout};

use super::sockets::OpenSocket;

/// Why the loop ended, for the close frame and the log.
enum End {
    /// The client closed or the connection dropped; nothing more to send.
    Gone,
    /// We close with this code and reason.
    Close(u16, &'static str),
}

/// The request being served: a future over the realtime layer, boxed so an
/// idle socket's task stays small.
type Serving<'a> = Pin<Box<dyn Future<Output = Flow> + Send + 'a>>;

/// Requests of one socket: the one being served and those waiting, in order.
struct Requests<'a> {
    realtime: &'a Realtime,
    modules: &'a dyn Modules,
    session: &'a SessionHandle,
    serving: Option<Serving<'a>>,
    waiting: VecDeque<Envelope>,
    max_waiting: usize,
}

impl<'a> Requests<'a> {
    /// Serves `envelope` now, or queues it behind the one being served; a
    /// full queue refuses it with an `error` envelope (the socket stays open).
    fn push(&mut self, envelope: Envelope) {
        if self.serving.is_none() {
            self.serving = Some(self.serve(envelope));
        } else if self.waiting.len() < self.max_waiting {
            self.waiting.push_back(envelope);
        } else {
            tracing::debug!(session_id = %self.session.id(), waiting = self.waiting.len(), "too many requests waiting, refusing one");
            let error = RtError::new(
                RtCode::BadInput,
                format!(
                    "too many requests in flight on this socket: wait for replies before sending more (socket.max_pending_requests is {})",
                    self.max_waiting
                ),
            );
            let _ = self.session.send_one(&error.envelope(&envelope.cid));
        }
    }

    fn serve(&self, envelope: Envelope) -> Serving<'a> {
        Box::pin(self.realtime.handle(self.modules, self.session, envelope))
    }

    /// Waits for the request being served; never ready when there is none.
    async fn served(&mut self) -> Flow {
        match self.serving.as_mut() {
            Some(serving) => {
                let flow = serving.await;
                self.serving = self.waiting.pop_front().map(|e| self.serve(e));
                flow
            }
            None => std::future::pending().await,
        }
    }
}

pub(super) async fn run(mut ws: WebSocket, open: OpenSocket, session: SessionHandle) {
    let sockets = open.0.clone();
    let realtime = &sockets.realtime;
    let settings = &sockets.settings;
    let metrics = sockets.metrics.as_deref();
    if let Some(m) = metrics {
        m.core.ws_opened.inc();
    }
    tracing::debug!(session_id = %session.id(), user_id = %session.user_id(), "socket open");
    sockets
        .modules
        .session_event(true, || session_context(&session));
    let mut liveness = Liveness::new(settings.liveness, Instant::now());
    let write_wait = settings.write_wait;
    let mut requests = Requests {
        realtime,
        modules: &*sockets.socket_modules,
        session: &session,
        serving: None,
        waiting: VecDeque::new(),
        max_waiting: settings.max_pending_requests,
    };

    // One timer for the socket's life, moved only when it fires: a frame
    // moves the liveness deadline later, never earlier, so a timer set for
    // an older deadline only wakes the loop early (`Due::Nothing`). A timer
    // made per turn of the loop was a registration in the runtime's timer
    // wheel and a removal per message.
    let liveness_due = tokio::time::sleep_until(liveness.deadline());
    tokio::pin!(liveness_due);
    let end = loop {
        tokio::select! {
            biased;
            next = session.outbound().next_batch() => match next {
                Next::Frames(frames) => {
                    if let Some(m) = metrics {
                        let sent: usize = frames.iter().map(Bytes::len).sum();
                        m.core.messages.sent_bytes.add(sent as u64);
                    }
                    if write_frames(&mut ws, session.format(), frames, write_wait).await.is_err() {
                        break End::Gone;
                    }
                }
                Next::Close(reason) => break close_for(reason),
            },
            flow = requests.served() => {
                if flow == Flow::Close {
                    break End::Close(close_code::POLICY, "message not accepted");
                }
            }
            incoming = ws.recv() => {
                let now = Instant::now();
                match incoming {
                    None => break End::Gone,
                    Some(Err(error)) => {
                        tracing::debug!(session_id = %session.id(), %error, "cannot read from socket, closing");
                        break read_error_close(&error);
                    }
                    Some(Ok(message)) => {
                        liveness.saw_frame(now);
                        let len = match &message {
                            Message::Text(t) => t.len(),
                            Message::Binary(b) => b.len(),
                            _ => 0,
                        } as u64;
                        match decode(&session, message) {
                            Ok(Some(envelope)) => {
                                if let Some(m) = metrics {
                                    m.core.message(len, false);
                                }
                                liveness.saw_message(now);
                                requests.push(envelope);
                            }
                            Ok(None) => {}
                            Err(end) => {
                                if let (Some(m), End::Close(..)) = (metrics, &end) {
                                    m.core.message(len, true);
                                }
                                break end;
                            }
                        }
                    }
                }
            }
            () = &mut liveness_due => {
                match liveness.check(Instant::now()) {
                    Due::Ping => {
                        if write(&mut ws, Message::Ping(Bytes::new()), write_wait).await.is_err() {
                            break End::Gone;
                        }
                    }
                    Due::Dead => break End::Close(close_code::AWAY, "no pong within socket.pong_wait_ms"),
                    Due::Idle => break End::Close(close_code::AWAY, "idle for socket.ws_idle_timeout_ms"),
                    Due::Nothing => {}
                }
                liveness_due.as_mut().reset(liveness.deadline());
            }
        }
    };

    if let Some(m) = metrics {
        m.socket_closed(match end {
            End::Close(code, _) => Some(code),
            _ => None,
        });
    }
    if let End::Close(code, reason) = end {
        // Replies queued before the close (an error envelope) go out first.
        let pending = session.outbound().take_all();
        if !pending.is_empty() {
            let _ = write_frames(&mut ws, session.format(), pending, write_wait).await;
        }
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        };
        let _ = write(&mut ws, Message::Close(Some(frame)), write_wait).await;
        tracing::debug!(session_id = %session.id(), code, reason, "socket closed by server");
    } else {
        // Sends tungstenite's reply to a client's close frame, if it queued one.
        let _ = timeout(write_wait, ws.flush()).await;
        tracing::debug!(session_id = %session.id(), "socket closed by client");
    }
    // A request still being served is dropped with the socket (its reply
    // would have nowhere to go).
    drop(requests);
    realtime.disconnect(&session);
    sockets
        .modules
        .session_event(false, || session_context(&session));
    drop(ws);
    drop(open);
}

/// Reads one frame: `Ok(Some)` for an envelope, `Ok(None)` for a control
/// frame, `Err` when the socket must close.
fn decode(session: &SessionHandle, message: Message) -> Result<Option<Envelope>, End> {
    let payload: Bytes = match (message, session.format()) {
        (Message::Text(text), Format::Json) => Bytes::from(text),
        (Message::Binary(bin), Format::Protobuf) => bin,
        (Message::Ping(_) | Message::Pong(_), _) => return Ok(None),
        (Message::Close(_), _) => return Err(End::Gone),
        (Message::Text(_) | Message::Binary(_), _) => {
            tracing::debug!(session_id = %session.id(), "wrong frame type for the socket format, closing");
            return Err(End::Close(
                close_code::UNSUPPORTED,
                "wrong frame type: json sockets take text frames, protobuf sockets binary frames",
            ));
        }
    };
    match codec::decode(session.format(), &payload) {
        Ok(envelope) => Ok(Some(envelope)),
        Err(error) => {
            tracing::debug!(session_id = %session.id(), %error, len = payload.len(), "malformed envelope, closing");
            Err(End::Close(close_code::INVALID, "malformed message"))
        }
    }
}

fn close_for(reason: CloseReason) -> End {
    let code = match reason {
        CloseReason::QueueFull => close_code::POLICY,
        CloseReason::Replaced | CloseReason::Disconnect | CloseReason::Module(_) => {
            close_code::NORMAL
        }
        CloseReason::Shutdown => close_code::RESTART,
    };
    tracing::debug!(reason = reason.as_str(), "closing socket");
    End::Close(code, reason.as_str())
}

fn read_error_close(error: &axum::Error) -> End {
    let text = error.to_string();
    if text.contains("too long") || text.contains("Space limit") {
        End::Close(
            close_code::SIZE,
            "message too large, see socket.max_message_size_bytes",
        )
    } else if text.contains("UTF-8") || text.contains("utf-8") {
        End::Close(close_code::INVALID, "text frame is not valid utf-8")
    } else {
        End::Close(close_code::PROTOCOL, "websocket protocol error")
    }
}

struct WriteFailed;

/// Writes a batch of frames with one flush, within `write_wait`.
async fn write_frames(
    ws: &mut WebSocket,
    format: Format,
    frames: Vec<Bytes>,
    write_wait: Duration,
) -> Result<(), WriteFailed> {
    let job = async {
        for frame in frames {
            let message = match format {
                Format::Protobuf => Message::Binary(frame),
                Format::Json => match Utf8Bytes::try_from(frame) {
                    Ok(text) => Message::Text(text),
                    // The codec only writes JSON, which is UTF-8; skip anything else.
                    Err(_) => continue,
                },
            };
            ws.feed(message).await?;
        }
        ws.flush().await
    };
    // Most batches go to the kernel at once: the write's timer is made only
    // for one that has to wait for room.
    let mut job = std::pin::pin!(job);
    let now = std::future::poll_fn(|cx| Poll::Ready(job.as_mut().poll(cx))).await;
    let done = match now {
        Poll::Ready(done) => Ok(done),
        Poll::Pending => timeout(write_wait, job).await,
    };
    match done {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::debug!(%error, "cannot write to socket, closing");
            Err(WriteFailed)
        }
        Err(_) => {
            tracing::debug!("write took longer than socket.write_wait_ms, closing");
            Err(WriteFailed)
        }
    }
}

async fn write(
    ws: &mut WebSocket,
    message: Message,
    write_wait: Duration,
) -> Result<(), WriteFailed> {
    match timeout(write_wait, ws.send(message)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(WriteFailed),
    }
}

/// What a session's start and end events tell the modules of it.
fn session_context(session: &SessionHandle) -> ludus_runtime::CallContext {
    let mut ctx = ludus_runtime::CallContext::new(ludus_runtime::ExecutionMode::Event);
    ctx.user_id = Some(session.user_id().to_string());
    ctx.username = session.username().to_owned();
    ctx.session_id = Some(session.id().to_string());
    ctx
}
