//! The fixed tables the generator draws from: places, names, products, protocols, host roles
//! and certificate authorities. Pure data plus small lookups; no randomness lives here.

pub(crate) mod geo;
pub(crate) mod names;
pub(crate) mod products;
pub(crate) mod protocols;
pub(crate) mod roles;
pub(crate) mod tls;
