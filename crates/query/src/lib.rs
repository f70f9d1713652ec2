//! The Periscope query language (being written).
