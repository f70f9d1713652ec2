//! The ingest socket: how `periscope ingest` reaches the store of a running `periscope serve`.
//!
//! The store (`DIR/scan.store`) is locked by the one process that has it open, so while
//! a server runs no second process can write it. The server therefore listens on a Unix
//! domain socket beside the store, `DIR/ingest.sock` (mode 0600: only the owner of the data
//! directory may send scan data), and applies what arrives there through
//! [`LiveIndex::apply_batch`], the same durable transaction an ingest of its own would run;
//! the next index refresh makes it searchable. `periscope ingest` connects to the socket when
//! a server answers on it ([`ServerConnection::connect`]) and opens the store itself
//! otherwise, so the command is the same either way.
//!
//! **Protocol** (version 1; one connection per ingest run; the client speaks first):
//! - the client sends [`MAGIC`]; a server speaking another version answers with an error;
//! - then frames, each a 4-byte big-endian length and that many bytes;
//! - a non-empty frame is one batch: observation lines (docs/observation-format.md), each
//!   ending in `\n`, at most [`MAX_FRAME`] bytes. The server reads them with the reader of
//!   `periscope ingest`, applies the valid ones in one durable transaction and, once it is
//!   committed, answers with one JSON line — the acknowledgement:
//!   `{"applied":…,"superseded":…,"ignored":…,"hosts_written":…,"domain_scans_written":…,
//!   "rejected":[[line,"field","reason"],…]}` (`line`: 1-based within the frame);
//! - an empty frame asks for the store's sizes: `{"hosts":…,"domain_scans":…,"file_bytes":…}`;
//! - on any error the server answers `{"error":"…"}` and closes the connection; nothing of
//!   the failed batch is stored. A client that goes away mid-frame loses that frame only.

use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use periscope_index::LiveIndex;
use periscope_index::durable::{BatchSummary, StoreStats};
use periscope_model::Timestamp;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

use crate::lines::{ObservationLines, Parsed, Rejection};

/// The socket file inside the data directory.
pub const SOCKET_FILE: &str = "ingest.sock";
/// What a client sends first: the protocol and its version.
pub const MAGIC: &[u8] = b"periscope-ingest 1\n";
/// The largest batch frame a server accepts.
pub const MAX_FRAME: usize = 256 << 20;
/// A client sends a batch once its lines reach this size, even when it holds fewer
/// observations than `--batch`, so a frame stays far below [`MAX_FRAME`].
pub const FRAME_TARGET: usize = 64 << 20;

/// What the server did with one batch.
#[derive(Debug, Default)]
pub struct Applied {
    /// The store's summary of the transaction.
    pub summary: BatchSummary,
    /// Lines the server rejected (1-based within the frame); the client read them as valid,
    /// so this is rare (a timestamp that is in the future by the server's clock).
    pub rejected: Vec<Rejection>,
}

/// A connection to the ingest socket of a running server (the client side, blocking).
#[derive(Debug)]
pub struct ServerConnection {
    stream: UnixStream,
    replies: BufReader<UnixStream>,
    path: PathBuf,
}

impl ServerConnection {
    /// Connects to the server whose store is in `data`; `None` when none answers there (no
    /// socket file, one left by a server that is gone, or no directory `data` at all: the
    /// caller then opens the store and reports what is wrong with it).
    pub fn connect(data: &Path) -> Result<Option<Self>> {
        let path = data.join(SOCKET_FILE);
        let cannot = || format!("cannot use the ingest socket {}", path.display());
        let mut stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e).with_context(cannot),
        };
        stream.write_all(MAGIC).with_context(cannot)?;
        let replies = BufReader::new(stream.try_clone().with_context(cannot)?);
        Ok(Some(Self {
            stream,
            replies,
            path,
        }))
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends one batch of observation lines (each ending in `\n`) and waits for its
    /// acknowledgement.
    pub fn apply(&mut self, lines: &[u8]) -> Result<Applied> {
        if lines.is_empty() {
            bail!("an empty batch cannot be sent (an empty frame asks for the store's sizes)");
        }
        if lines.len() > MAX_FRAME {
            bail!(
                "a batch of {} bytes is larger than the server accepts ({MAX_FRAME})",
                lines.len()
            );
        }
        let reply = self.exchange(lines)?;
        let mut applied = Applied {
            summary: BatchSummary {
                applied: number(&reply, "applied")?,
                superseded: number(&reply, "superseded")?,
                ignored: number(&reply, "ignored")?,
                hosts_written: number(&reply, "hosts_written")?,
                domain_scans_written: number(&reply, "domain_scans_written")?,
            },
            rejected: Vec::new(),
        };
        let rejected = reply
            .get("rejected")
            .and_then(Value::as_array)
            .ok_or_else(|| anyhow!("the server's answer has no rejected list: {reply}"))?;
        for entry in rejected {
            let parts = (
                entry.get(0).and_then(Value::as_u64),
                entry.get(1).and_then(Value::as_str),
                entry.get(2).and_then(Value::as_str),
            );
            let (Some(line), Some(field), Some(reason)) = parts else {
                bail!("the server's answer has a malformed rejection: {entry}");
            };
            applied.rejected.push(Rejection {
                line,
                field: field.to_owned(),
                reason: reason.to_owned(),
            });
        }
        Ok(applied)
    }

    /// The sizes of the server's store.
    pub fn stats(&mut self) -> Result<StoreStats> {
        let reply = self.exchange(&[])?;
        Ok(StoreStats {
            hosts: number(&reply, "hosts")?,
            domain_scans: number(&reply, "domain_scans")?,
            file_bytes: number(&reply, "file_bytes")?,
        })
    }

    /// Sends one frame and reads the one-line JSON answer; an `error` answer is an error.
    fn exchange(&mut self, frame: &[u8]) -> Result<Value> {
        let lost = || {
            format!(
                "the running server stopped answering on {}",
                self.path.display()
            )
        };
        let len = u32::try_from(frame.len()).map_err(|_| anyhow!("frame too large"))?;
        self.stream
            .write_all(&len.to_be_bytes())
            .and_then(|()| self.stream.write_all(frame))
            .with_context(lost)?;
        let mut line = String::new();
        if self.replies.read_line(&mut line).with_context(lost)? == 0 {
            bail!("{} (connection closed)", lost());
        }
        let reply: Value = serde_json::from_str(&line)
            .with_context(|| format!("the server's answer is not JSON: {line:?}"))?;
        if let Some(message) = reply.get("error") {
            let message = message.as_str().unwrap_or("(no message)");
            bail!("the running server refused the batch: {message}");
        }
        Ok(reply)
    }
}

/// Member `name` of an answer, as a whole number.
fn number(reply: &Value, name: &str) -> Result<u64> {
    reply
        .get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("the server's answer has no number {name:?}: {reply}"))
}

/// Listens on the ingest socket of the data directory `data`. The caller holds the store
/// (its lock), so a socket file already there was left by a server that is gone and is
/// replaced. Only the owner may connect (mode 0600).
pub fn bind(data: &Path) -> Result<(UnixListener, PathBuf)> {
    let path = data.join(SOCKET_FILE);
    match fs::remove_file(&path) {
        Ok(()) => tracing::info!(socket = %path.display(), "replaced a stale ingest socket"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot remove the old {}", path.display()));
        }
    }
    let listener = UnixListener::bind(&path)
        .with_context(|| format!("cannot listen on the ingest socket {}", path.display()))?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict the ingest socket {}", path.display()))?;
    Ok((listener, path))
}

/// The time observations are checked against (timestamps may not be in the future).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Told how long each batch took to apply (the `/metrics` ingest histogram).
pub type OnBatch = Arc<dyn Fn(std::time::Duration) + Send + Sync>;

/// Accepts ingest connections until the task is dropped; each is served on its own task
/// (their batches are applied one at a time by the store's lock).
pub async fn serve(listener: UnixListener, live: Arc<LiveIndex>, clock: Clock, on_batch: OnBatch) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(
                    stream,
                    Arc::clone(&live),
                    Arc::clone(&clock),
                    Arc::clone(&on_batch),
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, "the ingest socket could not accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Accepts ingest connections until the task is dropped and refuses each with `message`
/// (a server whose index is not in its data directory: ClickHouse). The client's first
/// batch gets `{"error": message}`; what it sends is read and dropped until it hangs up, so
/// it reads the answer rather than a broken pipe.
pub async fn refuse(listener: UnixListener, message: String) {
    let mut reply = json!({ "error": message }).to_string();
    reply.push('\n');
    let reply: Arc<str> = reply.into();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let reply = Arc::clone(&reply);
                tokio::spawn(async move {
                    let (mut input, mut output) = stream.into_split();
                    tracing::warn!("ingest connection refused: the scan index is ClickHouse");
                    let _ = output.write_all(reply.as_bytes()).await;
                    let drain = async {
                        let mut sink = vec![0u8; 64 << 10];
                        while matches!(input.read(&mut sink).await, Ok(n) if n > 0) {}
                    };
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), drain).await;
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "the ingest socket could not accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Counts of one connection, for its log line.
#[derive(Debug, Default)]
struct Served {
    batches: u64,
    applied: u64,
    rejected: u64,
}

async fn connection(
    stream: tokio::net::UnixStream,
    live: Arc<LiveIndex>,
    clock: Clock,
    on_batch: OnBatch,
) {
    let (mut input, mut output) = stream.into_split();
    let mut served = Served::default();
    tracing::info!("ingest connection opened");
    match exchange_frames(
        &mut input,
        &mut output,
        &live,
        &clock,
        &on_batch,
        &mut served,
    )
    .await
    {
        Ok(()) => tracing::info!(
            batches = served.batches,
            applied = served.applied,
            rejected = served.rejected,
            "ingest connection closed"
        ),
        Err(e) => {
            let message = format!("{e:#}");
            tracing::warn!(
                error = %message,
                batches = served.batches,
                "ingest connection ended by an error"
            );
            let mut reply = json!({ "error": message }).to_string();
            reply.push('\n');
            // The client may be gone already.
            let _ = output.write_all(reply.as_bytes()).await;
        }
    }
}

async fn exchange_frames(
    input: &mut tokio::net::unix::OwnedReadHalf,
    output: &mut tokio::net::unix::OwnedWriteHalf,
    live: &Arc<LiveIndex>,
    clock: &Clock,
    on_batch: &OnBatch,
    served: &mut Served,
) -> Result<()> {
    let mut magic = vec![0; MAGIC.len()];
    input
        .read_exact(&mut magic)
        .await
        .context("reading the protocol line")?;
    if magic != MAGIC {
        bail!(
            "this server speaks {:?}; the client sent {:?}",
            String::from_utf8_lossy(MAGIC).trim_end(),
            String::from_utf8_lossy(&magic)
        );
    }
    loop {
        let mut len = [0u8; 4];
        match input.read_exact(&mut len).await {
            Ok(_) => {}
            // The client hung up between frames: a normal end.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e).context("reading a frame length"),
        }
        let len = u32::from_be_bytes(len) as usize;
        let reply = if len == 0 {
            let live = Arc::clone(live);
            let stats = tokio::task::spawn_blocking(move || live.with_store(|s| s.stats()))
                .await
                .context("the store thread failed")?
                .context("reading the store's sizes")?;
            json!({
                "hosts": stats.hosts,
                "domain_scans": stats.domain_scans,
                "file_bytes": stats.file_bytes,
            })
        } else {
            if len > MAX_FRAME {
                bail!("a frame of {len} bytes is larger than the limit of {MAX_FRAME}");
            }
            let mut lines = vec![0; len];
            input.read_exact(&mut lines).await.context(
                "reading a batch (the client went away mid-batch; nothing of it was applied)",
            )?;
            let live = Arc::clone(live);
            let now = clock();
            let started = std::time::Instant::now();
            let (summary, rejected) =
                tokio::task::spawn_blocking(move || apply_lines(&live, &lines, now))
                    .await
                    .context("the store thread failed")??;
            on_batch(started.elapsed());
            served.batches += 1;
            served.applied += summary.applied;
            served.rejected += rejected.len() as u64;
            let rejected: Vec<Value> = rejected
                .into_iter()
                .map(|r| json!([r.line, r.field, r.reason]))
                .collect();
            json!({
                "applied": summary.applied,
                "superseded": summary.superseded,
                "ignored": summary.ignored,
                "hosts_written": summary.hosts_written,
                "domain_scans_written": summary.domain_scans_written,
                "rejected": rejected,
            })
        };
        let mut reply = reply.to_string();
        reply.push('\n');
        output
            .write_all(reply.as_bytes())
            .await
            .context("answering the client")?;
    }
}

/// Reads the lines of one frame and applies the valid observations in one transaction.
fn apply_lines(
    live: &LiveIndex,
    lines: &[u8],
    now: Timestamp,
) -> Result<(BatchSummary, Vec<Rejection>)> {
    let mut reader = ObservationLines::new(lines, now);
    let mut observations = Vec::new();
    let mut rejected = Vec::new();
    while let Some(parsed) = reader.next_line().context("reading the batch")? {
        match parsed {
            Parsed::Blank => {}
            Parsed::Observation(obs) => observations.push(obs),
            Parsed::Rejected(r) => rejected.push(r),
        }
    }
    let summary = live
        .apply_batch(&observations)
        .map_err(anyhow::Error::new)
        .context("applying the batch")?;
    Ok((summary, rejected))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use super::*;
    use periscope_index::IndexConfig;
    use periscope_testkit::Scratch;

    const NOW: i64 = 1_795_000_000; // 2026-11-18

    fn line(ip: &str, observed_at: i64) -> String {
        let at = Timestamp::from_unix(observed_at).unwrap();
        format!(
            r#"{{"kind":"service","ip":"{ip}","port":22,"transport":"tcp","protocol":"ssh","observed_at":"{at}","status":"completed"}}"#
        )
    }

    fn scratch(name: &str) -> Scratch {
        Scratch::new(&format!("ingest-socket-{name}"))
    }

    /// A server on `dir` whose clock says `server_now`; returns the index and the runtime
    /// serving the socket (dropping it stops the server).
    fn server(dir: &Path, server_now: i64) -> (Arc<LiveIndex>, tokio::runtime::Runtime) {
        let now = Timestamp::from_unix(server_now).unwrap();
        let (live, _) =
            LiveIndex::open(&dir.join("scan.store"), IndexConfig::default(), now).unwrap();
        let live = Arc::new(live);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (listener, path) = runtime.block_on(async { bind(dir) }).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only the owner may connect");
        runtime.spawn(serve(
            listener,
            Arc::clone(&live),
            Arc::new(move || now),
            Arc::new(|_| {}),
        ));
        (live, runtime)
    }

    #[test]
    fn batches_are_applied_acknowledged_and_counted() {
        let dir = scratch("apply");
        // The server's clock is three hours behind: a line from a minute ago is more than the
        // allowed hour in its future.
        let (live, _runtime) = server(&dir, NOW - 10_800);
        let mut client = ServerConnection::connect(&dir).unwrap().expect("a server");
        let mut batch = String::new();
        for (ip, at) in [
            ("240.0.0.1", NOW - 11_000),
            ("240.0.0.2", NOW - 11_000),
            ("240.0.0.3", NOW - 60),
        ] {
            batch.push_str(&line(ip, at));
            batch.push('\n');
        }
        let applied = client.apply(batch.as_bytes()).unwrap();
        assert_eq!(applied.summary.applied, 2);
        assert_eq!(applied.summary.hosts_written, 2);
        assert_eq!(applied.rejected.len(), 1, "{:?}", applied.rejected);
        assert_eq!(applied.rejected[0].line, 3);
        assert_eq!(applied.rejected[0].field, "observed_at");

        // The same batch again changes nothing: the observations are already current.
        let again = client.apply(batch.as_bytes()).unwrap();
        assert_eq!(again.summary.applied, 0);
        assert_eq!(again.summary.superseded, 2);
        assert_eq!(again.summary.hosts_written, 0);

        let stats = client.stats().unwrap();
        assert_eq!(stats.hosts, 2);
        assert_eq!(live.with_store(|s| s.stats().unwrap().hosts), 2);
        assert!(live.is_stale(), "the next refresh picks the batches up");
    }

    #[test]
    fn a_refused_frame_is_an_error_and_stores_nothing() {
        let dir = scratch("refused");
        let (live, _runtime) = server(&dir, NOW);
        // A frame over the limit: the server answers with an error and closes.
        let mut client = ServerConnection::connect(&dir).unwrap().expect("a server");
        let too_big = u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes();
        client.stream.write_all(&too_big).unwrap();
        let mut reply = String::new();
        client.replies.read_line(&mut reply).unwrap();
        assert!(reply.contains("larger than the limit"), "{reply}");

        // Another protocol version is refused before any frame.
        let mut stream = UnixStream::connect(dir.join(SOCKET_FILE)).unwrap();
        stream.write_all(b"periscope-ingest 9\n").unwrap();
        let mut reply = String::new();
        BufReader::new(stream).read_line(&mut reply).unwrap();
        assert!(reply.contains("periscope-ingest 1"), "{reply}");

        // A client that goes away mid-frame loses that frame only.
        let mut client = ServerConnection::connect(&dir).unwrap().expect("a server");
        let whole = format!("{}\n", line("240.0.0.9", NOW - 60));
        let len = u32::try_from(whole.len()).unwrap().to_be_bytes();
        client.stream.write_all(&len).unwrap();
        client.stream.write_all(&whole.as_bytes()[..10]).unwrap();
        drop(client);
        let mut client = ServerConnection::connect(&dir).unwrap().expect("a server");
        assert_eq!(client.stats().unwrap().hosts, 0);
        assert_eq!(live.with_store(|s| s.stats().unwrap().hosts), 0);
    }

    #[test]
    fn no_server_means_no_connection() {
        let dir = scratch("absent");
        assert!(ServerConnection::connect(&dir).unwrap().is_none());
        // A socket file left by a server that is gone: nobody answers on it.
        drop(std::os::unix::net::UnixListener::bind(dir.join(SOCKET_FILE)).unwrap());
        assert!(dir.join(SOCKET_FILE).exists());
        assert!(ServerConnection::connect(&dir).unwrap().is_none());
        // A new server replaces it.
        let (_live, _runtime) = server(&dir, NOW);
        assert!(ServerConnection::connect(&dir).unwrap().is_some());
    }
}
