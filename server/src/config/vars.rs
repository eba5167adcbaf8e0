//! Reading one variable: the environment (or a map in tests), a secret's `<NAME>_FILE`, and the
//! shapes every concern's settings share (a flag, a positive number, an address, a URL).

use std::collections::HashMap;
use std::net::SocketAddr;

use super::{ConfigError, SECRET_VARIABLES};

/// The variables as the concerns read them: unset and blank are the same, and a secret given
/// as `<NAME>_FILE` reads as if it were set directly.
pub struct Vars<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    from_files: HashMap<&'static str, String>,
}

impl<'a> Vars<'a> {
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let from_files = secrets_from_files(lookup)?;
        Ok(Self { lookup, from_files })
    }

    pub fn get(&self, name: &str) -> Option<String> {
        self.from_files
            .get(name)
            .cloned()
            .or_else(|| (self.lookup)(name))
            .filter(|v| !v.trim().is_empty())
    }

    /// `1`/`true` or `0`/`false`; unset is off.
    pub fn flag(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref().map(str::trim) {
            None | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") => Ok(true),
            Some(other) => Err(ConfigError::invalid(
                name,
                format!("expected 1 or 0, got {other:?}"),
            )),
        }
    }

    /// A positive whole number, or `default` when unset.
    pub fn number(&self, name: &'static str, default: u32) -> Result<u32, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => match text.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(ConfigError::invalid(
                    name,
                    format!("expected a positive whole number, got {text:?}"),
                )),
            },
        }
    }

    /// A positive number of seconds, at most `most`; `why` says what a longer value costs.
    pub fn seconds_at_most(
        &self,
        name: &'static str,
        default: u32,
        most: u32,
        why: &str,
    ) -> Result<u32, ConfigError> {
        let value = self.number(name, default)?;
        if value > most {
            return Err(ConfigError::invalid(
                name,
                format!("at most {most} seconds{why}, got {value}"),
            ));
        }
        Ok(value)
    }

    /// An optional `ip:port` setting; `example` shows the expected form in the error.
    pub fn socket_addr(
        &self,
        name: &'static str,
        example: &str,
    ) -> Result<Option<SocketAddr>, ConfigError> {
        self.get(name)
            .map(|text| {
                text.trim().parse::<SocketAddr>().map_err(|_| {
                    ConfigError::invalid(
                        name,
                        format!("expected ip:port such as {example}, got {text:?}"),
                    )
                })
            })
            .transpose()
    }

    /// An absolute http(s) URL without its trailing slash, so paths can be appended.
    pub fn url(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        self.get(name)
            .map(|value| parse_url(name, &value))
            .transpose()
    }
}

/// Accepts an absolute http(s) URL and drops a trailing slash, so paths can be appended.
pub fn parse_url(name: &'static str, value: &str) -> Result<String, ConfigError> {
    let value = value.trim().trim_end_matches('/');
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(value.to_string())
        }
        _ => Err(ConfigError::invalid(
            name,
            "expected an absolute http:// or https:// URL",
        )),
    }
}

/// The secret settings given as `<NAME>_FILE`, read (one trailing line break dropped). Both
/// forms at once is an error rather than a silent choice. Errors name the variable and the
/// path, never the content.
fn secrets_from_files(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<HashMap<&'static str, String>, ConfigError> {
    let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let mut values = HashMap::new();
    for name in SECRET_VARIABLES {
        let file_var = format!("{name}_FILE");
        let Some(path) = set(&file_var) else {
            continue;
        };
        if set(name).is_some() {
            return Err(ConfigError::invalid(
                name,
                format!("set {name} or {file_var}, not both"),
            ));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ConfigError::invalid(name, format!("could not read {file_var} ({path}): {e}"))
        })?;
        let value = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        values.insert(name, value.to_owned());
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn blank_is_unset_and_shapes_are_checked_by_name() {
        let lookup = with(&[
            ("A", "  "),
            ("N", "0"),
            ("F", "yes"),
            ("S", "31"),
            ("U", "https://x.example/"),
        ]);
        let vars = Vars::new(&lookup).unwrap();
        assert_eq!(vars.get("A"), None);
        assert_eq!(vars.number("A", 7).unwrap(), 7);
        assert!(vars
            .number("N", 7)
            .unwrap_err()
            .to_string()
            .contains("N is not valid"));
        assert!(vars
            .flag("F")
            .unwrap_err()
            .to_string()
            .contains("expected 1 or 0"));
        let long = vars
            .seconds_at_most("S", 5, 30, "")
            .unwrap_err()
            .to_string();
        assert!(long.contains("at most 30 seconds, got 31"), "{long}");
        assert_eq!(vars.url("U").unwrap().as_deref(), Some("https://x.example"));
        assert!(parse_url("U", "ftp://x").is_err());
    }
}
