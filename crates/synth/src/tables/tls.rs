//! Invented certificate authorities and the TLS versions and cipher suites a handshake reports.
//!
//! No issuer here is the name of a real CA: a demo must not show a real CA vouching for an
//! invented organisation.

/// A public certificate authority whose certificates browsers trust.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Issuer {
    /// Issuer common name.
    pub common_name: &'static str,
    /// Issuer organisation.
    pub organization: &'static str,
    /// Validity of the certificates it issues, in days.
    pub validity_days: u64,
    /// Domain-validated only: the subject carries no organisation.
    pub domain_validated: bool,
}

/// The public CAs, with their relative share of certificates.
pub(crate) static PUBLIC_CAS: &[(u32, Issuer)] = &[
    (
        30,
        Issuer {
            common_name: "Open Harbor R11",
            organization: "Open Harbor PKI",
            validity_days: 90,
            domain_validated: true,
        },
    ),
    (
        10,
        Issuer {
            common_name: "Open Harbor E6",
            organization: "Open Harbor PKI",
            validity_days: 90,
            domain_validated: true,
        },
    ),
    (
        18,
        Issuer {
            common_name: "Example Trust RSA CA 2024",
            organization: "Example Trust Services",
            validity_days: 397,
            domain_validated: false,
        },
    ),
    (
        8,
        Issuer {
            common_name: "Example Trust ECC CA 2024",
            organization: "Example Trust Services",
            validity_days: 397,
            domain_validated: false,
        },
    ),
    (
        12,
        Issuer {
            common_name: "Lanternfish TLS Issuing CA 2",
            organization: "Lanternfish Certification Ltd",
            validity_days: 365,
            domain_validated: false,
        },
    ),
    (
        8,
        Issuer {
            common_name: "Meridian Secure Server CA G3",
            organization: "Meridian Signing Authority",
            validity_days: 397,
            domain_validated: false,
        },
    ),
    (
        6,
        Issuer {
            common_name: "Quillmark DV TLS CA",
            organization: "Quillmark Trust Network",
            validity_days: 180,
            domain_validated: true,
        },
    ),
];

/// TLS versions with their cipher suites (IANA names) and relative frequency.
pub(crate) static SESSIONS: &[(u32, (&str, &[&str]))] = &[
    (
        60,
        (
            "TLSv1.3",
            &[
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256",
            ],
        ),
    ),
    (
        35,
        (
            "TLSv1.2",
            &[
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            ],
        ),
    ),
    (
        4,
        (
            "TLSv1.1",
            &[
                "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
                "TLS_RSA_WITH_AES_128_CBC_SHA",
            ],
        ),
    ),
    (
        1,
        (
            "TLSv1.0",
            &[
                "TLS_RSA_WITH_AES_128_CBC_SHA",
                "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
            ],
        ),
    ),
];

/// SSH host-key algorithms with their relative frequency.
pub(crate) static HOST_KEY_ALGORITHMS: &[(u32, &str)] = &[
    (55, "ssh-ed25519"),
    (20, "ecdsa-sha2-nistp256"),
    (20, "rsa-sha2-512"),
    (5, "ssh-rsa"),
];
