//! Scenarios: a TOML file describing the server, its knobs and its load,
//! validated into a typed [`Config`]. A scenario is resolved in three layers,
//! later ones winning: the file, then a named [`profile`], then `key=value`
//! overrides (`--set`). Profiles are themselves expressed as overrides, so a
//! user override of one of a profile's knobs always wins over the profile.

pub mod bulk;
pub mod oltp;
pub mod storage;
pub mod config;
pub mod itr;
pub mod microarch;
pub mod profile;
pub mod steering;
mod validate;
pub mod vm;

pub use config::*;
pub use bulk::BulkCfg;
pub use oltp::OltpCfg;
pub use storage::{ArrayService, GuestDispatcher, StorageCfg, VicCfg};
pub use itr::{ItrCfg, ItrPolicyKind, ItrSetWith, NicKind};
pub use microarch::{IpcModel, MicroarchCfg};
pub use steering::{SteeringCfg, SteeringScheme};
pub use vm::{VmCfg, VmKind};
pub use profile::{Coalesce, EpollParams, PerNapi, Profile, ProfileKnobs};

use crate::error::{one_line, Error};

/// The largest scenario file read (4 MiB): a scenario is a page of TOML;
/// anything this large is a mistake.
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// A scenario: the raw file, the chosen profile and overrides, and the
/// resolved, validated configuration.
#[derive(Clone, Debug)]
pub struct Scenario {
    raw: toml::Table,
    profile: Option<Profile>,
    overrides: Vec<(String, String)>,
    cfg: Config,
}

impl Scenario {
    /// Parse and validate a scenario from TOML text.
    pub fn from_toml_str(text: &str) -> Result<Self, Error> {
        let raw: toml::Table = text.parse().map_err(|e: toml::de::Error| toml_syntax_error(text, &e))?;
        let mut s = Scenario { raw, profile: None, overrides: vec![], cfg: Config::default() };
        // The file may name a default profile; `set_profile` replaces it.
        s.resolve()?;
        if let Some(name) = s.cfg.run.profile.clone() {
            s.profile = Some(Profile::by_name(&name).map_err(|e| Error::field("run.profile", e))?);
            s.resolve()?;
        }
        Ok(s)
    }

    /// Read and parse a scenario file: a regular file of at most
    /// [`MAX_SCENARIO_BYTES`] (a device such as `/dev/zero` would never end).
    pub fn from_path(path: &std::path::Path) -> Result<Self, Error> {
        use std::io::Read;
        let cannot = |why: String| Error::Scenario(format!("cannot read scenario file {}: {why}", path.display()));
        let meta = std::fs::metadata(path).map_err(|e| cannot(e.to_string()))?;
        if !meta.is_file() {
            return Err(cannot("it is not a regular file".to_string()));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| cannot(e.to_string()))?;
        if bytes.len() as u64 > MAX_SCENARIO_BYTES {
            return Err(cannot(format!("it is larger than {MAX_SCENARIO_BYTES} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".to_string()))?;
        let s = Self::from_toml_str(&text)?;
        // An empty file (or one of comments) would run every default: more
        // likely a truncated or wrong file than a choice (issue 62, item 12).
        if s.raw.is_empty() {
            return Err(cannot(EMPTY_FILE.to_string()));
        }
        Ok(s)
    }

    /// Select a profile by name (`no-coalescing`, `adaptive-coalescing`,
    /// `busy-wait`, `irq-suspend`, `irq-batching`, `kernel-polling`).
    pub fn set_profile(&mut self, name: &str) -> Result<(), Error> {
        let p = Profile::by_name(name).map_err(|e| Error::Override(format!("profile {e}")))?;
        let old = self.profile.replace(p);
        if let Err(e) = self.resolve() {
            self.profile = old;
            return Err(e);
        }
        Ok(())
    }

    /// Apply one override `key = value`; `key` is a dotted path such as
    /// `load.qps` or `coalesce.rx-usecs`; `value` is a TOML value (a bare
    /// word that is not valid TOML is taken as a string).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        check_override(key, value)?;
        self.overrides.push((key.to_string(), value.to_string()));
        if let Err(e) = self.resolve() {
            self.overrides.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Apply an override written `key=value`.
    pub fn set_pair(&mut self, pair: &str) -> Result<(), Error> {
        self.set_pairs(&[pair])
    }

    /// Apply several `key=value` overrides at once: they are validated
    /// together, so a combination valid only as a whole is accepted. On error
    /// none is applied.
    pub fn set_pairs<S: AsRef<str>>(&mut self, pairs: &[S]) -> Result<(), Error> {
        let n = self.overrides.len();
        for pair in pairs {
            let pair = pair.as_ref();
            let Some((k, v)) = pair.split_once('=') else {
                self.overrides.truncate(n);
                return Err(Error::Override(format!(
                    "override `{pair}` must have the form key=value, e.g. load.qps=300000"
                )));
            };
            let (k, v) = (k.trim(), v.trim());
            if let Err(e) = check_override(k, v) {
                self.overrides.truncate(n);
                return Err(e);
            }
            self.overrides.push((k.to_string(), v.to_string()));
        }
        if let Err(e) = self.resolve() {
            self.overrides.truncate(n);
            return Err(e);
        }
        Ok(())
    }

    /// The resolved configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The profile in effect, if any.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// The resolved scenario as TOML (file + profile + overrides), for reports.
    pub fn resolved_toml(&self) -> String {
        toml::to_string(&self.cfg).unwrap_or_default()
    }

    fn resolve(&mut self) -> Result<(), Error> {
        let mut table = self.raw.clone();
        if let Some(p) = &self.profile {
            for (k, v) in profile::overrides(*p) {
                set_path(&mut table, k, v.clone())?;
            }
        }
        for (k, v) in &self.overrides {
            set_path(&mut table, k, parse_value(k, v)?)?;
        }
        validate::size_tables(&table)?;
        let cfg: Config = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.inner().message().to_string();
            if path == "." || path.is_empty() {
                Error::Scenario(format!("scenario: {}", one_line(&msg)))
            } else {
                Error::Scenario(format!("scenario field `{path}`{}", plain_type_error(&path, &msg)))
            }
        })?;
        validate::validate(&cfg)?;
        // The profile is chosen by the file's `run.profile` or by
        // `set_profile`, never by an override: an override naming one would
        // be silently ignored, since profiles apply before overrides.
        let file_profile = self.raw.get("run").and_then(|r| r.get("profile")).and_then(|p| p.as_str());
        if cfg.run.profile.as_deref() != file_profile {
            return Err(Error::Override(PROFILE_OVERRIDE.to_string()));
        }
        self.cfg = cfg;
        Ok(())
    }
}

/// Why an empty scenario file is refused, in Python's words too
/// (`python/irqlab/scenario.py`, `read_scenario_file`).
pub const EMPTY_FILE: &str = "it sets no field (it is empty or holds only comments); give at least one table, \
     e.g. [load], or start from a file in scenarios/";

const PROFILE_OVERRIDE: &str = "the profile cannot be set by overriding `run.profile`; choose it with --profile on the \
     command line or Scenario.with_profile in Python";

/// Checks of an override that need no scenario: the key is not
/// `run.profile`, and the value is one line.
fn check_override(key: &str, value: &str) -> Result<(), Error> {
    if key == "run.profile" {
        return Err(Error::Override(PROFILE_OVERRIDE.to_string()));
    }
    if value.contains(['\n', '\r']) {
        return Err(Error::Override(format!("override `{key}` must be one value on one line")));
    }
    Ok(())
}

/// "invalid table header\nexpected ..." at a byte offset → one sentence with
/// the line and column (1-based, columns in characters).
fn toml_syntax_error(text: &str, e: &toml::de::Error) -> Error {
    let msg = one_line(e.message());
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            Error::Toml(format!("at line {line}, column {column}: {msg}"))
        }
        None => Error::Toml(format!("at an unknown position: {msg}")),
    }
}

/// serde's "invalid type: string \"many\", expected u32" in the user's
/// words: "must be a whole number from 1 to 1024 (got the string \"many\")".
/// Rust type names (`u32`, `struct LoadCfg`) never reach the user.
fn plain_type_error(path: &str, msg: &str) -> String {
    let msg = one_line(msg);
    let rest = msg.strip_prefix("invalid type: ").or_else(|| msg.strip_prefix("invalid value: "));
    let Some((got, expected)) = rest.and_then(|r| r.split_once(", expected ")) else {
        return format!(": {msg}");
    };
    let expected = validate::accepted_range(path).unwrap_or_else(|| plain_expected(expected));
    match plain_got(got) {
        Some(got) => format!(" must be {expected} (got {got})"),
        // serde does not say which value a name field was given.
        None => format!(" must be {expected}"),
    }
}

fn plain_expected(rust: &str) -> String {
    let whole = |hi: u64| format!("a whole number from 0 to {hi}");
    match rust {
        "u8" => whole(u8::MAX as u64),
        "u16" => whole(u16::MAX as u64),
        "u32" => whole(u32::MAX as u64),
        // TOML integers are signed 64-bit.
        "u64" | "usize" => whole(i64::MAX as u64),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a string" => "a string in quotes".to_string(),
        "string only" => "a name in quotes".to_string(),
        "option" => "a value".to_string(),
        r if r.starts_with("struct ") || r.starts_with("a map") => "a table of fields".to_string(),
        r if r.starts_with("internally tagged enum") => "a table with a `dist` key".to_string(),
        r if r.starts_with("enum ") => "one of the accepted names".to_string(),
        r => r.to_string(),
    }
}

fn plain_got(serde: &str) -> Option<String> {
    let tick = |s: &str| s.trim_start_matches('`').trim_end_matches('`').to_string();
    Some(if let Some(s) = serde.strip_prefix("string ") {
        format!("the string {s}")
    } else if let Some(v) = serde.strip_prefix("integer ").or_else(|| serde.strip_prefix("floating point ")) {
        tick(v)
    } else if let Some(v) = serde.strip_prefix("boolean ") {
        tick(v)
    } else {
        match serde {
            "map" => "a table".to_string(),
            "sequence" => "a list".to_string(),
            "unit variant" => return None,
            other => other.to_string(),
        }
    })
}

/// Parse an override's value as TOML. A bare word that is not TOML (`fb_ia`,
/// `packed`) is taken as a string; text that looks like a number, list,
/// table or quoted string but does not parse is an error, never a string
/// (`99999999999999999999` is a number too large, not a word).
fn parse_value(key: &str, v: &str) -> Result<toml::Value, Error> {
    let doc = format!("v = {v}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) if t.len() == 1 => Ok(t.remove("v").unwrap_or(toml::Value::String(v.to_string()))),
        Ok(_) => Err(Error::Override(format!("override `{key}` must be one value on one line"))),
        Err(e) => {
            let looks_like_value = v.starts_with(|c: char| c.is_ascii_digit() || "+-.[{\"'".contains(c));
            if !looks_like_value {
                return Ok(toml::Value::String(v.to_string()));
            }
            let numeric = v.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c));
            match (numeric, validate::accepted_range(key)) {
                (true, Some(range)) => Err(Error::field(key, format!("must be {range} (got {v})"))),
                _ => Err(Error::Override(format!(
                    "override `{key}` has a value that is not valid TOML ({}); write a string in quotes",
                    one_line(e.message())
                ))),
            }
        }
    }
}

/// Set `a.b.c = value` in `table`, creating intermediate tables.
fn set_path(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), Error> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Error::Override(format!("override key `{key}` must be a dotted field path such as load.qps")));
    }
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        let entry = cur.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(Error::Override(format!("override key `{key}`: `{p}` is a value, not a section"))),
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests;
