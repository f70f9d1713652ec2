//! A database outage: the provider's PostgreSQL becomes unreachable (the test cuts a TCP relay
//! of its own between the provider and the test server: every connection closed and the port
//! refusing new ones, as when the server is stopped), and a request that needs the database answers
//! 503 within the acquisition bound (`database_acquire_timeout_ms`, 2 s by default) instead of
//! sqlx's wait; when the relay is back the pool reconnects by itself.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use periscope_state::testing::{Target, on_each_backend};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::registration::try_sign_in;
use crate::support::*;

/// A TCP relay on a loopback port to `upstream` that can be cut (its port closed: new
/// connections are refused, as by a stopped server, and every relayed one is closed) and
/// restored on the same port.
struct Relay {
    port: u16,
    upstream: String,
    accept: Option<JoinHandle<()>>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }
}

impl Relay {
    async fn start(upstream: String) -> Relay {
        let mut relay = Relay {
            // Listened on again after each cut: a port no outgoing connection takes meanwhile.
            port: periscope_testkit::free_port(),
            upstream,
            accept: None,
            links: Arc::new(Mutex::new(Vec::new())),
        };
        relay.listen().await;
        relay
    }

    async fn listen(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.port = listener.local_addr().unwrap().port();
        let (upstream, links) = (self.upstream.clone(), self.links.clone());
        self.accept = Some(tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                links.lock().unwrap().push(link);
            }
        }));
    }

    /// Closes the port and every relayed connection; returns once they are closed.
    async fn cut(&mut self) {
        let mut tasks: Vec<JoinHandle<()>> = self.links.lock().unwrap().drain(..).collect();
        tasks.extend(self.accept.take());
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }

    /// Listens on the same port again.
    async fn restore(&mut self) {
        self.listen().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_answers_503_within_the_acquire_timeout_and_recovers() {
    on_each_backend("outage", |fixture| async move {
        // SQLite is a file in this process: it has no outage to simulate.
        let Target::Postgres(url) = &fixture.target else {
            return;
        };
        let mut through = url::Url::parse(url).unwrap();
        let upstream = format!(
            "{}:{}",
            through.host_str().unwrap(),
            through.port().unwrap_or(5432)
        );
        let mut relay = Relay::start(upstream).await;
        through.set_host(Some("127.0.0.1")).unwrap();
        through.set_port(Some(relay.port)).unwrap();
        let provider = Provider::start(through.as_str(), Options::default()).await;
        let (email, password) = ("olga@example.com", "olga's long passphrase");
        provider
            .register_via_outbox(email, "Olga Oy", password)
            .await;
        let browser = Browser::new();

        relay.cut().await;
        let started = Instant::now();
        let page = try_sign_in(&browser, &provider, email, password).await;
        let took = started.elapsed();
        eprintln!(
            "[outage] sign-in with the database down: {} after {took:?}",
            page.status
        );
        assert_eq!(page.status, 503, "{}", page.body);
        assert!(
            page.body.contains("Sign-in is unavailable just now"),
            "{}",
            page.body
        );
        assert!(
            took < Duration::from_secs(3),
            "the 503 took {took:?}; the acquisition bound is 2 s"
        );

        relay.restore().await;
        let page = try_sign_in(&browser, &provider, email, password).await;
        assert_eq!(page.status, 303, "after the outage: {}", page.body);
        provider.signin.close().await;
    })
    .await;
}
