//! The HTTP/1.1 server around a [`Router`]: what a connection may hold and for how long, so
//! that idle or slow clients cannot starve the process of descriptors.
//!
//! - **Header time** (`header_timeout`): once the first byte of a request has arrived, its
//!   headers must be complete within this, or the connection is closed.
//! - **Idle time** (`idle_timeout`): a connection with no request in flight and no byte of a
//!   new one (a fresh connection, or a kept-alive one after its answer) is closed after this.
//! - **Body time** (`body_timeout`): a request's body must arrive within this after its
//!   headers; a handler reading it then gets an error (408 `request_timeout` from the API).
//! - **Connections** (`max_connections`): at most this many are open. A new connection over
//!   the cap closes the oldest one that has no request in flight (a slow or idle client gives
//!   way to a new one); when every connection has a request in flight, accepting pauses until
//!   one ends (back-pressure: the kernel's backlog holds new clients). A flood therefore slows
//!   service down instead of ending it.
//! - **Header size**: more than [`MAX_HEADER_BYTES`] of request line and headers, or more than
//!   [`MAX_HEADERS`] header lines, is answered 431 `headers_too_large` in the API's error shape
//!   with `X-Request-ID`. Past what the HTTP parser buffers ([`PARSER_BUFFER_BYTES`]) the
//!   parser itself answers a bare 431 and closes.
//! - **HSTS**: with `hsts`, every response carries `Strict-Transport-Security`.
//! - **Client address**: from a peer in `trusted_proxies`, the address `X-Forwarded-For`
//!   names ([`crate::forwarded`]); the handlers see it as the `ConnectInfo` peer address.
//!
//! Each connection runs in a task of its own with a watchdog in the same task: the connection
//! reports (through its stream's reads and the request hooks) when it starts reading a request,
//! starts answering one and finishes, and the watchdog sleeps until the deadline that state
//! implies. Shutdown stops accepting, lets requests in flight finish and closes idle
//! connections at once.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::header::{HeaderValue, STRICT_TRANSPORT_SECURITY};
use axum::http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use periscope_api_types::ErrorCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tower::ServiceExt;

use crate::ApiError;
use crate::edge::{RequestId, X_REQUEST_ID};
use crate::forwarded::{Cidr, client_address};

/// The most bytes of request line and headers answered normally (16 KiB); more is 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The most header lines answered normally; more is 431.
pub const MAX_HEADERS: usize = 100;
/// What the HTTP parser buffers of one request head; past it the parser answers a bare 431.
pub const PARSER_BUFFER_BYTES: usize = 64 * 1024;
/// Descriptors kept for everything but client connections (database pools, the scan store,
/// DNS sockets, the ingest socket) when the cap is derived from the descriptor limit.
pub const RESERVED_DESCRIPTORS: u64 = 128;
/// The `Strict-Transport-Security` value sent with `hsts` (one year).
pub const HSTS_VALUE: &str = "max-age=31536000";

/// How connections are bounded (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Time for a request's headers, from its first byte.
    pub header_timeout: Duration,
    /// Time a connection may sit with no request.
    pub idle_timeout: Duration,
    /// Time for a request's body, from its headers.
    pub body_timeout: Duration,
    /// Connections open at once.
    pub max_connections: u32,
    /// Send `Strict-Transport-Security` (the public URL is https).
    pub hsts: bool,
    /// Reverse proxies whose `X-Forwarded-For` names the client (empty: none).
    pub trusted_proxies: Arc<[Cidr]>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            hsts: false,
            trusted_proxies: Arc::new([]),
        }
    }
}

/// The connection cap for a descriptor limit of `nofile`: `max_connections`, but never more
/// than the limit leaves after [`RESERVED_DESCRIPTORS`] (and at least 16).
pub fn connection_cap(max_connections: u32, nofile: u64) -> u32 {
    let room = nofile
        .saturating_sub(RESERVED_DESCRIPTORS)
        .max(16.min(nofile / 2));
    u32::try_from(room).map_or(max_connections, |room| max_connections.min(room.max(1)))
}

/// Serves `router` on `listener` until `shutdown` completes, then lets requests in flight
/// finish. Accept errors (such as running out of descriptors) are logged and retried.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send,
) {
    let epoch = Instant::now();
    let tracker = Arc::new(Tracker {
        conns: Mutex::new(BTreeMap::new()),
        open: AtomicU32::new(0),
        live: AtomicU32::new(0),
        freed: Notify::new(),
        cap: settings.max_connections.max(1),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .max_buf_size(PARSER_BUFFER_BYTES)
        .max_headers(MAX_HEADERS * 2)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let mut next_id = 0u64;
    tokio::pin!(shutdown);
    loop {
        // Room for one more: under the cap, or an idle connection gives way; otherwise wait
        // for one to end (back-pressure).
        while !tracker.room() {
            tokio::select! {
                () = tracker.freed.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                () = &mut shutdown => return finish(tracker, stop_tx).await,
            }
        }
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and the like: the connection stays in the backlog; try again soon.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => return finish(tracker, stop_tx).await,
        };
        let _ = stream.set_nodelay(true);
        next_id += 1;
        let conn = Arc::new(Conn {
            epoch,
            busy: AtomicU32::new(0),
            reading_since: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            changed: Notify::new(),
            close: Notify::new(),
            evicted: AtomicBool::new(false),
        });
        conn.idle_since.store(conn.now_ms(), Ordering::Relaxed);
        tracker.add(next_id, Arc::clone(&conn));
        let task = Connection {
            id: next_id,
            conn,
            tracker: Arc::clone(&tracker),
            builder: Arc::clone(&builder),
            router: router.clone(),
            settings: settings.clone(),
            peer,
            stop: stop_rx.clone(),
        };
        tokio::spawn(task.run(stream));
    }
}

/// Stops accepting and waits for every connection to end.
async fn finish(tracker: Arc<Tracker>, stop: watch::Sender<bool>) {
    let _ = stop.send(true);
    while tracker.open.load(Ordering::SeqCst) > 0 {
        tokio::select! {
            () = tracker.freed.notified() => {}
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

/// The open connections, oldest first.
struct Tracker {
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
    /// Connections open (evicted ones included until they end).
    open: AtomicU32,
    /// Connections open and not evicted: what the cap counts.
    live: AtomicU32,
    freed: Notify,
    cap: u32,
}

impl Tracker {
    fn add(&self, id: u64, conn: Arc<Conn>) {
        self.open.fetch_add(1, Ordering::SeqCst);
        self.live.fetch_add(1, Ordering::SeqCst);
        self.lock().insert(id, conn);
    }

    fn remove(&self, id: u64) {
        if let Some(conn) = self.lock().remove(&id)
            && !conn.evicted.load(Ordering::SeqCst)
        {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
        self.open.fetch_sub(1, Ordering::SeqCst);
        self.freed.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a new connection may be accepted now: under the cap, or once the oldest
    /// connection without a request in flight has been told to close.
    fn room(&self) -> bool {
        if self.live.load(Ordering::SeqCst) < self.cap {
            return true;
        }
        let conns = self.lock();
        let idle = conns
            .values()
            .find(|c| !c.evicted.load(Ordering::SeqCst) && c.busy.load(Ordering::SeqCst) == 0);
        match idle {
            Some(conn) => {
                conn.evicted.store(true, Ordering::SeqCst);
                self.live.fetch_sub(1, Ordering::SeqCst);
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// What the watchdog of one connection knows about it.
struct Conn {
    epoch: Instant,
    /// Requests being answered.
    busy: AtomicU32,
    /// When the first byte of the next request arrived (ms since `epoch`, plus one; 0: none).
    reading_since: AtomicU64,
    /// When the connection last became idle (ms since `epoch`, plus one).
    idle_since: AtomicU64,
    /// The state above changed: the watchdog recomputes its deadline.
    changed: Notify,
    /// Close now (evicted for a new connection).
    close: Notify,
    evicted: AtomicBool,
}

impl Conn {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    fn at(&self, ms: u64) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.epoch + Duration::from_millis(ms.saturating_sub(1)))
    }

    /// When the connection is to be closed if nothing changes; `None` while it answers.
    fn deadline(&self, settings: &Settings) -> Option<tokio::time::Instant> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let reading = self.reading_since.load(Ordering::SeqCst);
        Some(if reading > 0 {
            self.at(reading) + settings.header_timeout
        } else {
            self.at(self.idle_since.load(Ordering::SeqCst)) + settings.idle_timeout
        })
    }

    fn begin_request(&self) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.reading_since.store(0, Ordering::SeqCst);
        self.changed.notify_one();
    }

    fn end_request(&self) {
        self.idle_since.store(self.now_ms(), Ordering::SeqCst);
        self.busy.fetch_sub(1, Ordering::SeqCst);
        self.changed.notify_one();
    }

    fn bytes_read(&self) {
        if self.busy.load(Ordering::SeqCst) == 0 && self.reading_since.load(Ordering::SeqCst) == 0 {
            self.reading_since.store(self.now_ms(), Ordering::SeqCst);
            self.changed.notify_one();
        }
    }
}

/// One accepted connection and what it needs to run.
struct Connection {
    id: u64,
    conn: Arc<Conn>,
    tracker: Arc<Tracker>,
    builder: Arc<hyper::server::conn::http1::Builder>,
    router: Router,
    settings: Settings,
    peer: SocketAddr,
    stop: watch::Receiver<bool>,
}

impl Connection {
    async fn run(mut self, stream: TcpStream) {
        let io = TokioIo::new(Tracked {
            stream,
            conn: Arc::clone(&self.conn),
        });
        let service = {
            let (router, conn, settings, peer) = (
                self.router.clone(),
                Arc::clone(&self.conn),
                self.settings.clone(),
                self.peer,
            );
            hyper::service::service_fn(move |req: Request<Incoming>| {
                let (router, conn, settings) =
                    (router.clone(), Arc::clone(&conn), settings.clone());
                conn.begin_request();
                async move {
                    let response = answer(router, req, settings, peer).await;
                    conn.end_request();
                    Ok::<_, Infallible>(response)
                }
            })
        };
        let connection = self.builder.serve_connection(io, service);
        tokio::pin!(connection);
        let mut draining = false;
        loop {
            let deadline = self.conn.deadline(&self.settings);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    break;
                }
                () = self.conn.changed.notified() => {}
                () = self.conn.close.notified(), if !draining => {
                    if self.conn.busy.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    draining = true;
                    connection.as_mut().graceful_shutdown();
                }
                () = sleep_until(deadline) => {
                    if self.conn.deadline(&self.settings).is_some_and(|d| d <= tokio::time::Instant::now()) {
                        break;
                    }
                }
                changed = self.stop.changed(), if !draining => {
                    if changed.is_err() || *self.stop.borrow() {
                        draining = true;
                        if self.conn.busy.load(Ordering::SeqCst) == 0 {
                            break;
                        }
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        }
        self.tracker.remove(self.id);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Answers one request through the router, with the header-size check, the body deadline,
/// the peer address and HSTS.
async fn answer(
    router: Router,
    req: Request<Incoming>,
    settings: Settings,
    peer: SocketAddr,
) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    let head_bytes = parts.uri.to_string().len()
        + parts
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 4)
            .sum::<usize>();
    let mut response = if head_bytes > MAX_HEADER_BYTES || parts.headers.len() > MAX_HEADERS {
        let id = RequestId::generate();
        let mut response = ApiError::new(ErrorCode::HeadersTooLarge).render(&id.0);
        if let Ok(value) = HeaderValue::from_str(&id.0) {
            response.headers_mut().insert(X_REQUEST_ID.clone(), value);
        }
        response
    } else {
        let client = client_address(peer, &parts.headers, &settings.trusted_proxies);
        parts.extensions.insert(ConnectInfo(client));
        let body = Body::new(Deadline::new(body, settings.body_timeout));
        match router.oneshot(Request::from_parts(parts, body)).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    };
    if settings.hsts {
        response.headers_mut().insert(
            STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS_VALUE),
        );
    }
    response
}

/// The error of a request body that did not arrive within the body time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimeout(Duration);

/// Whether `error` (or one of its sources) is a [`BodyTimeout`].
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.is::<BodyTimeout>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// A request body that fails with [`BodyTimeout`] once its time is up.
struct Deadline {
    inner: Incoming,
    limit: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Deadline {
    fn new(inner: Incoming, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            sleep: Box::pin(tokio::time::sleep(limit)),
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A client stream that tells its connection's watchdog when a request starts to arrive.
struct Tracked {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.bytes_read();
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_other_descriptors() {
        assert_eq!(connection_cap(10_000, 20_000), 10_000);
        assert_eq!(connection_cap(10_000, 1_024), 896);
        assert_eq!(connection_cap(10_000, 256), 128);
        assert_eq!(connection_cap(10_000, 100), 16);
        assert_eq!(connection_cap(50, 256), 50);
    }
}
