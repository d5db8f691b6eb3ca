//! Connection limits: the accept loop ([`serve`]) and the body gate ([`admit`]).
//!
//! - At most [`ConnLimits::max_connections`] connections are served with keep-alive (by
//!   default the open-file limit less 256, so the process keeps file descriptors for its data).
//!   Beyond them, [`ConnLimits::probe_headroom`] more are served one request each, with a
//!   header timeout of at most 1 s: probes (`/healthz`) and prompt clients still get through
//!   while idle connections hold the rest. Beyond that, a connection is closed at once.
//! - A request's headers must arrive within [`ConnLimits::header_timeout`], which is also the
//!   longest a kept-alive connection may idle (hyper's header read timer runs while a
//!   connection waits for its next request).
//! - [`admit`] reads the body before anything else: a declared `Content-Length` over
//!   `--max-body-bytes` is a 413 at once, without reading; the body must arrive within
//!   [`ConnLimits::body_timeout`] and, after its first 5 s, at [`ConnLimits::min_body_rate`]
//!   bytes per second on average (else 408 `body_timeout`). Only then is a request permit
//!   taken (`--max-requests`; none free: 503), so slow uploads cannot hold the permits.
//!
//! Must not: compute or parse bodies (the routes do).

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use http_body_util::BodyExt;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::auth::Role;
use super::config::ConnLimits;
use super::error::ApiError;
use super::state::AppState;
use crate::input::ErrorCode;

/// The grace period before the minimum body rate applies.
const RATE_GRACE: Duration = Duration::from_secs(5);

/// The header timeout of connections served beyond `max_connections`.
const OVERFLOW_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` and serves `app` on each, within `limits`, until
/// `shutdown` resolves; then stops accepting, lets every connection finish its request in
/// flight, and returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let normal_cap = limits.max_connections.max(1);
    let extra_cap = limits.probe_headroom;
    let normal = Arc::new(Semaphore::new(normal_cap));
    let extra = Arc::new(Semaphore::new(extra_cap));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors (or an aborted handshake): wait a little rather than
                // spin; connections closing free descriptors.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let (permit, overflow) = match normal.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            Err(_) => match extra.clone().try_acquire_owned() {
                Ok(p) => (p, true),
                Err(_) => {
                    metrics::counter!("capscore_connections_refused_total").increment(1);
                    drop(stream);
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(if overflow {
                limits.header_timeout.min(OVERFLOW_HEADER_TIMEOUT)
            } else {
                limits.header_timeout
            })
            .keep_alive(!overflow)
            .max_headers(PARSER_MAX_HEADERS)
            .max_buf_size(PARSER_MAX_HEAD_BYTES);
        let mut stop = stop_rx.clone();
        let limits = limits.clone();
        tokio::spawn(async move {
            let io = WriteDeadline::new(stream, limits.write_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // The flag only ever turns true (or its sender goes): either means stop.
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a permit until it is done.
    let _ = normal.acquire_many(normal_cap as u32).await;
    let _ = extra.acquire_many(extra_cap as u32).await;
    Ok(())
}

/// A connection's stream whose writes (and flushes) fail with `TimedOut` once one has waited
/// `timeout` for the client to read: a client that sends requests and never reads the answers
/// cannot keep a connection and its buffers for longer than that.
struct WriteDeadline {
    inner: tokio::net::TcpStream,
    timeout: Duration,
    waiting: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl WriteDeadline {
    fn new(inner: tokio::net::TcpStream, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            waiting: None,
        }
    }

    /// A pending write: starts the deadline (once) and fails when it has passed.
    fn pending<T>(&mut self, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<T>> {
        let timeout = self.timeout;
        let sleep = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not read the response within --write-timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Maps a write's poll: progress clears the deadline, waiting arms it.
    fn track<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match polled {
            Poll::Pending => self.pending(cx),
            ready => {
                self.waiting = None;
                ready
            }
        }
    }
}

impl tokio::io::AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(cx, polled)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.track(cx, polled)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Reads the request body within the limits, then takes a request permit and runs the rest.
pub async fn admit(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let app = &s.0;
    let max = app.limits.max_body_bytes;
    let (parts, body) = req.into_parts();
    if let Err(e) = check_head(&parts) {
        return unread(e);
    }
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return unread(too_large());
    }
    // Every route that takes a body needs a key: an unauthenticated client is answered 401
    // before a byte of its body is read (it cannot make the server hold its upload).
    let has_body = declared.is_some_and(|n| n > 0) || parts.headers.contains_key(TRANSFER_ENCODING);
    if has_body {
        if let Err(e) = app.keys.check(&parts, Role::Score) {
            return unread(e);
        }
    }
    let bytes = match read_body(body, max, &app.conn).await {
        Ok(b) => b,
        Err(e) => return unread(e),
    };
    let Ok(permit) = app.requests.clone().try_acquire_owned() else {
        metrics::counter!("capscore_shed_total").increment(1);
        return ApiError::overloaded().into_response();
    };
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    drop(permit);
    res
}

/// The longest request target (path and query) answered: longer is 414 `uri_too_long`.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header fields a request may carry, and their total size (names, values and the
/// `: ` and line end of each): more is 431 `headers_too_large`.
pub const MAX_HEADER_FIELDS: usize = 100;
/// See [`MAX_HEADER_FIELDS`].
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// The HTTP parser's own limits, far above the ones answered with a problem document: a head
/// beyond them is cut by the parser with a bare 414 or 431 (no body) and the connection closed.
const PARSER_MAX_HEADERS: usize = 1000;
const PARSER_MAX_HEAD_BYTES: usize = 1 << 20;

/// The URI and header limits, answered with problem documents (the parser's own answers carry
/// no body).
fn check_head(parts: &axum::http::request::Parts) -> Result<(), ApiError> {
    let uri = parts.uri.path_and_query().map_or(0, |p| p.as_str().len());
    if uri > MAX_URI_BYTES {
        return Err(ApiError::new(
            ErrorCode::UriTooLong,
            format!("request target of {uri} bytes; at most {MAX_URI_BYTES}"),
        ));
    }
    let fields = parts.headers.len();
    let bytes: usize = parts
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if fields > MAX_HEADER_FIELDS || bytes > MAX_HEADER_BYTES {
        return Err(ApiError::new(
            ErrorCode::HeadersTooLarge,
            format!(
                "{fields} header fields of {bytes} bytes; at most {MAX_HEADER_FIELDS} fields and {MAX_HEADER_BYTES} bytes"
            ),
        ));
    }
    Ok(())
}

/// The answer to a request whose body is left unread: the connection closes after it (a
/// client must not send its next request behind the unread bytes).
fn unread(e: ApiError) -> Response {
    let mut res = e.into_response();
    res.headers_mut()
        .insert(CONNECTION, axum::http::HeaderValue::from_static("close"));
    res
}

fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        "request body exceeds the configured limit (--max-body-bytes)",
    )
}

/// The whole body, or 413 (over `max`), 408 (too slow) or 400 (the transfer failed).
async fn read_body(mut body: Body, max: usize, lim: &ConnLimits) -> Result<Bytes, ApiError> {
    let start = Instant::now();
    let deadline = start + lim.body_timeout;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // The next bytes must come before the deadline and before the average rate since the
        // grace period falls under the minimum.
        let by_rate = match lim.min_body_rate {
            0 => deadline,
            r => start + RATE_GRACE + Duration::from_secs_f64(buf.len() as f64 / r as f64),
        };
        let frame = match tokio::time::timeout_at(deadline.min(by_rate), body.frame()).await {
            Err(_) => {
                return Err(ApiError::new(
                    ErrorCode::BodyTimeout,
                    format!(
                        "the request body did not arrive in time: {} bytes in {:.1} s (--body-timeout {} s, --min-body-rate {} bytes/s)",
                        buf.len(),
                        start.elapsed().as_secs_f64(),
                        lim.body_timeout.as_secs_f64(),
                        lim.min_body_rate
                    ),
                ))
            }
            Ok(None) => return Ok(Bytes::from(buf)),
            Ok(Some(Err(e))) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidJson,
                    format!("cannot read the request body: {e}"),
                ))
            }
            Ok(Some(Ok(f))) => f,
        };
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
}
