//! Products a scan identifies, per protocol family: real software with real versions, CPE 2.3
//! identities in the NVD's spelling, and for some versions the real CVEs that affect them.
//!
//! Version lists are newest first, weighted by how often each version is seen; an older
//! observation of a service picks a version further down the list. CVE lists belong to the
//! version, so the same product and version always carry the same CVEs. The CVE identifiers,
//! their affected versions and their CVSS base scores follow the public advisories; exploit
//! flags mark CVEs with well-known public exploits. They are illustrative enrichment for
//! invented hosts, not an assessment of any real system.

/// A CVE as the enrichment reports it.
#[derive(Debug)]
pub(crate) struct Cve {
    /// `CVE-YYYY-NNNN`.
    pub id: &'static str,
    /// CVSS base score in tenths.
    pub cvss: u8,
    /// A public exploit is known.
    pub exploit: bool,
}

/// One version of a product.
#[derive(Debug)]
pub(crate) struct Version {
    /// The version as shown (`9.6p1`); empty when the scan does not learn it.
    pub shown: &'static str,
    /// The CPE version component (`9.6`, `*` when unknown, `-` when not applicable).
    pub cpe_version: &'static str,
    /// The CPE update component (`p1`, or `*`).
    pub cpe_update: &'static str,
    /// Distribution detail (`Ubuntu-3ubuntu13.5`), used in banners; may be empty.
    pub detail: &'static str,
    /// Relative frequency.
    pub weight: u32,
    /// CVEs affecting this version.
    pub cves: &'static [&'static Cve],
}

/// A product.
#[derive(Debug)]
pub(crate) struct Product {
    /// The human title of the CPE product.
    pub title: &'static str,
    /// CPE part: `a` or `o`.
    pub part: &'static str,
    /// CPE vendor.
    pub vendor: &'static str,
    /// CPE product.
    pub product: &'static str,
    /// Versions, newest first.
    pub versions: &'static [Version],
    /// Banner or `Server` header template: `{v}` version, `{d}` detail, `{name}` host name.
    pub banner: &'static str,
    /// The `Server` header when the version is hidden (HTTP only); empty for none.
    pub banner_bare: &'static str,
    /// The title of the product's default page (HTTP only).
    pub default_title: &'static str,
}

const fn v(
    shown: &'static str,
    cpe_version: &'static str,
    weight: u32,
    cves: &'static [&'static Cve],
) -> Version {
    Version {
        shown,
        cpe_version,
        cpe_update: "*",
        detail: "",
        weight,
        cves,
    }
}

const fn vd(
    shown: &'static str,
    cpe_version: &'static str,
    cpe_update: &'static str,
    detail: &'static str,
    weight: u32,
    cves: &'static [&'static Cve],
) -> Version {
    Version {
        shown,
        cpe_version,
        cpe_update,
        detail,
        weight,
        cves,
    }
}

const fn cve(id: &'static str, cvss: u8, exploit: bool) -> Cve {
    Cve { id, cvss, exploit }
}

// --- CVEs -----------------------------------------------------------------------------------

const HTTP2_RAPID_RESET: Cve = cve("CVE-2023-44487", 75, true);
const NGINX_RESOLVER: Cve = cve("CVE-2021-23017", 77, true);
const NGINX_MP4: Cve = cve("CVE-2022-41741", 78, false);
const HTTP2_DATA_DRIBBLE: Cve = cve("CVE-2019-9511", 75, false);
const HTTPD_TRAVERSAL: Cve = cve("CVE-2021-41773", 75, true);
const HTTPD_TRAVERSAL_RCE: Cve = cve("CVE-2021-42013", 98, true);
const HTTPD_MOD_LUA: Cve = cve("CVE-2021-44790", 98, false);
const HTTPD_SMUGGLING: Cve = cve("CVE-2022-22720", 98, false);
const HTTPD_PROXY: Cve = cve("CVE-2023-25690", 98, false);
const HTTPD_REWRITE: Cve = cve("CVE-2024-38476", 98, false);
const IIS_HTTP_SYS: Cve = cve("CVE-2015-1635", 100, true);
const IIS_HTTP_STACK: Cve = cve("CVE-2022-21907", 98, false);
const TOMCAT_GHOSTCAT: Cve = cve("CVE-2020-1938", 98, true);
const LIGHTTPD_MOD_EXTFORWARD: Cve = cve("CVE-2022-22707", 59, false);
const OPENSSH_REGRESSHION: Cve = cve("CVE-2024-6387", 81, true);
const OPENSSH_AGENT: Cve = cve("CVE-2023-38408", 98, false);
const TERRAPIN: Cve = cve("CVE-2023-48795", 59, false);
const OPENSSH_PRIVSEP: Cve = cve("CVE-2021-41617", 70, false);
const OPENSSH_USER_ENUM: Cve = cve("CVE-2018-15473", 53, true);
const OPENSSH_SCP: Cve = cve("CVE-2020-15778", 78, false);
const DROPBEAR_FORMAT: Cve = cve("CVE-2016-7406", 98, false);
const EXIM_RCE: Cve = cve("CVE-2019-10149", 98, true);
const EXIM_21NAILS: Cve = cve("CVE-2020-28017", 98, false);
const EXCHANGE_PROXYLOGON: Cve = cve("CVE-2021-26855", 98, true);
const EXCHANGE_PROXYSHELL: Cve = cve("CVE-2021-34473", 98, true);
const DOVECOT_NUL: Cve = cve("CVE-2019-11500", 98, false);
const VSFTPD_BACKDOOR: Cve = cve("CVE-2011-2523", 98, true);
const PROFTPD_MOD_COPY: Cve = cve("CVE-2015-3306", 98, true);
const PROFTPD_MOD_COPY_2: Cve = cve("CVE-2019-12815", 98, false);
const MYSQL_AUTH_BYPASS: Cve = cve("CVE-2012-2122", 51, true);
const PG_COPY_PROGRAM: Cve = cve("CVE-2019-9193", 72, true);
const PG_SEARCH_PATH: Cve = cve("CVE-2023-2454", 72, false);
const REDIS_LUA_SANDBOX: Cve = cve("CVE-2022-0543", 100, true);
const REDIS_LUA_OVERFLOW: Cve = cve("CVE-2021-32626", 88, false);
const MEMCACHED_AMPLIFICATION: Cve = cve("CVE-2018-1000115", 75, true);
const SAMBACRY: Cve = cve("CVE-2017-7494", 98, true);
const SAMBA_VFS_FRUIT: Cve = cve("CVE-2021-44142", 88, false);
const BLUEKEEP: Cve = cve("CVE-2019-0708", 98, true);
const WEBMIN_BACKDOOR: Cve = cve("CVE-2019-15107", 98, true);
const ROUTEROS_WINBOX: Cve = cve("CVE-2018-14847", 91, true);
const ROUTEROS_PRIVESC: Cve = cve("CVE-2023-30799", 91, false);
const ESXI_OPENSLP: Cve = cve("CVE-2021-21974", 88, true);
const BIND_TKEY: Cve = cve("CVE-2020-8617", 75, true);
const KEYTRAP: Cve = cve("CVE-2023-50387", 75, false);
const HIKVISION_WEB: Cve = cve("CVE-2021-36260", 98, true);
const TEAMVIEWER_URI: Cve = cve("CVE-2020-13699", 88, false);
const OPENVPN_DOS: Cve = cve("CVE-2020-11810", 37, false);

// --- Products -------------------------------------------------------------------------------

pub(crate) const NGINX: Product = Product {
    title: "nginx",
    part: "a",
    vendor: "f5",
    product: "nginx",
    versions: &[
        v("1.27.3", "1.27.3", 10, &[]),
        v("1.26.2", "1.26.2", 16, &[]),
        v("1.24.0", "1.24.0", 22, &[]),
        v("1.22.1", "1.22.1", 14, &[&NGINX_MP4]),
        v(
            "1.18.0",
            "1.18.0",
            10,
            &[&NGINX_RESOLVER, &NGINX_MP4, &HTTP2_RAPID_RESET],
        ),
        v(
            "1.14.2",
            "1.14.2",
            4,
            &[&NGINX_RESOLVER, &HTTP2_DATA_DRIBBLE, &NGINX_MP4],
        ),
        v("", "*", 24, &[]),
    ],
    banner: "nginx/{v}",
    banner_bare: "nginx",
    default_title: "Welcome to nginx!",
};

pub(crate) const APACHE_HTTPD: Product = Product {
    title: "Apache HTTP Server",
    part: "a",
    vendor: "apache",
    product: "http_server",
    versions: &[
        vd("2.4.62", "2.4.62", "*", "Debian", 14, &[]),
        vd("2.4.58", "2.4.58", "*", "Ubuntu", 20, &[&HTTPD_REWRITE]),
        vd(
            "2.4.52",
            "2.4.52",
            "*",
            "Ubuntu",
            10,
            &[&HTTPD_PROXY, &HTTPD_REWRITE],
        ),
        vd(
            "2.4.49",
            "2.4.49",
            "*",
            "Unix",
            2,
            &[
                &HTTPD_TRAVERSAL,
                &HTTPD_TRAVERSAL_RCE,
                &HTTPD_MOD_LUA,
                &HTTPD_SMUGGLING,
                &HTTPD_PROXY,
            ],
        ),
        vd(
            "2.4.6",
            "2.4.6",
            "*",
            "CentOS",
            8,
            &[
                &HTTPD_MOD_LUA,
                &HTTPD_SMUGGLING,
                &HTTPD_PROXY,
                &HTTPD_REWRITE,
            ],
        ),
        vd("", "*", "*", "", 20, &[]),
    ],
    banner: "Apache/{v} ({d})",
    banner_bare: "Apache",
    default_title: "Apache2 Default Page: It works",
};

pub(crate) const IIS: Product = Product {
    title: "Microsoft IIS",
    part: "a",
    vendor: "microsoft",
    product: "internet_information_services",
    versions: &[
        v("10.0", "10.0", 60, &[&IIS_HTTP_STACK]),
        v("8.5", "8.5", 20, &[]),
        v("7.5", "7.5", 8, &[&IIS_HTTP_SYS]),
    ],
    banner: "Microsoft-IIS/{v}",
    banner_bare: "",
    default_title: "IIS Windows Server",
};

pub(crate) const LITESPEED: Product = Product {
    title: "LiteSpeed Web Server",
    part: "a",
    vendor: "litespeedtech",
    product: "litespeed_web_server",
    versions: &[v("6.2", "6.2", 5, &[]), v("", "*", 10, &[])],
    banner: "LiteSpeed",
    banner_bare: "LiteSpeed",
    default_title: "Web Server's Default Page",
};

pub(crate) const CADDY: Product = Product {
    title: "Caddy",
    part: "a",
    vendor: "caddyserver",
    product: "caddy",
    versions: &[v("2.8.4", "2.8.4", 5, &[]), v("2.7.6", "2.7.6", 5, &[])],
    banner: "Caddy",
    banner_bare: "Caddy",
    default_title: "Caddy works!",
};

pub(crate) const LIGHTTPD: Product = Product {
    title: "lighttpd",
    part: "a",
    vendor: "lighttpd",
    product: "lighttpd",
    versions: &[
        v("1.4.76", "1.4.76", 5, &[]),
        v("1.4.59", "1.4.59", 5, &[&LIGHTTPD_MOD_EXTFORWARD]),
    ],
    banner: "lighttpd/{v}",
    banner_bare: "lighttpd",
    default_title: "lighttpd :: it works",
};

pub(crate) const TOMCAT: Product = Product {
    title: "Apache Tomcat",
    part: "a",
    vendor: "apache",
    product: "tomcat",
    versions: &[
        v("10.1.24", "10.1.24", 6, &[]),
        v("9.0.89", "9.0.89", 6, &[]),
        v("9.0.30", "9.0.30", 2, &[&TOMCAT_GHOSTCAT]),
    ],
    banner: "",
    banner_bare: "",
    default_title: "Apache Tomcat/{v}",
};

pub(crate) const OPENRESTY: Product = Product {
    title: "OpenResty",
    part: "a",
    vendor: "openresty",
    product: "openresty",
    versions: &[
        v("1.25.3.1", "1.25.3.1", 5, &[]),
        v("1.21.4.1", "1.21.4.1", 3, &[]),
    ],
    banner: "openresty/{v}",
    banner_bare: "openresty",
    default_title: "Welcome to OpenResty!",
};

pub(crate) const OPENSSH: Product = Product {
    title: "OpenSSH",
    part: "a",
    vendor: "openbsd",
    product: "openssh",
    versions: &[
        vd("9.9p1", "9.9", "p1", "", 8, &[]),
        vd("9.8p1", "9.8", "p1", "", 8, &[]),
        vd(
            "9.6p1",
            "9.6",
            "p1",
            "Ubuntu-3ubuntu13.5",
            22,
            &[&OPENSSH_REGRESSHION],
        ),
        vd(
            "9.2p1",
            "9.2",
            "p1",
            "Debian-2+deb12u3",
            18,
            &[&OPENSSH_REGRESSHION, &OPENSSH_AGENT, &TERRAPIN],
        ),
        vd(
            "8.9p1",
            "8.9",
            "p1",
            "Ubuntu-3ubuntu0.10",
            14,
            &[&OPENSSH_REGRESSHION, &OPENSSH_AGENT, &TERRAPIN],
        ),
        vd(
            "8.4p1",
            "8.4",
            "p1",
            "Debian-5+deb11u3",
            8,
            &[&OPENSSH_AGENT, &TERRAPIN, &OPENSSH_PRIVSEP],
        ),
        vd(
            "8.2p1",
            "8.2",
            "p1",
            "Ubuntu-4ubuntu0.11",
            6,
            &[&OPENSSH_AGENT, &TERRAPIN, &OPENSSH_PRIVSEP, &OPENSSH_SCP],
        ),
        vd(
            "7.4",
            "7.4",
            "*",
            "",
            6,
            &[
                &OPENSSH_AGENT,
                &TERRAPIN,
                &OPENSSH_PRIVSEP,
                &OPENSSH_SCP,
                &OPENSSH_USER_ENUM,
            ],
        ),
    ],
    banner: "OpenSSH_{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const DROPBEAR: Product = Product {
    title: "Dropbear SSH",
    part: "a",
    vendor: "dropbear_ssh_project",
    product: "dropbear_ssh",
    versions: &[
        v("2024.85", "2024.85", 4, &[]),
        v("2022.83", "2022.83", 6, &[&TERRAPIN]),
        v("2019.78", "2019.78", 3, &[&TERRAPIN]),
        v("2015.71", "2015.71", 1, &[&DROPBEAR_FORMAT, &TERRAPIN]),
    ],
    banner: "dropbear_{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const POSTFIX: Product = Product {
    title: "Postfix",
    part: "a",
    vendor: "postfix",
    product: "postfix",
    versions: &[
        vd("3.8.5", "3.8.5", "*", "Debian", 8, &[]),
        vd("3.6.4", "3.6.4", "*", "Ubuntu", 8, &[]),
        vd("", "*", "*", "", 10, &[]),
    ],
    banner: "220 {name} ESMTP Postfix",
    banner_bare: "",
    default_title: "",
};

pub(crate) const EXIM: Product = Product {
    title: "Exim",
    part: "a",
    vendor: "exim",
    product: "exim",
    versions: &[
        v("4.98", "4.98", 6, &[]),
        v("4.96", "4.96", 6, &[]),
        v("4.94", "4.94", 3, &[&EXIM_21NAILS]),
        v("4.90", "4.90", 1, &[&EXIM_RCE, &EXIM_21NAILS]),
    ],
    banner: "220 {name} ESMTP Exim {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const EXCHANGE: Product = Product {
    title: "Microsoft Exchange Server",
    part: "a",
    vendor: "microsoft",
    product: "exchange_server",
    versions: &[
        vd("2019 CU14", "2019", "cumulative_update_14", "", 6, &[]),
        vd("2016 CU23", "2016", "cumulative_update_23", "", 3, &[]),
        vd(
            "2016 CU19",
            "2016",
            "cumulative_update_19",
            "",
            1,
            &[&EXCHANGE_PROXYLOGON, &EXCHANGE_PROXYSHELL],
        ),
    ],
    banner: "220 {name} Microsoft ESMTP MAIL Service ready",
    banner_bare: "",
    default_title: "Outlook",
};

pub(crate) const DOVECOT: Product = Product {
    title: "Dovecot",
    part: "a",
    vendor: "dovecot",
    product: "dovecot",
    versions: &[
        v("2.3.21", "2.3.21", 10, &[]),
        v("2.3.16", "2.3.16", 6, &[]),
        v("2.3.4", "2.3.4", 2, &[&DOVECOT_NUL]),
        v("", "*", 6, &[]),
    ],
    banner: "Dovecot ready.",
    banner_bare: "",
    default_title: "",
};

pub(crate) const CYRUS: Product = Product {
    title: "Cyrus IMAP",
    part: "a",
    vendor: "cyrus",
    product: "imap",
    versions: &[v("3.6.4", "3.6.4", 2, &[]), v("3.2.6", "3.2.6", 1, &[])],
    banner: "{name} Cyrus IMAP v{v} server ready",
    banner_bare: "",
    default_title: "",
};

pub(crate) const VSFTPD: Product = Product {
    title: "vsftpd",
    part: "a",
    vendor: "beasts",
    product: "vsftpd",
    versions: &[
        v("3.0.5", "3.0.5", 8, &[]),
        v("3.0.3", "3.0.3", 6, &[]),
        v("2.3.4", "2.3.4", 1, &[&VSFTPD_BACKDOOR]),
    ],
    banner: "220 (vsFTPd {v})",
    banner_bare: "",
    default_title: "",
};

pub(crate) const PROFTPD: Product = Product {
    title: "ProFTPD",
    part: "a",
    vendor: "proftpd",
    product: "proftpd",
    versions: &[
        v("1.3.8", "1.3.8", 6, &[]),
        v("1.3.6", "1.3.6", 2, &[&PROFTPD_MOD_COPY_2]),
        v(
            "1.3.5",
            "1.3.5",
            1,
            &[&PROFTPD_MOD_COPY, &PROFTPD_MOD_COPY_2],
        ),
    ],
    banner: "220 ProFTPD Server ({name})",
    banner_bare: "",
    default_title: "",
};

pub(crate) const PURE_FTPD: Product = Product {
    title: "Pure-FTPd",
    part: "a",
    vendor: "pureftpd",
    product: "pure-ftpd",
    versions: &[v("1.0.51", "1.0.51", 3, &[]), v("", "*", 3, &[])],
    banner: "220---------- Welcome to Pure-FTPd [privsep] [TLS] ----------",
    banner_bare: "",
    default_title: "",
};

pub(crate) const FILEZILLA_SERVER: Product = Product {
    title: "FileZilla Server",
    part: "a",
    vendor: "filezilla-project",
    product: "filezilla_server",
    versions: &[v("1.8.1", "1.8.1", 2, &[]), v("0.9.60", "0.9.60", 1, &[])],
    banner: "220-FileZilla Server {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MYSQL: Product = Product {
    title: "MySQL",
    part: "a",
    vendor: "oracle",
    product: "mysql",
    versions: &[
        v("8.4.3", "8.4.3", 6, &[]),
        v("8.0.36", "8.0.36", 12, &[]),
        v("5.7.44", "5.7.44", 6, &[]),
        v("5.5.20", "5.5.20", 1, &[&MYSQL_AUTH_BYPASS]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MARIADB: Product = Product {
    title: "MariaDB",
    part: "a",
    vendor: "mariadb",
    product: "mariadb",
    versions: &[
        v("11.4.2", "11.4.2", 4, &[]),
        v("10.11.6", "10.11.6", 8, &[]),
        v("10.6.16", "10.6.16", 6, &[]),
        v("10.3.39", "10.3.39", 3, &[]),
    ],
    banner: "5.5.5-{v}-MariaDB",
    banner_bare: "",
    default_title: "",
};

pub(crate) const POSTGRESQL: Product = Product {
    title: "PostgreSQL",
    part: "a",
    vendor: "postgresql",
    product: "postgresql",
    versions: &[
        v("16.4", "16.4", 10, &[]),
        v("15.8", "15.8", 8, &[]),
        v("14.13", "14.13", 6, &[]),
        v("13.4", "13.4", 3, &[&PG_SEARCH_PATH]),
        v("11.1", "11.1", 1, &[&PG_COPY_PROGRAM, &PG_SEARCH_PATH]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const REDIS: Product = Product {
    title: "Redis",
    part: "a",
    vendor: "redis",
    product: "redis",
    versions: &[
        v("7.2.5", "7.2.5", 10, &[]),
        v("7.0.15", "7.0.15", 6, &[]),
        v("6.0.9", "6.0.9", 3, &[&REDIS_LUA_OVERFLOW]),
        v(
            "5.0.7",
            "5.0.7",
            2,
            &[&REDIS_LUA_SANDBOX, &REDIS_LUA_OVERFLOW],
        ),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MONGODB: Product = Product {
    title: "MongoDB",
    part: "a",
    vendor: "mongodb",
    product: "mongodb",
    versions: &[
        v("7.0.12", "7.0.12", 6, &[]),
        v("6.0.16", "6.0.16", 5, &[]),
        v("4.4.29", "4.4.29", 3, &[]),
        v("3.6.23", "3.6.23", 1, &[]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MEMCACHED: Product = Product {
    title: "Memcached",
    part: "a",
    vendor: "memcached",
    product: "memcached",
    versions: &[
        v("1.6.29", "1.6.29", 6, &[]),
        v("1.6.9", "1.6.9", 4, &[]),
        v("1.4.25", "1.4.25", 2, &[&MEMCACHED_AMPLIFICATION]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MSSQL: Product = Product {
    title: "Microsoft SQL Server",
    part: "a",
    vendor: "microsoft",
    product: "sql_server",
    versions: &[
        v("2022", "2022", 4, &[]),
        v("2019", "2019", 6, &[]),
        v("2016", "2016", 3, &[]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const ORACLE_DB: Product = Product {
    title: "Oracle Database Server",
    part: "a",
    vendor: "oracle",
    product: "database_server",
    versions: &[v("19c", "19c", 4, &[]), v("12.2.0.1", "12.2.0.1", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const ZOOKEEPER: Product = Product {
    title: "Apache ZooKeeper",
    part: "a",
    vendor: "apache",
    product: "zookeeper",
    versions: &[v("3.9.2", "3.9.2", 3, &[]), v("3.6.3", "3.6.3", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const WINDOWS_2022: Product =
    windows("Microsoft Windows Server 2022", "windows_server_2022");
pub(crate) const WINDOWS_2019: Product =
    windows("Microsoft Windows Server 2019", "windows_server_2019");
pub(crate) const WINDOWS_2016: Product =
    windows("Microsoft Windows Server 2016", "windows_server_2016");
pub(crate) const WINDOWS_2008_R2: Product = Product {
    title: "Microsoft Windows Server 2008 R2",
    part: "o",
    vendor: "microsoft",
    product: "windows_server_2008",
    versions: &[vd("", "r2", "sp1", "", 1, &[&BLUEKEEP])],
    banner: "",
    banner_bare: "",
    default_title: "",
};

/// An operating system identified without a version (`-`: not applicable).
const OS_RELEASE: &[Version] = &[v("", "-", 1, &[])];

const fn windows(title: &'static str, product: &'static str) -> Product {
    Product {
        title,
        part: "o",
        vendor: "microsoft",
        product,
        versions: OS_RELEASE,
        banner: "",
        banner_bare: "",
        default_title: "",
    }
}

pub(crate) const SAMBA: Product = Product {
    title: "Samba",
    part: "a",
    vendor: "samba",
    product: "samba",
    versions: &[
        v("4.19.5", "4.19.5", 6, &[]),
        v("4.15.13", "4.15.13", 4, &[]),
        v("4.13.5", "4.13.5", 2, &[&SAMBA_VFS_FRUIT]),
        v("4.4.14", "4.4.14", 1, &[&SAMBACRY, &SAMBA_VFS_FRUIT]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const BIND: Product = Product {
    title: "ISC BIND",
    part: "a",
    vendor: "isc",
    product: "bind",
    versions: &[
        v("9.20.1", "9.20.1", 4, &[]),
        v("9.18.24", "9.18.24", 6, &[]),
        v("9.16.44", "9.16.44", 3, &[&KEYTRAP]),
        v("9.11.5", "9.11.5", 1, &[&BIND_TKEY, &KEYTRAP]),
    ],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const UNBOUND: Product = Product {
    title: "Unbound",
    part: "a",
    vendor: "nlnetlabs",
    product: "unbound",
    versions: &[
        v("1.21.0", "1.21.0", 4, &[]),
        v("1.13.1", "1.13.1", 2, &[&KEYTRAP]),
    ],
    banner: "unbound {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const DNSMASQ: Product = Product {
    title: "dnsmasq",
    part: "a",
    vendor: "thekelleys",
    product: "dnsmasq",
    versions: &[v("2.90", "2.90", 4, &[]), v("2.85", "2.85", 3, &[&KEYTRAP])],
    banner: "dnsmasq-{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const NTPD: Product = Product {
    title: "NTP",
    part: "a",
    vendor: "ntp",
    product: "ntp",
    versions: &[
        vd("4.2.8p17", "4.2.8", "p17", "", 4, &[]),
        vd("4.2.8p15", "4.2.8", "p15", "", 4, &[]),
    ],
    banner: "ntpd {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const NET_SNMP: Product = Product {
    title: "Net-SNMP",
    part: "a",
    vendor: "net-snmp",
    product: "net-snmp",
    versions: &[v("5.9.4", "5.9.4", 4, &[]), v("5.7.3", "5.7.3", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const RSYNC: Product = Product {
    title: "rsync",
    part: "a",
    vendor: "samba",
    product: "rsync",
    versions: &[v("3.2.7", "3.2.7", 4, &[]), v("3.1.3", "3.1.3", 2, &[])],
    banner: "@RSYNCD: 31.0",
    banner_bare: "",
    default_title: "",
};

pub(crate) const TIGERVNC: Product = Product {
    title: "TigerVNC",
    part: "a",
    vendor: "tigervnc",
    product: "tigervnc",
    versions: &[v("1.13.1", "1.13.1", 3, &[]), v("1.10.1", "1.10.1", 2, &[])],
    banner: "RFB 003.008",
    banner_bare: "",
    default_title: "",
};

pub(crate) const BUSYBOX: Product = Product {
    title: "BusyBox",
    part: "a",
    vendor: "busybox",
    product: "busybox",
    versions: &[v("1.36.1", "1.36.1", 3, &[]), v("1.31.1", "1.31.1", 3, &[])],
    banner: "BusyBox v{v} built-in shell",
    banner_bare: "",
    default_title: "",
};

pub(crate) const SUBVERSION: Product = Product {
    title: "Apache Subversion",
    part: "a",
    vendor: "apache",
    product: "subversion",
    versions: &[v("1.14.3", "1.14.3", 3, &[]), v("1.10.6", "1.10.6", 1, &[])],
    banner: "( success ( 2 2 ( ) ( edit-pipeline svndiff1 ) ) )",
    banner_bare: "",
    default_title: "",
};

pub(crate) const WEBMIN: Product = Product {
    title: "Webmin",
    part: "a",
    vendor: "webmin",
    product: "webmin",
    versions: &[
        v("2.105", "2.105", 5, &[]),
        v("1.994", "1.994", 3, &[]),
        v("1.910", "1.910", 1, &[&WEBMIN_BACKDOOR]),
    ],
    banner: "MiniServ/{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const ASTERISK: Product = Product {
    title: "Asterisk",
    part: "a",
    vendor: "digium",
    product: "asterisk",
    versions: &[
        v("20.9.2", "20.9.2", 3, &[]),
        v("16.30.1", "16.30.1", 2, &[]),
    ],
    banner: "Asterisk PBX {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const RABBITMQ: Product = Product {
    title: "RabbitMQ",
    part: "a",
    vendor: "vmware",
    product: "rabbitmq",
    versions: &[v("3.13.6", "3.13.6", 3, &[]), v("3.8.9", "3.8.9", 1, &[])],
    banner: "RabbitMQ {v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const ROUTEROS: Product = Product {
    title: "MikroTik RouterOS",
    part: "o",
    vendor: "mikrotik",
    product: "routeros",
    versions: &[
        v("7.15.3", "7.15.3", 6, &[]),
        v("6.49.10", "6.49.10", 5, &[&ROUTEROS_PRIVESC]),
        v("6.42", "6.42", 1, &[&ROUTEROS_WINBOX, &ROUTEROS_PRIVESC]),
    ],
    banner: "RouterOS v{v}",
    banner_bare: "",
    default_title: "RouterOS router configuration page",
};

pub(crate) const ESXI: Product = Product {
    title: "VMware ESXi",
    part: "o",
    vendor: "vmware",
    product: "esxi",
    versions: &[
        v("8.0", "8.0", 4, &[]),
        v("7.0", "7.0", 4, &[]),
        v("6.7", "6.7", 2, &[&ESXI_OPENSLP]),
    ],
    banner: "220 VMware Authentication Daemon Version 1.10: SSL Required, ServerDaemonProtocol:SOAP, MKSDisplayProtocol:VNC , , NFCSSL supported/t",
    banner_bare: "",
    default_title: "",
};

pub(crate) const OPENVPN: Product = Product {
    title: "OpenVPN",
    part: "a",
    vendor: "openvpn",
    product: "openvpn",
    versions: &[
        v("2.6.12", "2.6.12", 4, &[]),
        v("2.5.9", "2.5.9", 3, &[]),
        v("2.4.7", "2.4.7", 1, &[&OPENVPN_DOS]),
    ],
    banner: "",
    banner_bare: "",
    default_title: "",
};

pub(crate) const TEAMVIEWER: Product = Product {
    title: "TeamViewer",
    part: "a",
    vendor: "teamviewer",
    product: "teamviewer",
    versions: &[
        v("15.57.5", "15.57.5", 4, &[]),
        v("15.8.2", "15.8.2", 1, &[&TEAMVIEWER_URI]),
    ],
    banner: "",
    banner_bare: "",
    default_title: "",
};

pub(crate) const CUPS: Product = Product {
    title: "CUPS",
    part: "a",
    vendor: "openprinting",
    product: "cups",
    versions: &[v("2.4.7", "2.4.7", 3, &[]), v("2.3.1", "2.3.1", 2, &[])],
    banner: "CUPS/{v} IPP/2.1",
    banner_bare: "",
    default_title: "",
};

pub(crate) const OPENLDAP: Product = Product {
    title: "OpenLDAP",
    part: "a",
    vendor: "openldap",
    product: "openldap",
    versions: &[v("2.6.8", "2.6.8", 3, &[]), v("2.4.57", "2.4.57", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const INN: Product = Product {
    title: "InterNetNews",
    part: "a",
    vendor: "isc",
    product: "inn",
    versions: &[v("2.7.2", "2.7.2", 1, &[])],
    banner: "200 {name} InterNetNews NNRP server INN {v} ready (posting ok)",
    banner_bare: "",
    default_title: "",
};

pub(crate) const FRR: Product = Product {
    title: "FRRouting",
    part: "a",
    vendor: "linuxfoundation",
    product: "free_range_routing",
    versions: &[v("9.1", "9.1", 3, &[]), v("8.4.4", "8.4.4", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const CISCO_IOS: Product = Product {
    title: "Cisco IOS",
    part: "o",
    vendor: "cisco",
    product: "ios",
    versions: &[v("15.2", "15.2", 3, &[]), v("12.2", "12.2", 1, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MIT_KERBEROS: Product = Product {
    title: "MIT Kerberos 5",
    part: "a",
    vendor: "mit",
    product: "kerberos_5",
    versions: &[v("1.21.3", "1.21.3", 2, &[]), v("1.18.3", "1.18.3", 1, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const HIKVISION_CAMERA: Product = Product {
    title: "Hikvision DS-2CD2142FWD-I Firmware",
    part: "o",
    vendor: "hikvision",
    product: "ds-2cd2142fwd-i_firmware",
    versions: &[
        v("5.7.3", "5.7.3", 4, &[]),
        v("5.5.0", "5.5.0", 2, &[&HIKVISION_WEB]),
    ],
    banner: "App-webs/",
    banner_bare: "App-webs/",
    default_title: "Web Client",
};

pub(crate) const SIMATIC_S7: Product = Product {
    title: "Siemens SIMATIC S7-1200 Firmware",
    part: "o",
    vendor: "siemens",
    product: "simatic_s7-1200_firmware",
    versions: &[v("4.6", "4.6", 3, &[]), v("4.2", "4.2", 2, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MODICON: Product = Product {
    title: "Schneider Electric Modicon M340 Firmware",
    part: "o",
    vendor: "schneider-electric",
    product: "modicon_m340_firmware",
    versions: &[v("3.50", "3.50", 3, &[]), v("2.70", "2.70", 1, &[])],
    banner: "{v}",
    banner_bare: "",
    default_title: "",
};

pub(crate) const MINIUPNPD: Product = Product {
    title: "MiniUPnPd",
    part: "a",
    vendor: "miniupnp_project",
    product: "miniupnpd",
    versions: &[v("2.3.3", "2.3.3", 3, &[]), v("1.9", "1.9", 2, &[])],
    banner: "Linux/3.14 UPnP/1.0 MiniUPnPd/{v}",
    banner_bare: "",
    default_title: "",
};

/// Every product, so the tables can be checked.
#[cfg(test)]
pub(crate) static ALL: &[&Product] = &[
    &NGINX,
    &APACHE_HTTPD,
    &IIS,
    &LITESPEED,
    &CADDY,
    &LIGHTTPD,
    &TOMCAT,
    &OPENRESTY,
    &OPENSSH,
    &DROPBEAR,
    &POSTFIX,
    &EXIM,
    &EXCHANGE,
    &DOVECOT,
    &CYRUS,
    &VSFTPD,
    &PROFTPD,
    &PURE_FTPD,
    &FILEZILLA_SERVER,
    &MYSQL,
    &MARIADB,
    &POSTGRESQL,
    &REDIS,
    &MONGODB,
    &MEMCACHED,
    &MSSQL,
    &ORACLE_DB,
    &ZOOKEEPER,
    &WINDOWS_2022,
    &WINDOWS_2019,
    &WINDOWS_2016,
    &WINDOWS_2008_R2,
    &SAMBA,
    &BIND,
    &UNBOUND,
    &DNSMASQ,
    &NTPD,
    &NET_SNMP,
    &RSYNC,
    &TIGERVNC,
    &BUSYBOX,
    &SUBVERSION,
    &WEBMIN,
    &ASTERISK,
    &RABBITMQ,
    &ROUTEROS,
    &ESXI,
    &OPENVPN,
    &TEAMVIEWER,
    &CUPS,
    &OPENLDAP,
    &INN,
    &FRR,
    &CISCO_IOS,
    &MIT_KERBEROS,
    &HIKVISION_CAMERA,
    &SIMATIC_S7,
    &MODICON,
    &MINIUPNPD,
];

/// Web servers on general-purpose hosts.
pub(crate) static WEB: &[(u32, &Product)] = &[
    (36, &NGINX),
    (26, &APACHE_HTTPD),
    (6, &LITESPEED),
    (4, &CADDY),
    (3, &LIGHTTPD),
    (4, &TOMCAT),
    (4, &OPENRESTY),
];

/// Windows web servers.
pub(crate) static WINDOWS_WEB: &[(u32, &Product)] = &[(1, &IIS)];

/// Windows Server releases.
pub(crate) static WINDOWS: &[(u32, &Product)] = &[
    (5, &WINDOWS_2022),
    (8, &WINDOWS_2019),
    (4, &WINDOWS_2016),
    (1, &WINDOWS_2008_R2),
];

/// SSH servers on general-purpose hosts.
pub(crate) static SSH: &[(u32, &Product)] = &[(1, &OPENSSH)];

/// SSH servers on embedded devices.
pub(crate) static SSH_EMBEDDED: &[(u32, &Product)] = &[(3, &DROPBEAR), (1, &OPENSSH)];

/// The product table of a protocol on a general-purpose host, or `None` when scans of it
/// identify no product.
pub(crate) fn for_protocol(protocol: &str) -> Option<&'static [(u32, &'static Product)]> {
    Some(match protocol {
        "http" | "https" => WEB,
        "ssh" => SSH,
        "smtp" | "smtps" => &[(6, &POSTFIX), (3, &EXIM), (1, &EXCHANGE)],
        "imap" | "imaps" | "pop3" | "pop3s" => &[(8, &DOVECOT), (1, &CYRUS)],
        "ftp" => &[
            (4, &VSFTPD),
            (3, &PROFTPD),
            (2, &PURE_FTPD),
            (1, &FILEZILLA_SERVER),
        ],
        "mysql" => &[(3, &MYSQL), (2, &MARIADB)],
        "postgres" => &[(1, &POSTGRESQL)],
        "redis" => &[(1, &REDIS)],
        "mongodb" => &[(1, &MONGODB)],
        "memcached" => &[(1, &MEMCACHED)],
        "mssql" => &[(1, &MSSQL)],
        "oracletns" => &[(1, &ORACLE_DB)],
        "zookeeper" => &[(1, &ZOOKEEPER)],
        "rdp" | "winrm" | "winrms" => WINDOWS,
        "samba" => &[(1, &SAMBA)],
        "dnstcp" => &[(5, &BIND), (2, &UNBOUND), (3, &DNSMASQ)],
        "ntp" => &[(1, &NTPD)],
        "snmpv1" | "snmpv2" | "snmpv3" => &[(1, &NET_SNMP)],
        "rsync" => &[(1, &RSYNC)],
        "vnc" => &[(1, &TIGERVNC)],
        "telnet" => &[(1, &BUSYBOX)],
        "subversion" => &[(1, &SUBVERSION)],
        "webmin" => &[(1, &WEBMIN)],
        "sip" => &[(1, &ASTERISK)],
        "amqp" => &[(1, &RABBITMQ)],
        "mikrotikapi" | "pptp" => &[(1, &ROUTEROS)],
        "vmwareauthd" => &[(1, &ESXI)],
        "openvpntcp" | "openvpnudp" => &[(1, &OPENVPN)],
        "teamviewer" => &[(1, &TEAMVIEWER)],
        "ipp" => &[(1, &CUPS)],
        "ldaptcp" | "ldapudp" => &[(1, &OPENLDAP)],
        "nntp" => &[(1, &INN)],
        "bgp" => &[(2, &FRR), (1, &CISCO_IOS)],
        "ciscosmi" => &[(1, &CISCO_IOS)],
        "kerberos" => &[(1, &MIT_KERBEROS)],
        "hikvision" => &[(1, &HIKVISION_CAMERA)],
        "s7" => &[(1, &SIMATIC_S7)],
        "modbus" => &[(1, &MODICON)],
        "upnp" => &[(1, &MINIUPNPD)],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use periscope_model::{Cpe23, CveId, Cvss};

    #[test]
    fn every_identity_is_valid() {
        for p in ALL {
            assert!(!p.versions.is_empty(), "{}", p.title);
            assert!(p.part == "a" || p.part == "o");
            for ver in p.versions {
                let cpe = format!(
                    "cpe:2.3:{}:{}:{}:{}:{}:*:*:*:*:*:*",
                    p.part, p.vendor, p.product, ver.cpe_version, ver.cpe_update
                );
                let parsed = Cpe23::parse(&cpe).unwrap_or_else(|e| panic!("{cpe}: {e}"));
                assert_eq!(parsed.as_str(), cpe, "CPEs are written lowercase");
                assert!(ver.weight > 0);
                for c in ver.cves {
                    assert_eq!(CveId::parse(c.id).unwrap().to_string(), c.id);
                    Cvss::from_tenths(c.cvss).unwrap();
                }
                let mut ids: Vec<_> = ver.cves.iter().map(|c| c.id).collect();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), ver.cves.len(), "{} {}", p.title, ver.shown);
                // An unknown version carries no CVEs: enrichment needs a version.
                assert!(ver.cpe_version != "*" || ver.cves.is_empty());
            }
        }
    }

    #[test]
    fn some_but_not_most_versions_are_vulnerable() {
        let (mut vulnerable, mut total) = (0u32, 0u32);
        for p in ALL {
            for ver in p.versions {
                total += ver.weight;
                if !ver.cves.is_empty() {
                    vulnerable += ver.weight;
                }
            }
        }
        assert!(
            vulnerable * 5 > total && vulnerable * 2 < total,
            "{vulnerable}/{total}"
        );
    }
}
