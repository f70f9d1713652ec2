//! Where a ClickHouse scan index lives, as an operator writes it: `--index` and `[index] url`.
//!
//! ```text
//! clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]        HTTP, port 8123 by default
//! clickhouse+https://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]  HTTPS, port 8443 by default
//! ```
//!
//! `HOST` is any node of the cluster (its HTTP interface); `DATABASE` holds the tables
//! `periscope clickhouse init` made; `cluster` names the `remote_servers` cluster the
//! Distributed tables span (default [`DEFAULT_CLUSTER`]). A password never goes in the URL
//! (it would show in process listings and logs): it comes from the environment or a file.

use std::fmt;
use std::str::FromStr;

use crate::sql;

/// The cluster name used when the URL names none.
pub const DEFAULT_CLUSTER: &str = "periscope";

/// A parsed ClickHouse index location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The node's HTTP endpoint, `http://host:port` or `https://host:port`.
    pub endpoint: String,
    /// The database holding the tables.
    pub database: String,
    /// The `remote_servers` cluster the Distributed tables span.
    pub cluster: String,
    /// The ClickHouse user, when not the server's default.
    pub user: Option<String>,
}

/// Why a location was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    /// Not a URL at all.
    #[error(
        "{url:?} is not a ClickHouse URL ({reason}); expected clickhouse://HOST[:PORT]/DATABASE"
    )]
    Syntax {
        /// What was given.
        url: String,
        /// The parser's reason.
        reason: String,
    },
    /// Another scheme.
    #[error(
        "{url:?} has scheme {scheme:?}; a ClickHouse index is clickhouse://… (HTTP) or clickhouse+https://…"
    )]
    Scheme {
        /// What was given.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A part that must be there is missing or not allowed.
    #[error("{url:?}: {problem}")]
    Part {
        /// What was given.
        url: String,
        /// What is wrong.
        problem: String,
    },
}

impl Location {
    /// True when the URL has this module's schemes (so callers can tell a ClickHouse index
    /// from another kind before parsing it whole).
    pub fn is_clickhouse(url: &str) -> bool {
        let scheme = url.split_once("://").map_or("", |(s, _)| s);
        scheme.eq_ignore_ascii_case("clickhouse") || scheme.eq_ignore_ascii_case("clickhouse+https")
    }
}

impl FromStr for Location {
    type Err = LocationError;

    fn from_str(text: &str) -> Result<Self, LocationError> {
        let part = |problem: &str| LocationError::Part {
            url: text.to_owned(),
            problem: problem.to_owned(),
        };
        let url = reqwest::Url::parse(text).map_err(|e| LocationError::Syntax {
            url: text.to_owned(),
            reason: e.to_string(),
        })?;
        let (http, default_port) = match url.scheme() {
            "clickhouse" => ("http", 8123),
            "clickhouse+https" => ("https", 8443),
            other => {
                return Err(LocationError::Scheme {
                    url: text.to_owned(),
                    scheme: other.to_owned(),
                });
            }
        };
        if url.password().is_some() {
            return Err(part(
                "a password does not go in the URL; set PERISCOPE_INDEX_PASSWORD or [index] password_file",
            ));
        }
        // An IPv6 host comes bracketed, as the endpoint needs it.
        let host = match url.host_str() {
            Some(host) if !host.is_empty() => host.to_owned(),
            _ => return Err(part("no host")),
        };
        let port = url.port().unwrap_or(default_port);
        let database = url.path().trim_start_matches('/');
        if database.is_empty() {
            return Err(part("no database: write clickhouse://HOST:PORT/DATABASE"));
        }
        let database = sql::identifier(database).ok_or_else(|| {
            part("the database must be a plain name (letters, digits, underscores)")
        })?;
        let mut cluster = None;
        for (name, value) in url.query_pairs() {
            match name.as_ref() {
                "cluster" if cluster.is_none() => {
                    let value = sql::identifier(&value).ok_or_else(|| {
                        part("the cluster must be a plain name (letters, digits, underscores)")
                    })?;
                    cluster = Some(value.to_owned());
                }
                "cluster" => return Err(part("cluster is given twice")),
                other => {
                    return Err(part(&format!(
                        "unknown parameter {other:?} (the only one is cluster)"
                    )));
                }
            }
        }
        if url.fragment().is_some() {
            return Err(part("a fragment (#…) means nothing here"));
        }
        let user = match url.username() {
            "" => None,
            user => {
                Some(percent_decode(user).ok_or_else(|| part("the user name is not valid UTF-8"))?)
            }
        };
        Ok(Self {
            endpoint: format!("{http}://{host}:{port}"),
            database: database.to_owned(),
            cluster: cluster.unwrap_or_else(|| DEFAULT_CLUSTER.to_owned()),
            user,
        })
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl fmt::Display for Location {
    /// The location as a URL again (no password: there is none in it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = self
            .endpoint
            .split_once("://")
            .map_or(("http", self.endpoint.as_str()), |(s, r)| (s, r));
        let scheme = if scheme == "https" {
            "clickhouse+https"
        } else {
            "clickhouse"
        };
        let user = self
            .user
            .as_deref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        write!(
            f,
            "{scheme}://{user}{rest}/{}?cluster={}",
            self.database, self.cluster
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> Result<Location, LocationError> {
        text.parse()
    }

    #[test]
    fn reads_every_part() {
        let l = parse("clickhouse://reader@ch1.example:9123/scans?cluster=edge").unwrap();
        assert_eq!(l.endpoint, "http://ch1.example:9123");
        assert_eq!(l.database, "scans");
        assert_eq!(l.cluster, "edge");
        assert_eq!(l.user.as_deref(), Some("reader"));
        assert_eq!(
            l.to_string(),
            "clickhouse://reader@ch1.example:9123/scans?cluster=edge"
        );
    }

    #[test]
    fn defaults_port_cluster_and_user() {
        let l = parse("clickhouse://127.0.0.1/periscope").unwrap();
        assert_eq!(l.endpoint, "http://127.0.0.1:8123");
        assert_eq!(l.cluster, DEFAULT_CLUSTER);
        assert_eq!(l.user, None);
        let l = parse("clickhouse+https://[::1]/p").unwrap();
        assert_eq!(l.endpoint, "https://[::1]:8443");
    }

    #[test]
    fn refuses_what_it_cannot_mean() {
        for (text, says) in [
            ("http://h:8123/db", "scheme"),
            ("clickhouse://h:8123", "no database"),
            ("clickhouse://h:8123/", "no database"),
            ("clickhouse://h:8123/db;drop", "plain name"),
            ("clickhouse://h:8123/a/b", "plain name"),
            ("clickhouse://u:secret@h/db", "password"),
            ("clickhouse://h/db?cluster=x%3By", "plain name"),
            ("clickhouse://h/db?cluster=a&cluster=b", "twice"),
            ("clickhouse://h/db?shard=1", "unknown parameter"),
            ("clickhouse://h/db#x", "fragment"),
            ("clickhouse:///db", "no host"),
            ("not a url", "not a ClickHouse URL"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn tells_clickhouse_urls_apart() {
        assert!(Location::is_clickhouse("clickhouse://h/db"));
        assert!(Location::is_clickhouse("ClickHouse+HTTPS://h/db"));
        assert!(!Location::is_clickhouse("/var/lib/periscope"));
        assert!(!Location::is_clickhouse("http://h/db"));
    }
}
