//! What the test suites share: [`free_port`], a loopback port for a server a test starts on a
//! port it names (ClickHouse, PostgreSQL, sshd, nginx, SMTP servers, an OpenID Connect
//! provider), and [`Scratch`], a temporary directory of a test's own that is removed when
//! dropped. A dev-dependency only; nothing of the product uses it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback TCP port that is free now and that the kernel does not hand out on its own: one
/// below Linux's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768–60999 by
/// default), for a server a test starts later on it.
///
/// A port the kernel picked for `bind(0)` and that was closed again is one it may give to the
/// next outgoing connection, whose local port then takes it before the server binds it
/// ("Address already in use"); below the ephemeral range only a process that names the port can
/// take it. Ports are taken in turn from a point that depends on the process id, so the test
/// processes that run at once start apart, and each is checked free by binding it.
///
/// # Panics
/// When no port of the range is free.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let ephemeral_start = ephemeral_start();
    let first = 10_000_u32.min(ephemeral_start / 2);
    let span = ephemeral_start.saturating_sub(first).max(1);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..span {
        let port = u16::try_from(first + NEXT.fetch_add(1, Ordering::Relaxed) % span)
            .expect("below the ephemeral range, so below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no loopback port between {first} and {ephemeral_start} is free");
}

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use super::{ephemeral_start, free_port};
    use std::net::TcpListener;

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        for (i, port) in ports.iter().enumerate() {
            assert!(
                u32::from(*port) < ephemeral_start(),
                "{port} is in the ephemeral range"
            );
            assert!(!ports[..i].contains(port), "{port} handed out twice");
            TcpListener::bind(("127.0.0.1", *port))
                .unwrap_or_else(|e| panic!("{port} was handed out but cannot be bound: {e}"));
        }
    }
}

/// A directory of a test's own under the system temporary directory, removed with what it
/// holds when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new, empty `periscope-{name}-{pid}` directory (one left by an earlier process of the
    /// same id is emptied first).
    ///
    /// # Panics
    /// When the directory cannot be created.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("periscope-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory can be created");
        Self(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
