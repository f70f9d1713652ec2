//! The observation line reader `ingest` and `validate` share lives in
//! `periscope_server::lines` (the server's ingest socket reads with it too); this module keeps
//! the commands' `crate::lines::…` paths.

pub(crate) use periscope_server::lines::*;
