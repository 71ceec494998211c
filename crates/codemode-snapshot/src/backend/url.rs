//! The `--state URL` setting ([`StateUrl`]): which [`super::RunStore`] backend holds parked runs.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where parked runs are stored, parsed from one string (`--state URL`, the library's
/// `CodeModeOptions`): `memory` (the default), `dir:PATH` or `redis://HOST:PORT[/DB]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StateUrl {
    /// `memory`: in this process only (today's behaviour; a restart loses parked runs).
    #[default]
    Memory,
    /// `dir:PATH`: one file per run in `PATH` (created 0700 if missing; must be a directory
    /// only this user can write).
    Dir(PathBuf),
    /// `redis://HOST:PORT[/DB]`, kept as written (normalised to carry the database, `/0` when
    /// absent).
    Redis(String),
}

/// A `--state` value that names no backend; `Display` says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --state {given:?}: {reason}; expected memory, dir:PATH or redis://HOST:PORT[/DB]")]
pub struct StateUrlError {
    /// The value as given.
    pub given: String,
    /// What is wrong with it.
    pub reason: String,
}

impl StateUrl {
    /// `true` for backends whose records outlive the process (`dir:`, `redis://`); those need a
    /// sealing key (docs/snapshot-store.md, "Sealing").
    pub fn is_durable(&self) -> bool {
        !matches!(self, StateUrl::Memory)
    }
}

impl fmt::Display for StateUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateUrl::Memory => f.write_str("memory"),
            StateUrl::Dir(path) => write!(f, "dir:{}", path.display()),
            StateUrl::Redis(url) => f.write_str(url),
        }
    }
}

impl FromStr for StateUrl {
    type Err = StateUrlError;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        let error = |reason: &str| StateUrlError {
            given: given.to_string(),
            reason: reason.to_string(),
        };
        if given == "memory" {
            return Ok(StateUrl::Memory);
        }
        if let Some(path) = given.strip_prefix("dir:") {
            if path.is_empty() {
                return Err(error("dir: needs a directory path"));
            }
            return Ok(StateUrl::Dir(PathBuf::from(path)));
        }
        let Some(rest) = given.strip_prefix("redis://") else {
            return Err(error("unknown scheme"));
        };
        let (authority, db) = match rest.split_once('/') {
            Some((authority, "")) => (authority, 0),
            Some((authority, db)) => (
                authority,
                db.parse::<u32>()
                    .map_err(|_| error("the database after / must be a number"))?,
            ),
            None => (rest, 0),
        };
        if authority.contains('@') {
            return Err(error(
                "credentials in the URL are not supported (they would show in process lists)",
            ));
        }
        let Some((host, port)) = authority.rsplit_once(':') else {
            return Err(error("redis:// needs HOST:PORT"));
        };
        if host.is_empty() {
            return Err(error("redis:// needs a host"));
        }
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| error("the port must be a number from 1 to 65535"))?;
        Ok(StateUrl::Redis(format!("redis://{host}:{port}/{db}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_backend_and_names_what_is_wrong() {
        assert_eq!("memory".parse(), Ok(StateUrl::Memory));
        assert_eq!(
            "dir:/var/lib/codemode".parse(),
            Ok(StateUrl::Dir("/var/lib/codemode".into()))
        );
        assert_eq!(
            "redis://127.0.0.1:6379".parse(),
            Ok(StateUrl::Redis("redis://127.0.0.1:6379/0".into()))
        );
        assert_eq!(
            "redis://cache.internal:6380/3".parse(),
            Ok(StateUrl::Redis("redis://cache.internal:6380/3".into()))
        );
        let err = |s: &str| s.parse::<StateUrl>().unwrap_err().to_string();
        assert_eq!(
            err("dir:"),
            "invalid --state \"dir:\": dir: needs a directory path; expected memory, dir:PATH or redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            err("postgres://x"),
            "invalid --state \"postgres://x\": unknown scheme; expected memory, dir:PATH or redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            err("redis://localhost"),
            "invalid --state \"redis://localhost\": redis:// needs HOST:PORT; expected memory, dir:PATH or redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            err("redis://h:99999"),
            "invalid --state \"redis://h:99999\": the port must be a number from 1 to 65535; expected memory, dir:PATH or redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            err("redis://h:1/x"),
            "invalid --state \"redis://h:1/x\": the database after / must be a number; expected memory, dir:PATH or redis://HOST:PORT[/DB]"
        );
        assert!(err("redis://u:p@h:1").contains("credentials in the URL are not supported"));
        assert_eq!(StateUrl::default().to_string(), "memory");
        assert!(!StateUrl::Memory.is_durable());
    }
}
