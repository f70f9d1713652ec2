//! A minimal authoritative DNS server on 127.0.0.1 for the resolver tests.
//!
//! It answers A and AAAA questions from a [`Zone`] over UDP and TCP (same port): addresses, an
//! empty NOERROR, NXDOMAIN, SERVFAIL, REFUSED, or nothing at all (to force a timeout). An
//! entry can also answer UDP with the truncation bit set, so the client has to ask over TCP.
//! Names missing from the zone are NXDOMAIN. Only the loopback interface is used.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::JoinHandle;

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;

const NOERROR: u16 = 0;
const SERVFAIL: u16 = 2;
const NXDOMAIN: u16 = 3;
const REFUSED: u16 = 5;

/// What the server does with one question.
#[derive(Debug, Clone)]
pub enum Reply {
    /// NOERROR with these records (an empty list: NOERROR with no answer).
    Records(Vec<IpAddr>),
    NxDomain,
    ServFail,
    Refused,
    /// Never answers.
    Silent,
}

/// The replies for one name: to its A question and to its AAAA question.
#[derive(Debug, Clone)]
pub struct Entry {
    pub a: Reply,
    pub aaaa: Reply,
    /// Over UDP, answer with the truncation bit and no records (TCP gets the full answer).
    pub truncate_udp: bool,
}

impl Entry {
    /// NOERROR answers: the IPv4 addresses to A, the IPv6 ones to AAAA.
    pub fn records(list: &[&str]) -> Self {
        let ips: Vec<IpAddr> = list.iter().map(|s| s.parse().unwrap()).collect();
        Self {
            a: Reply::Records(ips.iter().copied().filter(IpAddr::is_ipv4).collect()),
            aaaa: Reply::Records(ips.iter().copied().filter(IpAddr::is_ipv6).collect()),
            truncate_udp: false,
        }
    }

    /// The same reply to both questions.
    pub fn both(reply: Reply) -> Self {
        Self::split(reply.clone(), reply)
    }

    /// One reply to A, another to AAAA.
    pub fn split(a: Reply, aaaa: Reply) -> Self {
        Self {
            a,
            aaaa,
            truncate_udp: false,
        }
    }
}

/// Names (lower case, no trailing dot) and their replies.
#[derive(Debug, Clone, Default)]
pub struct Zone(HashMap<String, Entry>);

impl Zone {
    pub fn with(mut self, name: &str, entry: Entry) -> Self {
        self.0.insert(name.to_owned(), entry);
        self
    }
}

/// A running server; stops when dropped.
pub struct DnsServer {
    pub addr: SocketAddr,
    pub udp_questions: Arc<AtomicUsize>,
    pub tcp_questions: Arc<AtomicUsize>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl DnsServer {
    /// Binds UDP and TCP on the same random loopback port and serves `zone`.
    pub async fn start(zone: Zone) -> Self {
        let (udp, tcp) = bind_pair().await;
        let addr = udp.local_addr().unwrap();
        let zone = Arc::new(zone);
        let udp_questions = Arc::new(AtomicUsize::new(0));
        let tcp_questions = Arc::new(AtomicUsize::new(0));
        let udp_task = tokio::spawn(serve_udp(udp, zone.clone(), udp_questions.clone()));
        let tcp_task = tokio::spawn(serve_tcp(tcp, zone, tcp_questions.clone()));
        Self {
            addr,
            udp_questions,
            tcp_questions,
            tasks: vec![udp_task, tcp_task],
        }
    }
}

async fn bind_pair() -> (UdpSocket, TcpListener) {
    for _ in 0..50 {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = udp.local_addr().unwrap().port();
        if let Ok(tcp) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            return (udp, tcp);
        }
    }
    panic!("no loopback port free for both UDP and TCP");
}

async fn serve_udp(socket: UdpSocket, zone: Arc<Zone>, count: Arc<AtomicUsize>) {
    let mut buf = [0u8; 4096];
    loop {
        let Ok((len, peer)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        count.fetch_add(1, Ordering::SeqCst);
        if let Some(reply) = answer(&zone, &buf[..len], Transport::Udp) {
            let _ = socket.send_to(&reply, peer).await;
        }
    }
}

async fn serve_tcp(listener: TcpListener, zone: Arc<Zone>, count: Arc<AtomicUsize>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(serve_tcp_connection(stream, zone.clone(), count.clone()));
    }
}

async fn serve_tcp_connection(mut stream: TcpStream, zone: Arc<Zone>, count: Arc<AtomicUsize>) {
    loop {
        let Ok(len) = stream.read_u16().await else {
            return;
        };
        let mut message = vec![0u8; usize::from(len)];
        if stream.read_exact(&mut message).await.is_err() {
            return;
        }
        count.fetch_add(1, Ordering::SeqCst);
        if let Some(reply) = answer(&zone, &message, Transport::Tcp) {
            let framed_len = u16::try_from(reply.len()).unwrap();
            if stream.write_u16(framed_len).await.is_err()
                || stream.write_all(&reply).await.is_err()
            {
                return;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// A parsed question.
struct Question<'a> {
    id: u16,
    flags: u16,
    /// The question section as received (name, type, class), echoed in the reply.
    raw: &'a [u8],
    name: String,
    qtype: u16,
}

fn parse(message: &[u8]) -> Option<Question<'_>> {
    let header = message.get(..12)?;
    let id = u16::from_be_bytes([header[0], header[1]]);
    let flags = u16::from_be_bytes([header[2], header[3]]);
    let qdcount = u16::from_be_bytes([header[4], header[5]]);
    if qdcount != 1 {
        return None;
    }
    let mut pos = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*message.get(pos)?);
        pos += 1;
        if len == 0 {
            break;
        }
        if len & 0xc0 != 0 {
            return None; // no compression in questions
        }
        labels.push(std::str::from_utf8(message.get(pos..pos + len)?).ok()?);
        pos += len;
    }
    let qtype = u16::from_be_bytes([*message.get(pos)?, *message.get(pos + 1)?]);
    let end = pos + 4;
    Some(Question {
        id,
        flags,
        raw: message.get(12..end)?,
        name: labels.join(".").to_ascii_lowercase(),
        qtype,
    })
}

/// The reply to one message, or `None` to stay silent.
fn answer(zone: &Zone, message: &[u8], transport: Transport) -> Option<Vec<u8>> {
    let question = parse(message)?;
    let Some(entry) = zone.0.get(&question.name) else {
        return Some(build(&question, NXDOMAIN, &[], false));
    };
    let reply = match question.qtype {
        TYPE_A => &entry.a,
        TYPE_AAAA => &entry.aaaa,
        _ => &Reply::Records(Vec::new()),
    };
    Some(match reply {
        Reply::Silent => return None,
        Reply::NxDomain => build(&question, NXDOMAIN, &[], false),
        Reply::ServFail => build(&question, SERVFAIL, &[], false),
        Reply::Refused => build(&question, REFUSED, &[], false),
        Reply::Records(_) if entry.truncate_udp && transport == Transport::Udp => {
            build(&question, NOERROR, &[], true)
        }
        Reply::Records(records) => build(&question, NOERROR, records, false),
    })
}

fn build(question: &Question<'_>, rcode: u16, records: &[IpAddr], truncated: bool) -> Vec<u8> {
    // QR, the query's opcode and RD, AA, RA, the response code; TC when asked.
    let mut flags = 0x8000 | (question.flags & 0x7900) | 0x0400 | 0x0080 | rcode;
    if truncated {
        flags |= 0x0200;
    }
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&question.id.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    let ancount = u16::try_from(records.len()).unwrap();
    for count in [1, ancount, 0, 0] {
        out.extend_from_slice(&count.to_be_bytes());
    }
    out.extend_from_slice(question.raw);
    for record in records {
        out.extend_from_slice(&[0xc0, 0x0c]); // the name of the question
        let (rtype, data) = match record {
            IpAddr::V4(v4) => (TYPE_A, v4.octets().to_vec()),
            IpAddr::V6(v6) => (TYPE_AAAA, v6.octets().to_vec()),
        };
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes()); // class IN
        out.extend_from_slice(&60u32.to_be_bytes()); // TTL
        out.extend_from_slice(&u16::try_from(data.len()).unwrap().to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}
