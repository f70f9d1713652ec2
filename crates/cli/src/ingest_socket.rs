//! Both sides of the ingest socket live in `periscope_server::ingest_socket` (the server
//! library listens on it); `periscope ingest` uses the client side through this module.

pub(crate) use periscope_server::ingest_socket::*;
