//! The configuration every command reads lives in `periscope_server::config` (the server
//! library builds from it); this module keeps the commands' `crate::config::…` paths and
//! says which of the configuration's flags each command takes (the [`Flags`] markers its
//! `ConfigArgs` is made with).

pub(crate) use periscope_server::config::*;

/// The flags of the commands that open the state database (`admin`, `signin`).
#[derive(Debug, Clone, Default)]
pub(crate) struct StateFlags;

impl Flags for StateFlags {
    const KEYS: &'static [&'static str] = &["data", "database_url"];
}

/// The flags of `serve`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServeFlags;

impl Flags for ServeFlags {
    const KEYS: &'static [&'static str] = &["listen", "data", "database_url"];
}

/// The flags of `ingest`: the store or the index it writes to, and the enrichment files.
#[derive(Debug, Clone, Default)]
pub(crate) struct IngestFlags;

impl Flags for IngestFlags {
    const KEYS: &'static [&'static str] = &[
        "data",
        "index.url",
        "enrich.geoip_city",
        "enrich.geoip_asn",
        "enrich.asn_table",
    ];
}

/// The flags of `convert`: the enrichment files.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnrichFlags;

impl Flags for EnrichFlags {
    const KEYS: &'static [&'static str] =
        &["enrich.geoip_city", "enrich.geoip_asn", "enrich.asn_table"];
}

/// The flags of `clickhouse init` and `status`: the index.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexFlags;

impl Flags for IndexFlags {
    const KEYS: &'static [&'static str] = &["index.url"];
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use clap::CommandFactory as _;

    use super::*;

    /// Every argument of `command` and its subcommands, as (long flag, help).
    fn flags(command: &clap::Command, into: &mut Vec<(String, String)>) {
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long() {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                into.push((format!("--{long}"), help));
            }
        }
        for sub in command.get_subcommands() {
            flags(sub, into);
        }
    }

    /// Whether `text` has the variable `name` (not just a longer name it begins).
    fn mentions(text: &str, name: &str) -> bool {
        text.match_indices(name).any(|(at, _)| {
            !text[at + name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    }

    /// Each command's flags are flags `Config` declares.
    #[test]
    fn each_command_takes_declared_flags() {
        let declared: Vec<String> = super::reference()
            .into_iter()
            .filter(|k| k.flag.is_some())
            .map(|k| k.key)
            .collect();
        for keys in [
            StateFlags::KEYS,
            ServeFlags::KEYS,
            IngestFlags::KEYS,
            EnrichFlags::KEYS,
            IndexFlags::KEYS,
        ] {
            for key in keys {
                assert!(declared.iter().any(|k| k == key), "{key}");
            }
        }
    }

    /// `periscope --help` stays true to the keys: each flag declared for a key is taken by
    /// a command whose help says which key and variable it overrides, and each help that says
    /// it overrides a key's variable belongs to a flag declared for that key.
    #[test]
    fn each_flag_help_names_its_key_and_variable() {
        let mut all = Vec::new();
        flags(&crate::Cli::command(), &mut all);
        let reference = super::reference();
        for key in &reference {
            let Some(flag) = &key.flag else { continue };
            // `signin --listen` is the sign-in service's own address, not the key.
            assert!(
                all.iter().any(|(long, help)| long == flag
                    && help.contains(&format!("`{}`", key.key))
                    && mentions(help, &key.env)),
                "no help of {flag} names {} and {}",
                key.key,
                key.env
            );
        }
        for (flag, help) in &all {
            for key in reference.iter().filter(|k| mentions(help, &k.env)) {
                if help.contains("overrides") {
                    assert_eq!(key.flag.as_ref(), Some(flag), "{help}");
                }
            }
        }
    }
}
