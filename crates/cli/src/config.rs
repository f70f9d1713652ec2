//! The configuration every command reads lives in `periscope_server::config` (the server
//! library builds from it); this module keeps the commands' `crate::config::…` paths.

pub(crate) use periscope_server::config::*;
