//! The query language as data: every row is an input, the operation that reads it, and the
//! canonical text or the exact violation codes it must give. One helper runs a row.

use periscope_query::ViolationCode::{self, *};
use periscope_query::{
    Ambiguity, Entry, Query, check_breadth, check_count, check_cursor_binding, check_cursor_format,
    check_exposure, check_facets, parse, parse_detail_ip, parse_resolution, recognize,
};

/// What reads the input.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `parse`.
    Parse,
    /// `parse`, then `check_count`.
    Count,
    /// `parse`, then `check_facets`.
    Facets,
    /// `parse`, then `check_exposure`.
    Exposure,
    /// `parse`, then `check_breadth(q, matching, max)`.
    Breadth(u64, u64),
    /// `parse_resolution`.
    Resolution,
    /// `parse_detail_ip`.
    DetailIp,
    /// `check_cursor_format`.
    CursorFormat,
    /// A cursor issued for (query, limit), used with the input query and this limit.
    CursorUse(&'static str, u32, u32),
}

/// The outcome a row expects.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Accepted; the canonical text (for value checks: the value's text).
    Canon(&'static str),
    /// Refused with exactly these codes, in this order.
    Fails(&'static [ViolationCode]),
}
use Expect::*;
use Op::*;

type Row = (Op, &'static str, Expect);

/// Runs one row; returns the codes it produced, or a description of the mismatch.
fn check(op: Op, input: &str, expect: Expect) -> Result<Vec<ViolationCode>, String> {
    let parsed = || parse(input).map_err(|e| format!("{input:?} did not parse: {e}"));
    let got: Result<String, Vec<ViolationCode>> = match op {
        Parse => match parse(input) {
            Ok(q) => {
                let text = q.to_string();
                let again = parse(&text).map_err(|e| format!("canonical {text:?} fails: {e}"))?;
                if again != q || again.to_string() != text {
                    return Err(format!(
                        "{input:?}: canonical {text:?} is not a fixed point"
                    ));
                }
                Ok(text)
            }
            Err(e) => {
                for v in &e.violations {
                    if v.detail.is_empty() || v.field() != "query" {
                        return Err(format!("{input:?}: bad violation {v:?}"));
                    }
                }
                Err(e.codes())
            }
        },
        Count | Facets | Exposure | Breadth(..) => {
            let q = parsed()?;
            let result = match op {
                Count => check_count(&q),
                Facets => check_facets(&q),
                Exposure => check_exposure(&q),
                Breadth(matching, max) => check_breadth(&q, matching, max),
                _ => unreachable!(),
            };
            result.map(|()| q.to_string()).map_err(|v| vec![v.code])
        }
        Resolution => parse_resolution(input)
            .map(|r| r.to_string())
            .map_err(|v| vec![v.code]),
        DetailIp => parse_detail_ip(input)
            .map(|ip| ip.to_string())
            .map_err(|v| vec![v.code]),
        CursorFormat => check_cursor_format(input)
            .map(|()| input.to_owned())
            .map_err(|v| vec![v.code]),
        CursorUse(issued, issued_limit, limit) => {
            let issued = parse(issued).map_err(|e| format!("{issued:?}: {e}"))?;
            let q = parsed()?;
            check_cursor_binding((&issued, issued_limit), (&q, limit))
                .map(|()| q.to_string())
                .map_err(|v| vec![v.code])
        }
    };
    match (expect, got) {
        (Canon(want), Ok(text)) if want == text => Ok(vec![]),
        (Fails(want), Err(codes)) if want == codes.as_slice() => Ok(codes),
        (_, got) => Err(format!(
            "{op:?} {input:?}: expected {expect:?}, got {got:?}"
        )),
    }
}

fn run(rows: &[Row]) -> Vec<ViolationCode> {
    let mut produced = Vec::new();
    let mut failures = Vec::new();
    for &(op, input, expect) in rows {
        match check(op, input, expect) {
            Ok(codes) => produced.extend(codes),
            Err(why) => failures.push(why),
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    produced
}

/// Every row of the spec's syntax table, each with its canonical form.
#[rustfmt::skip]
const SEARCH_TYPES: &[Row] = &[
    // Exact IP: bare IPv4 or IPv6; IPv6 printed per RFC 5952; IPv4-mapped is IPv4.
    (Parse, "192.0.2.1", Canon("192.0.2.1")),
    (Parse, "  240.0.0.1\t", Canon("240.0.0.1")),
    (Parse, "2001:DB8:0:0:0:0:0:1", Canon("2001:db8::1")),
    (Parse, "2001:db8:0:0:1:0:0:1", Canon("2001:db8::1:0:0:1")),
    (Parse, "3fff::", Canon("3fff::")),
    (Parse, "::1", Canon("::1")),
    (Parse, "::ffff:192.0.2.1", Canon("192.0.2.1")),
    // Domain: IDNA, case, one trailing dot; subdomains are their own search.
    (Parse, "domain:example.com", Canon("domain:example.com")),
    (Parse, "domain:Example.COM.", Canon("domain:example.com")),
    (Parse, "domain:bücher.example", Canon("domain:xn--bcher-kva.example")),
    (Parse, "domain:BÜCHER.example", Canon("domain:xn--bcher-kva.example")),
    (Parse, "domain:xn--bcher-kva.example", Canon("domain:xn--bcher-kva.example")),
    (Parse, "domain:XN--BCHER-KVA.example", Canon("domain:xn--bcher-kva.example")),
    (Parse, "domain:acme.example", Canon("domain:acme.example")),
    (Parse, "domain:www.acme.example", Canon("domain:www.acme.example")),
    (Parse, "domain:acme.co.uk", Canon("domain:acme.co.uk")),
    (Parse, "domain:a.b.c.acme.co.uk", Canon("domain:a.b.c.acme.co.uk")),
    (Parse, "domain:_dmarc.acme.example", Canon("domain:_dmarc.acme.example")),
    // ASN: strict decimal 1..=4294967295.
    (Parse, "asn:15169", Canon("asn:15169")),
    (Parse, "asn:1", Canon("asn:1")),
    (Parse, "asn:4294967295", Canon("asn:4294967295")),
    // IPv4 CIDR: both forms, /24../32, host bits normalised.
    (Parse, "192.0.2.0/24", Canon("cidr:192.0.2.0/24")),
    (Parse, "192.0.2.77/24", Canon("cidr:192.0.2.0/24")),
    (Parse, "cidr:192.0.2.77/24", Canon("cidr:192.0.2.0/24")),
    (Parse, "cidr:10.1.2.3/28", Canon("cidr:10.1.2.0/28")),
    (Parse, "192.0.2.1/32", Canon("cidr:192.0.2.1/32")),
    // Port.
    (Parse, "port:22", Canon("port:22")),
    (Parse, "port:0022", Canon("port:22")),
    (Parse, "port:1", Canon("port:1")),
    (Parse, "port:65535", Canon("port:65535")),
    // Protocol: case-insensitive input, lowercased.
    (Parse, "protocol:ssh", Canon("protocol:ssh")),
    (Parse, "protocol:HTTPS", Canon("protocol:https")),
    (Parse, "protocol:Imap", Canon("protocol:imap")),
    (Parse, "protocol:mikrotikapi", Canon("protocol:mikrotikapi")),
    // Organization and product: quoted, whitespace collapsed, case kept.
    (Parse, r#"organization:"Example Corp""#, Canon(r#"organization:"Example Corp""#)),
    (Parse, r#"organization:"  Example   Corp ""#, Canon(r#"organization:"Example Corp""#)),
    (Parse, r#"organization:"example CORP""#, Canon(r#"organization:"example CORP""#)),
    (Parse, r#"organization:"A&B (Holdings) AND OR: x""#, Canon(r#"organization:"A&B (Holdings) AND OR: x""#)),
    (Parse, r#"organization:"Müller GmbH""#, Canon(r#"organization:"Müller GmbH""#)),
    (Parse, r#"product:"OpenSSH""#, Canon(r#"product:"OpenSSH""#)),
    (Parse, r#"product:"Apache  HTTP Server""#, Canon(r#"product:"Apache HTTP Server""#)),
    // Certificate name.
    (Parse, "certificate.name:www.example.com", Canon("certificate.name:www.example.com")),
    (Parse, "certificate.name:WWW.Example.com.", Canon("certificate.name:www.example.com")),
    (Parse, "certificate.name:localhost", Canon("certificate.name:localhost")),
    // Country.
    (Parse, "country:DE", Canon("country:DE")),
    (Parse, "country:XK", Canon("country:XK")),
    // CPE: quoted, lowercased.
    (Parse, r#"cpe:"cpe:2.3:a:openbsd:openssh:8.9:*:*:*:*:*:*:*""#, Canon(r#"cpe:"cpe:2.3:a:openbsd:openssh:8.9:*:*:*:*:*:*:*""#)),
    (Parse, r#"cpe:"cpe:2.3:a:F5:Nginx:1.18.0:*:*:*:*:*:*:*""#, Canon(r#"cpe:"cpe:2.3:a:f5:nginx:1.18.0:*:*:*:*:*:*:*""#)),
    // CVE.
    (Parse, "cve:CVE-2021-44228", Canon("cve:CVE-2021-44228")),
    (Parse, "cve:CVE-2014-0160", Canon("cve:CVE-2014-0160")),
    // CVSS.
    (Parse, "cvss:7.0-10.0", Canon("cvss:7.0-10.0")),
    (Parse, "cvss:7-10", Canon("cvss:7.0-10.0")),
    (Parse, "cvss:0.0-3.9", Canon("cvss:0.0-3.9")),
    (Parse, "cvss:5-5", Canon("cvss:5.0-5.0")),
    // Exploit.
    (Parse, "exploit:yes", Canon("exploit:yes")),
    (Parse, "exploit:no", Canon("exploit:no")),
];

/// Joiners and canonical clause order.
#[rustfmt::skip]
const JOINERS: &[Row] = &[
    (Parse, r#"port:22 protocol:ssh organization:"Example Corp""#, Canon(r#"port:22 protocol:ssh organization:"Example Corp""#)),
    (Parse, r#"organization:"Example Corp" AND protocol:ssh AND port:22"#, Canon(r#"port:22 protocol:ssh organization:"Example Corp""#)),
    (Parse, "protocol:ssh port:22", Canon("port:22 protocol:ssh")),
    (Parse, "protocol:ssh AND port:22", Canon("port:22 protocol:ssh")),
    (Parse, "protocol:ssh    AND\t\tport:22", Canon("port:22 protocol:ssh")),
    (Parse, "protocol:ssh\nport:22", Canon("port:22 protocol:ssh")),
    (Parse, "exploit:yes cvss:9-10 cve:CVE-2014-0160", Canon("cve:CVE-2014-0160 cvss:9.0-10.0 exploit:yes")),
    (Parse, "country:DE certificate.name:a.example product:\"x\"", Canon("product:\"x\" certificate.name:a.example country:DE")),
    (Parse, "cpe:\"cpe:2.3:a:b:c:*:*:*:*:*:*:*:*\" AND country:FR", Canon("country:FR cpe:\"cpe:2.3:a:b:c:*:*:*:*:*:*:*:*\"")),
    (Parse, "organization:\"Acme\" country:DE", Canon("organization:\"Acme\" country:DE")),
    // Operators other than a proper AND.
    (Parse, "port:22 and protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 And protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 OR port:23", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 or port:23", Fails(&[UnsupportedOperator])),
    (Parse, "NOT port:22", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 not protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 AND NOT protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 && protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22&&protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 || port:23", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 | port:23", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 & protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 ! protocol:ssh", Fails(&[UnsupportedOperator])),
    (Parse, "-port:22", Fails(&[UnsupportedOperator])),
    (Parse, "protocol:ssh -port:22", Fails(&[UnsupportedOperator])),
    (Parse, "!port:22", Fails(&[UnsupportedOperator])),
    (Parse, "+port:22", Fails(&[UnsupportedOperator])),
    (Parse, "port:22 OR", Fails(&[UnsupportedOperator])),
    // Misplaced AND, grouping, stray words.
    (Parse, "port:22 AND", Fails(&[InvalidQuerySyntax])),
    (Parse, "AND port:22", Fails(&[InvalidQuerySyntax])),
    (Parse, "port:22 AND AND protocol:ssh", Fails(&[InvalidQuerySyntax])),
    (Parse, "AND", Fails(&[InvalidQuerySyntax])),
    (Parse, "(port:22)", Fails(&[InvalidQuerySyntax])),
    (Parse, "port:22 (protocol:ssh)", Fails(&[InvalidQuerySyntax])),
    (Parse, "(port:22 OR port:23)", Fails(&[InvalidQuerySyntax, UnsupportedOperator])),
    (Parse, "port:(22)", Fails(&[InvalidQuerySyntax])),
    (Parse, "port:22 ssh", Fails(&[InvalidQuerySyntax])),
    (Parse, "ssh", Fails(&[InvalidQuerySyntax])),
    (Parse, "22", Fails(&[InvalidQuerySyntax])),
    (Parse, "AS15169", Fails(&[InvalidQuerySyntax])),
    (Parse, "example.com", Fails(&[InvalidQuerySyntax])),
    (Parse, "*", Fails(&[InvalidQuerySyntax])),
    (Parse, "port:*", Fails(&[InvalidPort])),
    (Parse, "port: 22", Fails(&[InvalidQuerySyntax])),
    (Parse, ":22", Fails(&[InvalidQuerySyntax])),
    (Parse, r#""Example Corp""#, Fails(&[InvalidQuerySyntax])),
    (Parse, r#""Example Corp"#, Fails(&[InvalidQuerySyntax])),
    (Parse, "http://example.com", Fails(&[InvalidQuerySyntax])),
    (Parse, "1.2.3.256", Fails(&[InvalidQuerySyntax])),
    (Parse, "01.2.3.4", Fails(&[InvalidQuerySyntax])),
    (Parse, "2001:db8:::1", Fails(&[InvalidQuerySyntax])),
    (Parse, "fe80::1%eth0", Fails(&[InvalidQuerySyntax])),
    (Parse, "[2001:db8::1]", Fails(&[InvalidQuerySyntax])),
    (Parse, "192.0.2.1:8080", Fails(&[InvalidQuerySyntax])),
    (Parse, "[2001:db8::1]:443", Fails(&[InvalidQuerySyntax])),
    (Parse, "example.com:443", Fails(&[InvalidQuerySyntax])),
    // Shape: more than three clauses, a field twice.
    (Parse, "port:22 protocol:ssh country:DE cve:CVE-2014-0160", Fails(&[UnsupportedQuery])),
    (Parse, "port:22 AND protocol:ssh AND country:DE AND exploit:yes", Fails(&[UnsupportedQuery])),
    (Parse, "port:22 port:23", Fails(&[DuplicateField])),
    (Parse, "port:22 AND port:22", Fails(&[DuplicateField])),
    (Parse, "192.0.2.0/24 cidr:192.0.2.0/24", Fails(&[DuplicateField])),
    (Parse, "domain:a.example domain:b.example", Fails(&[DuplicateField])),
    (Parse, "protocol:ssh protocol:SSH", Fails(&[DuplicateField])),
    // Standalone types combined with anything.
    (Parse, "192.0.2.1 port:22", Fails(&[UnsupportedQuery])),
    (Parse, "192.0.2.1 192.0.2.2", Fails(&[UnsupportedQuery])),
    (Parse, "domain:example.com port:22", Fails(&[InvalidDomain])),
    (Parse, "asn:15169 country:US", Fails(&[InvalidAsn])),
    (Parse, "cidr:192.0.2.0/24 port:22", Fails(&[InvalidCidr])),
    (Parse, "192.0.2.0/24 AND port:22", Fails(&[InvalidCidr])),
    (Parse, "domain:a.example asn:1", Fails(&[InvalidDomain, InvalidAsn])),
    // Several clause violations are reported together.
    (Parse, "port:abc protocol:foo", Fails(&[InvalidPort, UnsupportedProtocol])),
    (Parse, "foo:1 port:0", Fails(&[UnknownField, InvalidPort])),
    (Parse, "domain:example.com port:abc", Fails(&[InvalidDomain, InvalidPort])),
    (Parse, "country:de cve:cve-2014-0160 exploit:maybe", Fails(&[InvalidCountry, InvalidCve, InvalidExploit])),
    (Parse, "foo:1 bar:2", Fails(&[UnknownField])),
];

/// Every value rule, and the code of its violation.
#[rustfmt::skip]
const VALUES: &[Row] = &[
    // Input limits.
    (Parse, "", Fails(&[InvalidQuerySyntax])),
    (Parse, "   \t ", Fails(&[InvalidQuerySyntax])),
    // Field names are exact lowercase.
    (Parse, "ip:192.0.2.1", Fails(&[UnknownField])),
    (Parse, r#"org:"Acme""#, Fails(&[UnknownField])),
    (Parse, "PORT:22", Fails(&[UnknownField])),
    (Parse, "Port:22", Fails(&[UnknownField])),
    (Parse, "hostname:example.com", Fails(&[UnknownField])),
    (Parse, "ssl.cert.subject.cn:example.com", Fails(&[UnknownField])),
    (Parse, r#"title:"unterminated"#, Fails(&[UnknownField])),
    // Port.
    (Parse, "port:abc", Fails(&[InvalidPort])),
    (Parse, "port:", Fails(&[InvalidPort])),
    (Parse, "port:0", Fails(&[InvalidPort])),
    (Parse, "port:65536", Fails(&[InvalidPort])),
    (Parse, "port:-1", Fails(&[InvalidPort])),
    (Parse, "port:+22", Fails(&[InvalidPort])),
    (Parse, "port:22.0", Fails(&[InvalidPort])),
    (Parse, "port:0x16", Fails(&[InvalidPort])),
    (Parse, "port:22-80", Fails(&[InvalidPort])),
    (Parse, r#"port:"22""#, Fails(&[InvalidPort])),
    (Parse, "port:99999999999999999999999", Fails(&[InvalidPort])),
    // Protocol.
    (Parse, "protocol:foo", Fails(&[UnsupportedProtocol])),
    (Parse, "protocol:", Fails(&[UnsupportedProtocol])),
    (Parse, r#"protocol:"ssh""#, Fails(&[UnsupportedProtocol])),
    (Parse, "protocol:http*", Fails(&[UnsupportedProtocol])),
    (Parse, "protocol:heartbleed", Fails(&[UnsupportedProtocol])),
    (Parse, "protocol:web", Fails(&[UnsupportedProtocol])),
    (Parse, "protocol:ſsh", Fails(&[UnsupportedProtocol])),
    // Organization.
    (Parse, "organization:Acme", Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"Acme"#, Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"Acme Corp port:22"#, Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"""#, Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"   ""#, Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"Ac*me""#, Fails(&[InvalidOrganization])),
    (Parse, r#"organization:"Acme"Corp"#, Fails(&[InvalidOrganization])),
    (Parse, "organization:\"Acme\u{7}Corp\"", Fails(&[InvalidOrganization])),
    (Parse, "organization:\"Acme\tCorp\"", Fails(&[InvalidOrganization])),
    (Parse, "organization:", Fails(&[InvalidOrganization])),
    // Product.
    (Parse, "product:nginx", Fails(&[InvalidProduct])),
    (Parse, r#"product:"nginx"#, Fails(&[InvalidProduct])),
    (Parse, r#"product:"""#, Fails(&[InvalidProduct])),
    (Parse, r#"product:"ngi*""#, Fails(&[InvalidProduct])),
    // Certificate name.
    (Parse, "certificate.name:*.example.com", Fails(&[InvalidCertificateName])),
    (Parse, r#"certificate.name:"www.example.com""#, Fails(&[InvalidCertificateName])),
    (Parse, "certificate.name:a..example", Fails(&[InvalidCertificateName])),
    (Parse, "certificate.name:https://example.com", Fails(&[InvalidCertificateName])),
    (Parse, "certificate.name:", Fails(&[InvalidCertificateName])),
    // Country.
    (Parse, "country:de", Fails(&[InvalidCountry])),
    (Parse, "country:XX", Fails(&[InvalidCountry])),
    (Parse, "country:DEU", Fails(&[InvalidCountry])),
    (Parse, r#"country:"DE""#, Fails(&[InvalidCountry])),
    (Parse, "country:", Fails(&[InvalidCountry])),
    // CPE.
    (Parse, "cpe:cpe:2.3:a:openbsd:openssh:8.9:*:*:*:*:*:*:*", Fails(&[InvalidCpe])),
    (Parse, r#"cpe:"cpe:/a:nginx:nginx:1.18.0""#, Fails(&[InvalidCpe])),
    (Parse, r#"cpe:"cpe:2.3:a:nginx""#, Fails(&[InvalidCpe])),
    (Parse, r#"cpe:"cpe:2.3:a:f5:nginx:1.*:*:*:*:*:*:*:*""#, Fails(&[InvalidCpe])),
    (Parse, r#"cpe:"cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*:*"#, Fails(&[InvalidCpe])),
    // CVE.
    (Parse, "cve:cve-2021-44228", Fails(&[InvalidCve])),
    (Parse, "cve:CVE-21-44228", Fails(&[InvalidCve])),
    (Parse, "cve:2021-44228", Fails(&[InvalidCve])),
    (Parse, "cve:CVE-2021-*", Fails(&[InvalidCve])),
    // CVSS.
    (Parse, "cvss:7", Fails(&[InvalidCvss])),
    (Parse, "cvss:9-7", Fails(&[InvalidCvss])),
    (Parse, "cvss:0-10.1", Fails(&[InvalidCvss])),
    (Parse, "cvss:>7", Fails(&[InvalidCvss])),
    (Parse, "cvss:7.55-8", Fails(&[InvalidCvss])),
    // Exploit.
    (Parse, "exploit:true", Fails(&[InvalidExploit])),
    (Parse, "exploit:YES", Fails(&[InvalidExploit])),
    (Parse, "exploit:", Fails(&[InvalidExploit])),
    // ASN.
    (Parse, "asn:AS15169", Fails(&[InvalidAsn])),
    (Parse, "asn:015169", Fails(&[InvalidAsn])),
    (Parse, "asn:0", Fails(&[InvalidAsn])),
    (Parse, "asn:1-2", Fails(&[InvalidAsn])),
    (Parse, "asn:15*", Fails(&[InvalidAsn])),
    (Parse, "asn:4294967296", Fails(&[InvalidAsn])),
    (Parse, "asn:", Fails(&[InvalidAsn])),
    // CIDR.
    (Parse, "cidr:192.0.2.1", Fails(&[InvalidCidr])),
    (Parse, "192.0.2.0/33", Fails(&[InvalidCidr])),
    (Parse, "192.0.2.0/024", Fails(&[InvalidCidr])),
    (Parse, "cidr:192.0.2/24", Fails(&[InvalidCidr])),
    (Parse, "192.0.2/24", Fails(&[InvalidCidr])),
    (Parse, "192.0.2.0/", Fails(&[InvalidCidr])),
    (Parse, "cidr:example.com/24", Fails(&[InvalidCidr])),
    (Parse, "10.0.0.0/8", Fails(&[CidrTooBroad])),
    (Parse, "cidr:192.0.2.0/23", Fails(&[CidrTooBroad])),
    (Parse, "0.0.0.0/0", Fails(&[CidrTooBroad])),
    (Parse, "2001:db8::/48", Fails(&[Ipv6CidrNotSupported])),
    (Parse, "cidr:2001:db8::/64", Fails(&[Ipv6CidrNotSupported])),
    (Parse, "::ffff:192.0.2.0/120", Fails(&[Ipv6CidrNotSupported])),
    // Domain.
    (Parse, "domain:*.example.com", Fails(&[InvalidDomain])),
    (Parse, "domain:https://example.com", Fails(&[InvalidDomain])),
    (Parse, "domain:example.com/path", Fails(&[InvalidDomain])),
    (Parse, "domain:example.com?q", Fails(&[InvalidDomain])),
    (Parse, "domain:example.com#top", Fails(&[InvalidDomain])),
    (Parse, "domain:example.com:443", Fails(&[InvalidDomain])),
    (Parse, "domain:user@example.com", Fails(&[InvalidDomain])),
    (Parse, r#"domain:"example.com""#, Fails(&[InvalidDomain])),
    (Parse, "domain:com", Fails(&[InvalidDomain])),
    (Parse, "domain:co.uk", Fails(&[InvalidDomain])),
    (Parse, "domain:CO.UK.", Fails(&[InvalidDomain])),
    (Parse, "domain:example", Fails(&[InvalidDomain])),
    (Parse, "domain:localhost", Fails(&[InvalidDomain])),
    // Punycode that does not decode to a label IDNA allows (issue 13).
    (Parse, "domain:xn--a.example", Fails(&[InvalidDomain])),
    (Parse, "domain:example.xn--zz", Fails(&[InvalidDomain])),
    (Parse, "domain:XN--A.example", Fails(&[InvalidDomain])),
    (Parse, "domain:github.io", Fails(&[InvalidDomain])),
    (Parse, "domain:a..example", Fails(&[InvalidDomain])),
    (Parse, "domain:example.com..", Fails(&[InvalidDomain])),
    (Parse, "domain:.example.com", Fails(&[InvalidDomain])),
    (Parse, "domain:-acme.example", Fails(&[InvalidDomain])),
    (Parse, "domain:exa_mple .com", Fails(&[InvalidQuerySyntax])),
    (Parse, "domain:192.0.2.1", Fails(&[InvalidDomain])),
    (Parse, "domain:2001:db8::1", Fails(&[InvalidDomain])),
    (Parse, "domain:", Fails(&[InvalidDomain])),
];

/// The endpoint checks.
#[rustfmt::skip]
const ENDPOINTS: &[Row] = &[
    (Count, "asn:15169", Canon("asn:15169")),
    (Count, "port:22", Canon("port:22")),
    (Count, "country:DE", Canon("country:DE")),
    (Count, "192.0.2.1", Fails(&[CountNotSupported])),
    (Count, "192.0.2.0/24", Fails(&[CountNotSupported])),
    (Count, "domain:example.com", Fails(&[CountNotSupported])),
    (Facets, "port:22 protocol:ssh", Canon("port:22 protocol:ssh")),
    (Facets, r#"organization:"Acme""#, Canon(r#"organization:"Acme""#)),
    (Facets, "country:DE", Canon("country:DE")),
    (Facets, "192.0.2.1", Fails(&[FacetsNotSupported])),
    (Facets, "cidr:192.0.2.0/24", Fails(&[FacetsNotSupported])),
    (Facets, "domain:example.com", Fails(&[FacetsNotSupported])),
    (Facets, "asn:15169", Fails(&[FacetsNotSupported])),
    (Exposure, "192.0.2.1", Canon("192.0.2.1")),
    (Exposure, "192.0.2.0/24", Canon("cidr:192.0.2.0/24")),
    (Exposure, "asn:15169", Canon("asn:15169")),
    (Exposure, "port:22", Canon("port:22")),
    (Exposure, "domain:example.com", Fails(&[ExposureNotSupported])),
    (Breadth(10_001, 10_000), "country:DE", Fails(&[QueryTooBroad])),
    (Breadth(10_001, 10_000), r#"organization:"Acme""#, Fails(&[QueryTooBroad])),
    // Spec rule 4: adding a country makes an organization query runnable.
    (Breadth(10_000_000, 10_000), r#"organization:"Acme" country:DE"#, Canon(r#"organization:"Acme" country:DE"#)),
    (Breadth(10_000, 10_000), "country:DE", Canon("country:DE")),
    (Breadth(10_000_000, 10_000), "port:22", Canon("port:22")),
    (Breadth(10_000_000, 10_000), "country:DE port:22", Canon("port:22 country:DE")),
    (Breadth(10_000_000, 10_000), "asn:15169", Canon("asn:15169")),
    (Resolution, "global", Canon("global")),
    (Resolution, "regional", Canon("regional")),
    (Resolution, "local", Canon("local")),
    (Resolution, "Global", Fails(&[UnsupportedResolution])),
    (Resolution, "world", Fails(&[UnsupportedResolution])),
    (Resolution, "", Fails(&[UnsupportedResolution])),
    (DetailIp, "192.0.2.1", Canon("192.0.2.1")),
    (DetailIp, "2001:DB8::1", Canon("2001:db8::1")),
    (DetailIp, "::ffff:192.0.2.1", Canon("192.0.2.1")),
    (DetailIp, " 192.0.2.1", Fails(&[InvalidIp])),
    (DetailIp, "fe80::1%eth0", Fails(&[InvalidIp])),
    (DetailIp, "192.0.2.0/24", Fails(&[InvalidIp])),
    (DetailIp, "1.2.3.04", Fails(&[InvalidIp])),
    (DetailIp, "example.com", Fails(&[InvalidIp])),
    (DetailIp, "", Fails(&[InvalidIp])),
    (CursorFormat, "sc1_AbCdEfGhIjKlMnOpQrStUvWxYz012-_9", Canon("sc1_AbCdEfGhIjKlMnOpQrStUvWxYz012-_9")),
    (CursorFormat, "sc1_AbCdEfGhIjKlMnOpQrStUvWxYz012-_", Fails(&[InvalidCursor])),
    (CursorFormat, "sc2_AbCdEfGhIjKlMnOpQrStUvWxYz012-_9", Fails(&[InvalidCursor])),
    (CursorFormat, "sc1_AbCdEfGhIjKlMnOpQrStUvWxYz012+/9", Fails(&[InvalidCursor])),
    (CursorFormat, "", Fails(&[InvalidCursor])),
    (CursorUse("protocol:ssh port:22", 25, 25), "port:22 AND protocol:ssh", Canon("port:22 protocol:ssh")),
    (CursorUse("protocol:ssh port:22", 25, 25), "port:22", Fails(&[QueryMismatch])),
    (CursorUse("protocol:ssh port:22", 25, 50), "port:22 protocol:ssh", Fails(&[QueryMismatch])),
];

#[test]
fn search_types() {
    run(SEARCH_TYPES);
}

#[test]
fn joiners_operators_and_structure() {
    run(JOINERS);
}

#[test]
fn values() {
    run(VALUES);
}

#[test]
fn endpoints() {
    run(ENDPOINTS);
}

#[test]
fn every_violation_code_is_produced_by_some_row() {
    let produced: Vec<ViolationCode> = [SEARCH_TYPES, JOINERS, VALUES, ENDPOINTS]
        .into_iter()
        .flat_map(run)
        .collect();
    let missing: Vec<_> = ViolationCode::ALL
        .iter()
        .filter(|c| !produced.contains(c))
        .map(|c| c.as_str())
        .collect();
    assert!(missing.is_empty(), "codes no row produces: {missing:?}");
}

#[test]
fn violation_codes_match_the_spec_table() {
    let wire: Vec<(&str, &str)> = ViolationCode::ALL
        .iter()
        .map(|c| (c.as_str(), c.field()))
        .collect();
    assert_eq!(
        wire,
        [
            ("invalid_query_syntax", "query"),
            ("unknown_field", "query"),
            ("duplicate_field", "query"),
            ("unsupported_operator", "query"),
            ("invalid_port", "query"),
            ("unsupported_protocol", "query"),
            ("invalid_organization", "query"),
            ("invalid_product", "query"),
            ("invalid_certificate_name", "query"),
            ("invalid_country", "query"),
            ("invalid_cpe", "query"),
            ("invalid_cve", "query"),
            ("invalid_cvss", "query"),
            ("invalid_exploit", "query"),
            ("invalid_cidr", "query"),
            ("cidr_too_broad", "query"),
            ("ipv6_cidr_not_supported", "query"),
            ("invalid_domain", "query"),
            ("invalid_asn", "query"),
            ("query_too_broad", "query"),
            ("unsupported_query", "query"),
            ("count_not_supported", "query"),
            ("exposure_not_supported", "query"),
            ("facets_not_supported", "query"),
            ("unsupported_resolution", "resolution"),
            ("invalid_ip", "ip"),
            ("invalid", "cursor"),
            ("query_mismatch", "cursor"),
        ]
    );
}

#[test]
fn length_limit_counts_characters() {
    let at_limit = format!(r#"organization:"{}""#, "ä".repeat(10));
    assert!(parse(&at_limit).is_ok());
    let padded = format!("port:22{}", " ".repeat(512 - 7));
    assert_eq!(padded.chars().count(), 512);
    assert!(parse(&padded).is_ok(), "512 characters are allowed");
    let over = format!("port:22{}", " ".repeat(513 - 7));
    assert_eq!(parse(&over).unwrap_err().codes(), [InvalidQuerySyntax]);
    let long_phrase = format!(r#"organization:"{}""#, "a".repeat(201));
    assert_eq!(
        parse(&long_phrase).unwrap_err().codes(),
        [InvalidOrganization]
    );
    let max_phrase = format!(r#"organization:"{}""#, "ü".repeat(200));
    assert!(parse(&max_phrase).is_ok(), "200 characters, not bytes");
}

#[test]
fn details_say_how_to_fix() {
    let detail = |q: &str| parse(q).unwrap_err().violations[0].detail.clone();
    assert!(detail("asn:AS15169").contains("asn:15169"));
    assert!(detail("country:de").contains("country:DE"));
    assert!(detail("cve:cve-2014-0160").contains("cve:CVE-2014-0160"));
    assert!(detail("PORT:22").contains("port:"));
    assert!(detail("22").contains("asn:22 or port:22"));
    assert!(detail("ssh").contains("protocol:ssh"));
    assert!(detail("example.com").contains("domain:example.com"));
    assert!(detail("port:1 protocol:ssh country:DE exploit:no").contains("at most 3 clauses"));
    assert!(detail("domain:co.uk").contains("public suffix"));
}

#[test]
fn clause_levels() {
    let q = parse(r#"port:22 organization:"Acme" country:DE"#).unwrap();
    let f = q.as_filter().unwrap();
    assert!(f.names_service());
    assert!(!q.may_be_too_broad());
    let fields = |it: &mut dyn Iterator<Item = &periscope_query::Clause>| {
        it.map(|c| c.field().name()).collect::<Vec<_>>()
    };
    assert_eq!(fields(&mut f.service_clauses()), ["port"]);
    assert_eq!(fields(&mut f.host_clauses()), ["organization", "country"]);
    assert!(f.is_full());
    for q in [r#"organization:"Acme""#, "country:DE"] {
        assert!(parse(q).unwrap().may_be_too_broad(), "{q}");
    }
    // Spec rule 4: adding a port, protocol or country makes it runnable.
    for q in [
        r#"organization:"Acme" country:DE"#,
        r#"organization:"Acme" port:443"#,
        "country:DE protocol:ssh",
        "192.0.2.1",
        "asn:1",
        "domain:example.com",
        "cidr:192.0.2.0/24",
        "exploit:no",
    ] {
        assert!(!parse(q).unwrap().may_be_too_broad(), "{q}");
    }
    for field in periscope_query::Field::ALL {
        let levels = [
            field.is_standalone(),
            field.is_service_level(),
            field.is_host_level(),
        ];
        assert_eq!(levels.iter().filter(|l| **l).count(), 1, "{field}");
    }
}

#[test]
fn filter_queries_edit_by_field() {
    use periscope_query::{Clause, Field, FilterQuery};
    let q = parse("port:22 protocol:ssh").unwrap();
    let f = q.as_filter().unwrap();
    let country = parse("country:DE").unwrap().as_filter().unwrap().clauses()[0].clone();
    let added = f.with_clause(country.clone()).unwrap();
    assert_eq!(added.to_string(), "port:22 protocol:ssh country:DE");
    let port80 = parse("port:80").unwrap().as_filter().unwrap().clauses()[0].clone();
    assert_eq!(
        added.with_clause(port80).unwrap().to_string(),
        "port:80 protocol:ssh country:DE"
    );
    let cve = parse("cve:CVE-2014-0160")
        .unwrap()
        .as_filter()
        .unwrap()
        .clauses()[0]
        .clone();
    assert_eq!(added.with_clause(cve).unwrap_err().code, UnsupportedQuery);
    assert_eq!(
        added.without(Field::Protocol).unwrap().to_string(),
        "port:22 country:DE"
    );
    let single = FilterQuery::new([country.clone()]).unwrap();
    assert!(single.without(Field::Country).is_none());
    assert_eq!(
        FilterQuery::new([country.clone(), country])
            .unwrap_err()
            .code,
        DuplicateField
    );
    assert_eq!(
        FilterQuery::new(Vec::<Clause>::new()).unwrap_err().code,
        UnsupportedQuery
    );
    assert_eq!(
        added.get(Field::Port).map(ToString::to_string).as_deref(),
        Some("port:22")
    );
}

#[test]
fn queries_from_str_and_kinds() {
    let q: Query = "asn:15169".parse().unwrap();
    assert_eq!(q.kind().as_str(), "asn");
    let kinds: Vec<_> = [
        "192.0.2.1",
        "192.0.2.0/24",
        "domain:example.com",
        "asn:1",
        "port:1",
    ]
    .iter()
    .map(|q| parse(q).unwrap().kind().to_string())
    .collect();
    assert_eq!(kinds, ["ip", "cidr", "domain", "asn", "filter"]);
}

/// What `recognize` must do with a search-bar entry.
#[derive(Debug, Clone, Copy)]
enum Recognized {
    /// Runs the search whose prefixed canonical text this is.
    Runs(&'static str),
    /// Not guessed, with these suggestions.
    Asks(Ambiguity, &'static [&'static str]),
    /// Refused with these codes.
    Refused(&'static [ViolationCode]),
}
use Recognized::*;

fn check_entry(input: &str, expect: Recognized) -> Result<(), String> {
    let got = recognize(input);
    let ok = match (&got, expect) {
        (Entry::Search { query, text }, Runs(want)) => {
            text == want && *text == query.to_string() && parse(text).as_ref() == Ok(query)
        }
        (Entry::NotGuessed(n), Asks(ambiguity, suggestions)) => {
            n.ambiguity == ambiguity && n.suggestions == suggestions && !n.hint().is_empty()
        }
        (Entry::Invalid(e), Refused(codes)) => e.codes() == codes,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{input:?}: expected {expect:?}, got {got:?}"))
    }
}

#[rustfmt::skip]
const ENTRIES: &[(&str, Recognized)] = &[
    // Bare addresses and CIDRs.
    ("192.0.2.1", Runs("192.0.2.1")),
    (" 2001:DB8::1 ", Runs("2001:db8::1")),
    ("[2001:db8::1]", Runs("2001:db8::1")),
    ("::ffff:192.0.2.1", Runs("192.0.2.1")),
    ("192.0.2.9/24", Runs("cidr:192.0.2.0/24")),
    ("10.0.0.0/8", Refused(&[CidrTooBroad])),
    ("2001:db8::/32", Refused(&[Ipv6CidrNotSupported])),
    // AS<number>.
    ("AS15169", Runs("asn:15169")),
    ("as15169", Runs("asn:15169")),
    ("As15169", Runs("asn:15169")),
    ("AS 15169", Runs("asn:15169")),
    ("AS0", Refused(&[InvalidAsn])),
    ("AS015169", Refused(&[InvalidAsn])),
    ("AS4294967296", Refused(&[InvalidAsn])),
    // Pasted URLs search their host.
    ("https://www.example.com/login?next=/#top", Runs("domain:www.example.com")),
    ("http://user:pw@Example.COM:8080/", Runs("domain:example.com")),
    ("https://bücher.example/", Runs("domain:xn--bcher-kva.example")),
    ("ftp://files.acme.example", Runs("domain:files.acme.example")),
    ("https://192.0.2.1:8443/admin", Runs("192.0.2.1")),
    ("http://[2001:db8::1]:8080/x", Runs("2001:db8::1")),
    ("https://co.uk/", Refused(&[InvalidDomain])),
    ("file:///etc/passwd", Refused(&[InvalidDomain])),
    // Bare domains.
    ("example.com", Runs("domain:example.com")),
    ("Example.COM.", Runs("domain:example.com")),
    ("www.acme.co.uk", Runs("domain:www.acme.co.uk")),
    ("bücher.example", Runs("domain:xn--bcher-kva.example")),
    ("co.uk", Refused(&[InvalidQuerySyntax])),
    ("*.example.com", Refused(&[InvalidQuerySyntax])),
    // Bare numbers and two-letter words are not guessed.
    ("22", Asks(Ambiguity::BareNumber, &["asn:22", "port:22"])),
    ("  443 ", Asks(Ambiguity::BareNumber, &["asn:443", "port:443"])),
    ("100000", Asks(Ambiguity::BareNumber, &["asn:100000"])),
    ("0", Asks(Ambiguity::BareNumber, &[])),
    ("0022", Asks(Ambiguity::BareNumber, &["port:22"])),
    ("de", Asks(Ambiguity::TwoLetterWord, &["country:DE"])),
    ("DE", Asks(Ambiguity::TwoLetterWord, &["country:DE"])),
    ("AS", Asks(Ambiguity::TwoLetterWord, &["country:AS"])),
    ("zz", Asks(Ambiguity::TwoLetterWord, &[])),
    ("äö", Asks(Ambiguity::TwoLetterWord, &[])),
    // Everything else is a query.
    ("port:22 protocol:ssh", Runs("port:22 protocol:ssh")),
    ("protocol:ssh AND port:22", Runs("port:22 protocol:ssh")),
    ("domain:example.com", Runs("domain:example.com")),
    ("asn:15169", Runs("asn:15169")),
    ("ssh", Refused(&[InvalidQuerySyntax])),
    ("", Refused(&[InvalidQuerySyntax])),
    ("port:22 OR port:23", Refused(&[UnsupportedOperator])),
    ("22 port:22", Refused(&[InvalidQuerySyntax])),
    ("example.com:443", Refused(&[InvalidQuerySyntax])),
];

#[test]
fn entry_recognition() {
    let failures: Vec<String> = ENTRIES
        .iter()
        .filter_map(|&(input, expect)| check_entry(input, expect).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn not_guessed_hints() {
    let Entry::NotGuessed(n) = recognize("22") else {
        panic!()
    };
    assert_eq!(
        n.hint(),
        "22 could be an ASN or a port: write asn:22 or port:22"
    );
    let Entry::NotGuessed(n) = recognize("de") else {
        panic!()
    };
    assert_eq!(
        n.hint(),
        "de could be a country code or the start of a domain: write country:DE, or type the \
         whole domain name"
    );
}
