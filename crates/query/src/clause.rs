//! Fields and filter clauses: the thirteen field names, the ten filter clauses with their typed
//! values, quoted phrases, and the canonical text of each clause.

use std::fmt;

use periscope_model::{
    CountryCode, Cpe23, CveId, CvssRange, DomainName, InvalidValue, Port, ProtocolToken,
};

use crate::violation::ViolationCode;

/// A field name of the query language. The declaration order is the canonical clause order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `domain:` — standalone.
    Domain,
    /// `asn:` — standalone.
    Asn,
    /// `cidr:` — standalone (a bare `a.b.c.d/n` is the same field).
    Cidr,
    /// `port:` — service level.
    Port,
    /// `protocol:` — service level.
    Protocol,
    /// `organization:` — host level.
    Organization,
    /// `product:` — service level.
    Product,
    /// `certificate.name:` — service level.
    CertificateName,
    /// `country:` — host level.
    Country,
    /// `cpe:` — service level.
    Cpe,
    /// `cve:` — service level.
    Cve,
    /// `cvss:` — service level.
    Cvss,
    /// `exploit:` — service level.
    Exploit,
}

impl Field {
    /// Every field, in canonical order.
    pub const ALL: [Field; 13] = [
        Field::Domain,
        Field::Asn,
        Field::Cidr,
        Field::Port,
        Field::Protocol,
        Field::Organization,
        Field::Product,
        Field::CertificateName,
        Field::Country,
        Field::Cpe,
        Field::Cve,
        Field::Cvss,
        Field::Exploit,
    ];

    /// The exact lowercase name written before the colon.
    pub fn name(self) -> &'static str {
        match self {
            Field::Domain => "domain",
            Field::Asn => "asn",
            Field::Cidr => "cidr",
            Field::Port => "port",
            Field::Protocol => "protocol",
            Field::Organization => "organization",
            Field::Product => "product",
            Field::CertificateName => "certificate.name",
            Field::Country => "country",
            Field::Cpe => "cpe",
            Field::Cve => "cve",
            Field::Cvss => "cvss",
            Field::Exploit => "exploit",
        }
    }

    /// Looks up an exact field name; names are case-sensitive.
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Domain, ASN and CIDR searches cannot be combined with anything.
    pub fn is_standalone(self) -> bool {
        matches!(self, Field::Domain | Field::Asn | Field::Cidr)
    }

    /// Service-level filters (semantic rule 1): all of them must match one service.
    pub fn is_service_level(self) -> bool {
        matches!(
            self,
            Field::Port
                | Field::Protocol
                | Field::Product
                | Field::CertificateName
                | Field::Cpe
                | Field::Cve
                | Field::Cvss
                | Field::Exploit
        )
    }

    /// Host-level filters: organization and country.
    pub fn is_host_level(self) -> bool {
        matches!(self, Field::Organization | Field::Country)
    }

    /// The code for a value of this field that does not satisfy its rules.
    pub fn value_code(self) -> ViolationCode {
        match self {
            Field::Domain => ViolationCode::InvalidDomain,
            Field::Asn => ViolationCode::InvalidAsn,
            Field::Cidr => ViolationCode::InvalidCidr,
            Field::Port => ViolationCode::InvalidPort,
            Field::Protocol => ViolationCode::UnsupportedProtocol,
            Field::Organization => ViolationCode::InvalidOrganization,
            Field::Product => ViolationCode::InvalidProduct,
            Field::CertificateName => ViolationCode::InvalidCertificateName,
            Field::Country => ViolationCode::InvalidCountry,
            Field::Cpe => ViolationCode::InvalidCpe,
            Field::Cve => ViolationCode::InvalidCve,
            Field::Cvss => ViolationCode::InvalidCvss,
            Field::Exploit => ViolationCode::InvalidExploit,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The text of an `organization:` or `product:` phrase, normalised: trimmed, each run of
/// whitespace collapsed to one space, case kept as typed. It is non-empty, at most
/// [`Phrase::MAX_CHARS`] characters, and holds no `"`, `*` or control character.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Phrase(Box<str>);

impl Phrase {
    /// The longest phrase, in characters, after normalisation.
    pub const MAX_CHARS: usize = 200;

    /// Normalises and checks the text between the quotes.
    pub fn new(text: &str) -> Result<Self, InvalidValue> {
        let err = |why: String| InvalidValue::new("phrase", why);
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(err(format!("control character {c:?} is not allowed")));
        }
        if text.contains('*') {
            return Err(err("wildcards (*) are not supported".into()));
        }
        if text.contains('"') {
            return Err(err("a phrase cannot contain a double quote".into()));
        }
        let normalised = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if normalised.is_empty() {
            return Err(err("the phrase is empty".into()));
        }
        let chars = normalised.chars().count();
        if chars > Self::MAX_CHARS {
            return Err(err(format!(
                "the phrase has {chars} characters; at most {} are allowed",
                Self::MAX_CHARS
            )));
        }
        Ok(Self(normalised.into_boxed_str()))
    }

    /// The normalised text, without quotes.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The words of the phrase, in order.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.0.split(' ')
    }
}

impl fmt::Display for Phrase {
    /// The quoted form, `"Example Corp"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0)
    }
}

/// One filter clause with its validated value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Clause {
    /// `port:22`
    Port(Port),
    /// `protocol:ssh`
    Protocol(ProtocolToken),
    /// `organization:"Example Corp"`
    Organization(Phrase),
    /// `product:"OpenSSH"`
    Product(Phrase),
    /// `certificate.name:www.example.com`
    CertificateName(DomainName),
    /// `country:DE`
    Country(CountryCode),
    /// `cpe:"cpe:2.3:a:openbsd:openssh:8.9:*:*:*:*:*:*:*"`
    Cpe(Cpe23),
    /// `cve:CVE-2021-44228`
    Cve(CveId),
    /// `cvss:7.0-10.0`
    Cvss(CvssRange),
    /// `exploit:yes` (true) or `exploit:no` (false)
    Exploit(bool),
}

impl Clause {
    /// The field this clause filters on.
    pub fn field(&self) -> Field {
        match self {
            Clause::Port(_) => Field::Port,
            Clause::Protocol(_) => Field::Protocol,
            Clause::Organization(_) => Field::Organization,
            Clause::Product(_) => Field::Product,
            Clause::CertificateName(_) => Field::CertificateName,
            Clause::Country(_) => Field::Country,
            Clause::Cpe(_) => Field::Cpe,
            Clause::Cve(_) => Field::Cve,
            Clause::Cvss(_) => Field::Cvss,
            Clause::Exploit(_) => Field::Exploit,
        }
    }

    /// True for the service-level clauses of semantic rule 1.
    pub fn is_service_level(&self) -> bool {
        self.field().is_service_level()
    }

    /// True for organization and country.
    pub fn is_host_level(&self) -> bool {
        self.field().is_host_level()
    }
}

impl fmt::Display for Clause {
    /// The canonical text, `field:value`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.field().name())?;
        match self {
            Clause::Port(p) => p.fmt(f),
            Clause::Protocol(p) => p.fmt(f),
            Clause::Organization(p) | Clause::Product(p) => p.fmt(f),
            Clause::CertificateName(d) => d.fmt(f),
            Clause::Country(c) => c.fmt(f),
            Clause::Cpe(c) => write!(f, "\"{c}\""),
            Clause::Cve(c) => c.fmt(f),
            Clause::Cvss(r) => r.fmt(f),
            Clause::Exploit(true) => f.write_str("yes"),
            Clause::Exploit(false) => f.write_str("no"),
        }
    }
}
