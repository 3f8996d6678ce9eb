//! The private-pipe bootstrap preamble and the session key.
//!
//! The host writes the preamble once on the worker's stdin, before any JSON:
//!
//! ```text
//! "SPLPBOOT"  8 bytes, ASCII
//! 0x01        1 byte, preamble version
//! N           1 byte, session-id length, 1..=128
//! id          N bytes, a token
//! key         32 bytes, the session key (never all zero)
//! ```
//!
//! [`PrivatePipeWorkerBootstrap::read_from`] reads exactly those bytes and
//! nothing more, so the caller can hand the same reader to the JSON-line
//! codec afterwards without losing a byte.

use std::fmt;
use std::io::{self, Read, Write};
use std::ops::Deref;

use zeroize::Zeroize;

use crate::token::{MAX_TOKEN_LEN, Token, TokenError};

/// The preamble magic.
pub const BOOTSTRAP_MAGIC: [u8; 8] = *b"SPLPBOOT";
/// The only preamble version.
pub const BOOTSTRAP_VERSION: u8 = 0x01;
/// The session key length in bytes.
pub const SESSION_KEY_LEN: usize = 32;
/// Bytes of the preamble that do not depend on the session id.
pub const BOOTSTRAP_FIXED_LEN: usize = 8 + 1 + 1 + SESSION_KEY_LEN;

/// Why a session key was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionKeyError {
    /// Every byte is zero.
    #[error("session key is all zero")]
    AllZero,
    /// A slice of another length than 32 (its length).
    #[error("session key has {0} bytes; it must have 32")]
    Length(usize),
    /// The operating system's random source failed.
    #[error("failed to draw a session key from the operating system random source: {0}")]
    Random(getrandom::Error),
}

/// A 32-byte session key. Never all zero; wiped when dropped; `Debug`
/// prints no key material.
///
/// The bytes live in one heap allocation, so moving a key moves a pointer
/// and leaves no stale copy of the key on the stack. A clone is a second
/// allocation, wiped on its own drop.
pub struct SessionKey(Box<[u8; SESSION_KEY_LEN]>);

impl SessionKey {
    /// Draws a fresh key from the operating system CSPRNG.
    pub fn generate() -> Result<Self, SessionKeyError> {
        let mut bytes = Box::new([0u8; SESSION_KEY_LEN]);
        if let Err(e) = getrandom::fill(&mut bytes[..]) {
            bytes.zeroize();
            return Err(SessionKeyError::Random(e));
        }
        Self::from_boxed(bytes)
    }

    /// Wraps host-provided key bytes; an all-zero key is refused. The
    /// argument's copy is wiped; the caller's own copy (the array is `Copy`)
    /// is the caller's to wipe.
    pub fn from_bytes(mut bytes: [u8; SESSION_KEY_LEN]) -> Result<Self, SessionKeyError> {
        let key = Box::new(bytes);
        bytes.zeroize();
        Self::from_boxed(key)
    }

    /// Wraps a key slice of exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, SessionKeyError> {
        if bytes.len() != SESSION_KEY_LEN {
            return Err(SessionKeyError::Length(bytes.len()));
        }
        let mut key = Box::new([0u8; SESSION_KEY_LEN]);
        key.copy_from_slice(bytes);
        Self::from_boxed(key)
    }

    /// Takes ownership of boxed key bytes; an all-zero key is refused (and
    /// the box wiped like any other key).
    fn from_boxed(bytes: Box<[u8; SESSION_KEY_LEN]>) -> Result<Self, SessionKeyError> {
        let key = Self(bytes);
        if key.is_all_zero() {
            return Err(SessionKeyError::AllZero);
        }
        Ok(key)
    }

    /// The raw key, for the keyed hash and the preamble only.
    pub(crate) fn expose(&self) -> &[u8; SESSION_KEY_LEN] {
        &self.0
    }

    /// Checks every byte (no early exit, so the time does not depend on where
    /// the first non-zero byte is).
    fn is_all_zero(&self) -> bool {
        self.0.iter().fold(0u8, |acc, b| acc | b) == 0
    }
}

impl Clone for SessionKey {
    fn clone(&self) -> Self {
        let mut copy = Box::new([0u8; SESSION_KEY_LEN]);
        copy.copy_from_slice(&self.0[..]);
        Self(copy)
    }
}

impl Drop for SessionKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKey(<redacted>)")
    }
}

/// A part of the bootstrap preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PreamblePart {
    /// The fixed header: magic, version and lengths.
    Header,
    /// The session id.
    SessionId,
    /// The session key.
    SessionKey,
}

impl PreamblePart {
    /// `header`, `session id` or `session key`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::SessionId => "session id",
            Self::SessionKey => "session key",
        }
    }
}

impl fmt::Display for PreamblePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a preamble was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// The input ended inside the preamble.
    #[error("bootstrap preamble ended early while reading the {field}")]
    Truncated {
        /// The part being read.
        field: PreamblePart,
    },
    /// Reading failed.
    #[error("failed to read the bootstrap preamble: {0}")]
    Io(io::Error),
    /// The first 8 bytes are not `SPLPBOOT`.
    #[error("bootstrap preamble has a bad magic; expected `SPLPBOOT`")]
    BadMagic,
    /// A preamble version other than 0x01.
    #[error("bootstrap preamble version {0:#04x} is not supported; only 0x01 is")]
    UnsupportedVersion(u8),
    /// A session-id length of 0.
    #[error("bootstrap preamble has a zero session-id length")]
    ZeroIdLength,
    /// A session-id length over 128.
    #[error("bootstrap preamble session-id length is {0}; the maximum is 128")]
    OversizedIdLength(u8),
    /// The session id breaks the token rule.
    #[error("bootstrap preamble session id is not a token: {0}")]
    InvalidSessionId(TokenError),
    /// The key is all zero.
    #[error("bootstrap preamble carries an all-zero session key")]
    ZeroKey,
}

/// The bootstrap a host writes on a fresh worker's stdin.
#[derive(Debug, Clone)]
pub struct PrivatePipeWorkerBootstrap {
    session_id: Token,
    key: SessionKey,
}

/// Encoded preamble bytes; they contain the key and are wiped on drop.
pub struct EncodedBootstrap(Vec<u8>);

impl Deref for EncodedBootstrap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for EncodedBootstrap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for EncodedBootstrap {
    fn drop(&mut self) {
        // Wipes the whole allocation (spare capacity too), then clears.
        self.0.zeroize();
    }
}

impl fmt::Debug for EncodedBootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncodedBootstrap(<{} bytes, redacted>)", self.0.len())
    }
}

impl PrivatePipeWorkerBootstrap {
    /// Binds a session id to a key. Both are already validated by their
    /// types, so this cannot fail.
    pub fn new(session_id: Token, key: SessionKey) -> Self {
        Self { session_id, key }
    }

    /// The session the preamble opens.
    pub fn session_id(&self) -> &Token {
        &self.session_id
    }

    /// The session key it carries.
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// Splits the bootstrap into its parts.
    pub fn into_parts(self) -> (Token, SessionKey) {
        (self.session_id, self.key)
    }

    /// The exact preamble bytes: `42 + id length` bytes.
    pub fn encode(&self) -> EncodedBootstrap {
        let id = self.session_id.as_str().as_bytes();
        let mut out = Vec::with_capacity(BOOTSTRAP_FIXED_LEN + id.len());
        out.extend_from_slice(&BOOTSTRAP_MAGIC);
        out.push(BOOTSTRAP_VERSION);
        // A token is at most 128 bytes, so the length always fits a byte.
        out.push(u8::try_from(id.len()).unwrap_or(0));
        out.extend_from_slice(id);
        out.extend_from_slice(self.key.expose());
        EncodedBootstrap(out)
    }

    /// Writes the preamble and flushes `w`.
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        let bytes = self.encode();
        w.write_all(&bytes)?;
        w.flush()
    }

    /// Reads exactly one preamble from `r`: never a byte past the key. Pass
    /// an unbuffered reader (a pipe or a file), or the same buffered reader
    /// the JSON codec will use afterwards.
    pub fn read_from(r: &mut impl Read) -> Result<Self, BootstrapError> {
        let mut header = [0u8; 10];
        read_field(r, &mut header, PreamblePart::Header)?;
        if header[..8] != BOOTSTRAP_MAGIC {
            return Err(BootstrapError::BadMagic);
        }
        if header[8] != BOOTSTRAP_VERSION {
            return Err(BootstrapError::UnsupportedVersion(header[8]));
        }
        let id_len = header[9];
        if id_len == 0 {
            return Err(BootstrapError::ZeroIdLength);
        }
        if usize::from(id_len) > MAX_TOKEN_LEN {
            return Err(BootstrapError::OversizedIdLength(id_len));
        }
        let mut id = vec![0u8; usize::from(id_len)];
        read_field(r, &mut id, PreamblePart::SessionId)?;
        let session_id = Token::from_bytes(&id).map_err(BootstrapError::InvalidSessionId)?;
        // Read straight into the key's own allocation: no stack copy.
        let mut key = Box::new([0u8; SESSION_KEY_LEN]);
        if let Err(e) = read_field(r, &mut key[..], PreamblePart::SessionKey) {
            key.zeroize();
            return Err(e);
        }
        let key = SessionKey::from_boxed(key).map_err(|_| BootstrapError::ZeroKey)?;
        Ok(Self { session_id, key })
    }
}

fn read_field(
    r: &mut impl Read,
    buf: &mut [u8],
    field: PreamblePart,
) -> Result<(), BootstrapError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            BootstrapError::Truncated { field }
        } else {
            BootstrapError::Io(e)
        }
    })
}
