//! Sealed records (docs/snapshot-store.md, "Sealing"): a stored run's body is encrypted and
//! authenticated with XChaCha20-Poly1305 under the first key of a [`StateKeys`] ring, and opened
//! with whichever key sealed it. The associated data is the [`Binding`]: run id, owner scope,
//! guest hash, catalog fingerprint and expiry. A record moved to another run, scope, build or
//! catalog, given another expiry, or altered in any byte fails to open ([`SealError`]) and is
//! never restored.
//!
//! Sealed layout: `CMSEAL1` (7 bytes), the key id (the first 8 bytes of the key's SHA-256), a
//! random 24-byte nonce, then the ciphertext with its 16-byte tag.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use codemode_bridge::RunScope;
use sha2::{Digest, Sha256};

use crate::backend::url::StateUrl;

/// The environment variable holding the sealing key (32 bytes, standard base64).
pub const STATE_KEY_ENV: &str = "CODEMODE_STATE_KEY";

const MAGIC: &[u8] = b"CMSEAL1";
const KEY_ID_BYTES: usize = 8;
const NONCE_BYTES: usize = 24;
const TAG_BYTES: usize = 16;
/// The smallest sealed record: header, key id, nonce and tag.
const MIN_SEALED: usize = MAGIC.len() + KEY_ID_BYTES + NONCE_BYTES + TAG_BYTES;

/// What a sealed record is bound to (its associated data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The run's `runId`.
    pub run_id: &'a str,
    /// The scope that owns the run.
    pub owner: &'a RunScope,
    /// The guest build the snapshot belongs to (hex SHA-256 of the post-initialisation image).
    pub guest_sha256: &'a str,
    /// The catalog's fingerprint when the run parked.
    pub catalog_fingerprint: &'a str,
    /// The run's expiry, milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl Binding<'_> {
    /// The associated data: a label, then each field as a u32 little-endian length and its
    /// bytes (the owner as its JSON), then the expiry as u64 little endian.
    fn associated_data(&self) -> Vec<u8> {
        let owner = serde_json::to_vec(self.owner).unwrap_or_default();
        let mut ad = b"codemode-run-v1".to_vec();
        for field in [
            self.run_id.as_bytes(),
            &owner,
            self.guest_sha256.as_bytes(),
            self.catalog_fingerprint.as_bytes(),
        ] {
            ad.extend_from_slice(&u32::try_from(field.len()).unwrap_or(u32::MAX).to_le_bytes());
            ad.extend_from_slice(field);
        }
        ad.extend_from_slice(&self.expires_at_ms.to_le_bytes());
        ad
    }
}

/// Why a sealed record was not opened. It is never restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Not a sealed record at all (too short, another format).
    #[error("stored code mode run {run_id} is not a sealed record; it is not restored")]
    Malformed {
        /// The run id it was read as.
        run_id: String,
    },
    /// Sealed under a key this process does not hold (rotated out, another deployment).
    #[error("stored code mode run {run_id} was sealed with a key this process does not have (key id {key_id}); it is not restored")]
    UnknownKey {
        /// The run id.
        run_id: String,
        /// The sealing key's id, hex.
        key_id: String,
    },
    /// Authentication failed: the record was altered, or moved to another run, scope, guest
    /// build, catalog or expiry.
    #[error("stored code mode run {run_id} failed authentication: it was altered, or moved to another run, scope, guest build, catalog or expiry; it is not restored")]
    Refused {
        /// The run id.
        run_id: String,
    },
    /// Sealing failed (the OS random source failed, or the body is over XChaCha20's ~256 GiB).
    #[error("cannot seal code mode run {run_id}: {reason}")]
    Failed {
        /// The run id.
        run_id: String,
        /// What failed.
        reason: String,
    },
}

/// A bad or missing sealing key setting; `Display` names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A durable backend was chosen without any key.
    #[error("--state {url} keeps parked runs outside the process and needs a sealing key: set {STATE_KEY_ENV} (32 bytes, standard base64) or pass --state-key-file FILE")]
    Missing {
        /// The `--state` URL.
        url: String,
    },
    /// A key that is not 32 bytes of standard base64.
    #[error("{source_name}: {reason}")]
    Invalid {
        /// Where the key came from (`CODEMODE_STATE_KEY`, `state key file F line N`).
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key file cannot be read, is open to others, or holds no key.
    #[error("state key file {}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// One or more 32-byte keys: the first seals, any opens (rotation: put the new key first and
/// keep the old ones until their records expire). `Debug` shows key ids only.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKeys {
    keys: Vec<([u8; KEY_ID_BYTES], [u8; 32])>,
}

impl fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKeys")
            .field("key_ids", &self.key_ids())
            .finish()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_id(key: &[u8; 32]) -> [u8; KEY_ID_BYTES] {
    let digest = Sha256::digest(key);
    let mut id = [0u8; KEY_ID_BYTES];
    id.copy_from_slice(&digest[..KEY_ID_BYTES]);
    id
}

fn decode_key(text: &str, source_name: &str) -> Result<[u8; 32], KeyError> {
    let invalid = |reason: String| KeyError::Invalid {
        source_name: source_name.to_string(),
        reason,
    };
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| invalid(format!("not standard base64 ({e})")))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        invalid(format!(
            "a key is 32 bytes, this one is {} (make one with: head -c 32 /dev/urandom | base64)",
            bytes.len()
        ))
    })
}

impl StateKeys {
    /// A ring of the given keys, the first sealing. `None` when `keys` is empty.
    pub fn new(keys: Vec<[u8; 32]>) -> Option<Self> {
        (!keys.is_empty()).then(|| StateKeys {
            keys: keys.into_iter().map(|k| (key_id(&k), k)).collect(),
        })
    }

    /// Parses one key, 32 bytes in standard base64 (the form of `CODEMODE_STATE_KEY`).
    ///
    /// # Errors
    /// [`KeyError::Invalid`] naming [`STATE_KEY_ENV`].
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        let key = decode_key(text, STATE_KEY_ENV)?;
        Ok(StateKeys {
            keys: vec![(key_id(&key), key)],
        })
    }

    /// Reads a key file: one base64 key per line (the first seals), blank lines and lines
    /// starting with `#` ignored. The file must belong to this user and not be readable by group
    /// or others.
    ///
    /// # Errors
    /// [`KeyError::File`] when it cannot be read, is open to others or holds no key;
    /// [`KeyError::Invalid`] naming the line of a bad key.
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        let file_error = |reason: String| KeyError::File {
            path: path.to_path_buf(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| file_error(e.to_string()))?;
        if meta.mode() & 0o077 != 0 {
            return Err(file_error(format!(
                "group or others can access it (mode {:o}); chmod 600 it",
                meta.mode() & 0o7777
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            keys.push(decode_key(
                line,
                &format!("state key file {} line {}", path.display(), n + 1),
            )?);
        }
        StateKeys::new(keys).ok_or_else(|| file_error("holds no key".into()))
    }

    /// The keys a process configured with `env` (the value of `CODEMODE_STATE_KEY`, if set)
    /// and `file` (`--state-key-file`) uses for `url`: the env key first, then the file's.
    /// `Ok(None)` for `memory` without keys.
    ///
    /// # Errors
    /// [`KeyError::Missing`] for a durable `url` without any key; the parse errors above.
    pub fn for_state(
        url: &StateUrl,
        env: Option<&str>,
        file: Option<&Path>,
    ) -> Result<Option<Self>, KeyError> {
        let mut keys = Vec::new();
        if let Some(text) = env.filter(|t| !t.trim().is_empty()) {
            keys.extend(Self::from_base64(text)?.keys);
        }
        if let Some(path) = file {
            keys.extend(Self::from_file(path)?.keys);
        }
        if keys.is_empty() {
            return if url.is_durable() {
                Err(KeyError::Missing {
                    url: url.to_string(),
                })
            } else {
                Ok(None)
            };
        }
        Ok(Some(StateKeys { keys }))
    }

    /// A 32-byte key for another use than sealing records, derived from the sealing key:
    /// SHA-256 of `label` (which names the use, e.g. `codemode-mrtr-request-state-v1`) followed
    /// by the key. Every process configured with the same sealing key derives the same key; one
    /// derived key tells nothing of the sealing key or of a key derived for another label.
    pub fn derive(&self, label: &str) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(u32::try_from(label.len()).unwrap_or(u32::MAX).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update(self.keys[0].1);
        hasher.finalize().into()
    }

    /// The key ids (hex), sealing key first.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys.iter().map(|(id, _)| hex(id)).collect()
    }

    /// Seals `plaintext` under the first key, bound to `binding`.
    ///
    /// # Errors
    /// [`SealError::Failed`] when the OS random source fails.
    pub fn seal(&self, binding: &Binding<'_>, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        let (id, key) = &self.keys[0];
        let mut nonce = [0u8; NONCE_BYTES];
        let failed = |reason: String| SealError::Failed {
            run_id: binding.run_id.to_string(),
            reason,
        };
        getrandom::fill(&mut nonce).map_err(|e| failed(format!("no random nonce ({e})")))?;
        let ad = binding.associated_data();
        let cipher = XChaCha20Poly1305::new(Key::from_slice(key));
        let sealed = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &ad,
                },
            )
            .map_err(|e| failed(e.to_string()))?;
        let mut out = Vec::with_capacity(MIN_SEALED + plaintext.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(id);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens a record sealed by [`StateKeys::seal`] for exactly `binding`.
    ///
    /// # Errors
    /// [`SealError::Malformed`], [`SealError::UnknownKey`] or [`SealError::Refused`].
    pub fn open(&self, binding: &Binding<'_>, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        let run_id = binding.run_id.to_string();
        if sealed.len() < MIN_SEALED || !sealed.starts_with(MAGIC) {
            return Err(SealError::Malformed { run_id });
        }
        let rest = &sealed[MAGIC.len()..];
        let (id, rest) = rest.split_at(KEY_ID_BYTES);
        let (nonce, ciphertext) = rest.split_at(NONCE_BYTES);
        let Some((_, key)) = self.keys.iter().find(|(k, _)| k.as_slice() == id) else {
            return Err(SealError::UnknownKey {
                run_id,
                key_id: hex(id),
            });
        };
        let ad = binding.associated_data();
        XChaCha20Poly1305::new(Key::from_slice(key))
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &ad,
                },
            )
            .map_err(|_| SealError::Refused { run_id })
    }
}
