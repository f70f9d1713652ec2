//! The synthetic internet (being written).
