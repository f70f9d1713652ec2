//! Word lists for invented organisation names ("Northwind Traders Ltd", "Stonebridge
//! Telecom", "University of Ashgrove").
//!
//! The first words are invented compounds of plain English words, chosen so that a generated
//! name is unlikely to name a real organisation; every name gets a `.example` domain, so even a
//! coincidence never points at a real site.

/// First words of names; also place names for universities and public bodies.
pub(crate) static FIRST: &[&str] = &[
    "Northwind",
    "Bluegill",
    "Amberfield",
    "Brightwater",
    "Cedarline",
    "Driftwood",
    "Eastgate",
    "Fernhill",
    "Foxglove",
    "Glenmoor",
    "Harborview",
    "Hollowell",
    "Kestrel",
    "Lakemont",
    "Larkspur",
    "Maplewood",
    "Meadowbrook",
    "Millbrook",
    "Moonstone",
    "Nettlefield",
    "Oakhaven",
    "Pinecrest",
    "Quarrytown",
    "Ravenholm",
    "Riverbend",
    "Rosehip",
    "Saltmarsh",
    "Sandpiper",
    "Shorewood",
    "Stonebridge",
    "Summerfield",
    "Sunridge",
    "Thornbury",
    "Underhill",
    "Valewood",
    "Whitecliff",
    "Willowmere",
    "Windmere",
    "Wrenfield",
    "Yarrowby",
    "Alderbank",
    "Ashgrove",
    "Birchwood",
    "Blackthorn",
    "Bramblecot",
    "Briarwood",
    "Clearbrook",
    "Coldspring",
    "Crowhurst",
    "Elmstead",
    "Emberly",
    "Fairhaven",
    "Falconridge",
    "Frostvale",
    "Glimmerdale",
    "Heatherton",
    "Highmoor",
    "Hollyford",
    "Kingsmere",
    "Lindenhall",
    "Nightjar",
    "Pebblebrook",
    "Quillon",
    "Redfern",
    "Rookwood",
    "Saffronby",
    "Tamarack",
    "Thistledown",
    "Umberfield",
    "Wexley",
    "Whistledown",
    "Yellowpine",
    "Zinnford",
    "Ambergate",
    "Bellwether",
    "Calderwood",
    "Dovecote",
    "Eldermoor",
    "Goosefoot",
    "Hazelmere",
    "Inglenook",
    "Kittiwake",
    "Lanternfield",
    "Mossbank",
    "Northcombe",
    "Otterburn",
    "Pennyroyal",
    "Quailridge",
    "Rushmere",
    "Sedgewick",
    "Teasel",
    "Brackenholt",
    "Cindervale",
    "Duskmere",
    "Fenwold",
    "Gorsebrook",
    "Hartsfell",
    "Quenby",
    "Sallowmere",
    "Wrackley",
    "Yewdale",
    "Thimbleby",
    "Ashcombe",
    "Brindlemoor",
    "Coppergate",
    "Emberfold",
    "Gannetby",
    "Larchmere",
    "Mirewood",
    "Pellham",
    "Wolderby",
];

/// Second words of company names.
pub(crate) static COMPANY: &[&str] = &[
    "Traders",
    "Analytics",
    "Logistics",
    "Foods",
    "Insurance",
    "Robotics",
    "Pharma",
    "Textiles",
    "Motors",
    "Consulting",
    "Software",
    "Media",
    "Energy",
    "Shipping",
    "Labs",
    "Outfitters",
    "Biotech",
    "Instruments",
    "Capital",
    "Holdings",
    "Systems",
    "Dynamics",
    "Industries",
    "Bakeries",
    "Brewing",
    "Furniture",
    "Health",
    "Travel",
    "Legal",
    "Architects",
    "Engineering",
    "Mining",
    "Solar",
    "Marine",
    "Aerospace",
    "Retail",
    "Games",
    "Studios",
    "Publishing",
    "Security",
    "Farms",
    "Apparel",
    "Chemicals",
    "Packaging",
    "Optics",
    "Plastics",
    "Tools",
    "Freight",
    "Water",
    "Clinics",
];

/// Second words of cloud providers.
pub(crate) static CLOUD: &[&str] = &["Cloud", "Compute", "Cloud Services", "Cloud Platform"];

/// Second words of hosting providers.
pub(crate) static HOSTING: &[&str] = &[
    "Hosting",
    "Data Centers",
    "Servers",
    "Web Services",
    "Colocation",
    "Internet Services",
];

/// Second words of internet service providers.
pub(crate) static ISP: &[&str] = &[
    "Telecom",
    "Broadband",
    "Communications",
    "Fiber",
    "Networks",
    "Telekom",
    "Internet",
];

/// Patterns of university names; `{}` is a place name.
pub(crate) static UNIVERSITY: &[&str] = &[
    "University of {}",
    "{} University",
    "{} Institute of Technology",
    "{} State University",
    "{} College",
];

/// Patterns of public bodies and non-profits; `{}` is a place name.
pub(crate) static PUBLIC: &[&str] = &[
    "{} City Council",
    "{} County Administration",
    "{} Regional Health Authority",
    "{} Foundation",
    "{} Public Library",
    "{} Water Board",
];

/// Labels of web hosts.
pub(crate) const WEB_LABELS: &[&str] = &[
    "www", "shop", "portal", "app", "api", "intranet", "blog", "cdn", "static", "status",
    "support", "docs", "login", "careers", "extranet",
];

/// Labels of mail hosts.
pub(crate) const MAIL_LABELS: &[&str] = &["mail", "smtp", "mx1", "mx2", "imap", "webmail", "mx"];

/// Labels of shell, build and developer hosts.
pub(crate) const SHELL_LABELS: &[&str] = &["bastion", "git", "dev", "build", "ci", "jump", "ops"];

/// Labels of database hosts.
pub(crate) const DB_LABELS: &[&str] = &["db", "sql", "cache", "data", "pg", "mysql"];

/// Labels of Windows servers.
pub(crate) const WINDOWS_LABELS: &[&str] = &["rdp", "ts", "dc", "files", "erp", "citrix"];

/// Labels of VPN gateways.
pub(crate) const VPN_LABELS: &[&str] = &["vpn", "remote", "gw", "sslvpn", "access"];

/// Labels of infrastructure hosts.
pub(crate) const INFRA_LABELS: &[&str] = &["ns1", "ns2", "ntp", "ldap", "monitor", "router"];

/// Labels of devices (cameras, controllers).
pub(crate) const DEVICE_LABELS: &[&str] = &["cam", "nvr", "plc", "hmi", "bms", "door"];

/// University departments, as subdomains.
pub(crate) const DEPARTMENTS: &[&str] = &["cs", "physics", "library", "med", "eng", "math"];
