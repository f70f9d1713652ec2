//! The enrichment suite: real GeoLite2 City files from npm (`geolite2`), every vendor's record
//! layout in files written by Debian's MaxMind DB writer (`layouts`), the iptoasn table
//! (`table`), and the files `Enricher::open` refuses (`errors`).

mod errors;
mod geolite2;
mod layouts;
mod support;
mod table;
