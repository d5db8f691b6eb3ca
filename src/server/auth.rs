//! API keys with two roles. `score` may score and read datasets; `admin` may also register
//! and delete datasets. Keys come from a file (`--api-keys-file`, one `ROLE KEY` or
//! `ROLE:KEY` per line, `#` comments) and/or the environment (`CAPSCORE_API_KEYS`, comma
//! separated `ROLE:KEY`). Clients send `Authorization: Bearer KEY`.
//!
//! Keys are kept as sha256 digests and compared in constant time (`subtle`) against every
//! configured key, so neither the position nor the length of a near miss leaks through timing.
//! With no key configured, every route is open (and the server refuses to bind beyond loopback
//! unless told to).

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use crate::input::ErrorCode;

/// A key's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Score, read datasets.
    Score,
    /// Everything `Score` may, plus dataset writes.
    Admin,
}

impl Role {
    fn parse(s: &str) -> Option<Role> {
        match s.trim().to_ascii_lowercase().as_str() {
            "score" => Some(Role::Score),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    keys: Vec<([u8; 32], Role)>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Why API keys could not be configured. Messages name the entry, never the key.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The keys file could not be read.
    #[error("cannot read {file}: {msg}")]
    Read {
        /// The file.
        file: String,
        /// The failure.
        msg: String,
    },
    /// One key is configured with both roles.
    #[error("one API key is configured with both roles (score and admin); give each key one role")]
    BothRoles,
    /// An entry is malformed.
    #[error("{origin}: entry {entry}{msg}")]
    Entry {
        /// Where the keys came from (a file, an environment variable).
        origin: String,
        /// The entry's number (1-based).
        entry: usize,
        /// What is wrong.
        msg: String,
    },
}

impl Keys {
    /// No keys: open.
    pub fn none() -> Keys {
        Keys::default()
    }

    /// True when no key is configured (every route is open).
    pub fn is_open(&self) -> bool {
        self.keys.is_empty()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Adds a key.
    pub fn add(&mut self, role: Role, key: &str) {
        self.keys.push((digest(key), role));
    }

    /// Parses `ROLE:KEY` entries separated by commas or newlines (`ROLE KEY` also accepted;
    /// blank lines and `#` comments skipped). Errors name the line, never the key.
    pub fn parse(text: &str, what: &str) -> Result<Keys, KeysError> {
        let bad = |entry: usize, msg: &str| KeysError::Entry {
            origin: what.to_owned(),
            entry,
            msg: msg.to_owned(),
        };
        let mut k = Keys::default();
        for (i, line) in text.split(['\n', ',']).enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (role, key) = line
                .split_once(':')
                .or_else(|| line.split_once(char::is_whitespace))
                .ok_or_else(|| bad(i + 1, " is not ROLE:KEY"))?;
            let role = Role::parse(role)
                .ok_or_else(|| bad(i + 1, ": role must be \"score\" or \"admin\""))?;
            let key = key.trim();
            if key.len() < 16 {
                return Err(bad(i + 1, ": keys must have at least 16 characters"));
            }
            k.add(role, key);
        }
        Ok(k)
    }

    /// Refuses a key configured with both roles (it would silently be admin).
    pub fn check_roles(&self) -> Result<(), KeysError> {
        for (i, (d, r)) in self.keys.iter().enumerate() {
            if self.keys[..i].iter().any(|(e, s)| e == d && s != r) {
                return Err(KeysError::BothRoles);
            }
        }
        Ok(())
    }

    /// Merges two key sets.
    pub fn extend(&mut self, other: Keys) {
        self.keys.extend(other.keys);
    }

    /// The role of `key`, comparing in constant time with every configured key.
    pub fn role_of(&self, key: &str) -> Option<Role> {
        let d = digest(key);
        let mut found: Option<Role> = None;
        for (k, role) in &self.keys {
            if bool::from(k.ct_eq(&d)) {
                found = found.max(Some(*role));
            }
        }
        found
    }

    /// Checks the `Authorization` header for `need`.
    pub fn check(&self, parts: &Parts, need: Role) -> Result<(), ApiError> {
        if self.is_open() {
            return Ok(());
        }
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let Some(token) = token else {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                "missing API key: send Authorization: Bearer <key>",
            ));
        };
        match self.role_of(token) {
            None => Err(ApiError::new(ErrorCode::Unauthorized, "unknown API key")),
            Some(r) if r < need => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this API key's role may not do this (dataset writes need the admin role)",
            )),
            Some(_) => Ok(()),
        }
    }
}

/// Extractor: the caller holds a `score` (or `admin`) key.
pub struct ScoreRole;

/// Extractor: the caller holds an `admin` key.
pub struct AdminRole;

/// Any state that holds the keys (the server's `AppState`) authenticates requests.
impl<S: AsRef<Keys> + Send + Sync> FromRequestParts<S> for ScoreRole {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        s.as_ref().check(parts, Role::Score).map(|()| ScoreRole)
    }
}

impl<S: AsRef<Keys> + Send + Sync> FromRequestParts<S> for AdminRole {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        s.as_ref().check(parts, Role::Admin).map(|()| AdminRole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_roles() {
        let k = Keys::parse(
            "# team keys\nscore:0123456789abcdef\nadmin 0123456789ABCDEF\n",
            "f",
        )
        .unwrap();
        assert_eq!(k.role_of("0123456789abcdef"), Some(Role::Score));
        assert_eq!(k.role_of("0123456789ABCDEF"), Some(Role::Admin));
        assert_eq!(k.role_of("0123456789abcde"), None);
        assert!(Keys::parse("root:0123456789abcdef", "f").is_err());
        assert!(Keys::parse("score:short", "f").is_err());
    }
}
