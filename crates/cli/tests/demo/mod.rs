//! A running `periscope serve --demo` for the suites that ingest into it and search it through
//! the API (`nmap.rs`, `enrich.rs`): start it, post to it, list a search's addresses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::common::command;

/// A running `periscope serve --demo`: its address and key.
pub struct Server {
    child: Child,
    /// `host:port` it listens on.
    pub address: String,
    /// The demo account's API key.
    pub key: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `periscope serve --demo` (300 demo hosts, no DNS) on data directory `data` and waits
/// until it serves.
pub fn serve(data: &str) -> Server {
    let mut child = command(&[
        "serve",
        "--demo",
        "--demo-hosts",
        "300",
        "--data",
        data,
        "--listen",
        "127.0.0.1:0",
    ])
    .env("PERISCOPE_DNS_SERVERS", "127.0.0.1:9")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let (mut address, mut key) = (String::new(), String::new());
    loop {
        let line = lines.recv_timeout(Duration::from_secs(120)).unwrap();
        if let Some(rest) = line.strip_prefix("periscope: serving http://") {
            address = rest.split_whitespace().next().unwrap().to_owned();
        }
        if line.trim().starts_with("psk_") {
            key = line.trim().to_owned();
        }
        if line.starts_with("The demo data is synthetic") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        address,
        key,
    }
}

/// `POST path` with the demo key; the status and the JSON body (null when not JSON).
pub fn post(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(&server.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.address,
        server.key,
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The addresses of the first page of `query`.
pub fn search(server: &Server, query: &str) -> Vec<String> {
    let (status, body) = post(
        server,
        "/v1/search",
        &serde_json::json!({"query": query, "limit": 100}),
    );
    assert_eq!(status, 200, "{query}: {body}");
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ip"].as_str().unwrap().to_owned())
        .collect()
}
