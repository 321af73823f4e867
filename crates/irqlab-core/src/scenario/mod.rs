//! Scenarios: a TOML file describing the server, its knobs and its load,
//! validated into a typed [`Config`]. A scenario is resolved in three layers,
//! later ones winning: the file, then a named [`profile`], then `key=value`
//! overrides (`--set`). Profiles are themselves expressed as overrides, so a
//! user override of one of a profile's knobs always wins over the profile.

pub mod config;
pub mod profile;
mod validate;

pub use config::*;
pub use profile::{Coalesce, EpollParams, PerNapi, Profile, ProfileKnobs};

use crate::error::Error;

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
        let raw: toml::Table = text.parse().map_err(|e: toml::de::Error| Error::Toml(e.message().to_string()))?;
        let mut s = Scenario { raw, profile: None, overrides: vec![], cfg: Config::default() };
        // The file may name a default profile; `set_profile` replaces it.
        s.resolve()?;
        if let Some(name) = s.cfg.run.profile.clone() {
            s.profile = Some(Profile::by_name(&name).map_err(|e| Error::field("run.profile", e))?);
            s.resolve()?;
        }
        Ok(s)
    }

    /// Read and parse a scenario file.
    pub fn from_path(path: &std::path::Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Scenario(format!("cannot read scenario file {}: {e}", path.display())))?;
        Self::from_toml_str(&text)
    }

    /// Select a profile by name (`no-coalescing`, `adaptive-coalescing`,
    /// `busy-wait`, `irq-suspend`).
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
            self.overrides.push((k.trim().to_string(), v.trim().to_string()));
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
            for (k, v) in p.overrides() {
                set_path(&mut table, k, v.clone())?;
            }
        }
        for (k, v) in &self.overrides {
            set_path(&mut table, k, parse_value(v))?;
        }
        let cfg: Config = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.inner().message().to_string();
            if path == "." || path.is_empty() {
                Error::Scenario(format!("scenario: {msg}"))
            } else {
                Error::Scenario(format!("scenario field `{path}`: {msg}"))
            }
        })?;
        validate::validate(&cfg)?;
        self.cfg = cfg;
        Ok(())
    }
}

/// Parse an override's value as TOML; fall back to a plain string.
fn parse_value(v: &str) -> toml::Value {
    let doc = format!("v = {v}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(v.to_string())),
        Err(_) => toml::Value::String(v.to_string()),
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
