//! Tokens: session ids, tool names, selector ids and request ids.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Maximum token length in bytes.
pub const MAX_TOKEN_LEN: usize = 128;

/// A validated token: 1 to 128 bytes, each in `[a-z0-9._-]`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(String);

/// Why a string is not a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The empty string.
    #[error("token is empty")]
    Empty,
    /// Longer than [`MAX_TOKEN_LEN`] bytes (the length).
    #[error("token is {0} bytes long; the maximum is 128")]
    TooLong(usize),
    /// A byte outside `[a-z0-9._-]`.
    #[error(
        "token has byte {byte:#04x} at offset {offset}; only `a-z`, `0-9`, `.`, `_` and `-` are allowed"
    )]
    InvalidByte {
        /// The byte offset of the first bad byte.
        offset: usize,
        /// The bad byte.
        byte: u8,
    },
}

impl Token {
    /// Validates `s` against the token rule.
    pub fn new(s: impl Into<String>) -> Result<Self, TokenError> {
        let s = s.into();
        Self::validate(&s)?;
        Ok(Self(s))
    }

    /// Checks the token rule without allocating.
    pub fn validate(s: &str) -> Result<(), TokenError> {
        if s.is_empty() {
            return Err(TokenError::Empty);
        }
        if s.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong(s.len()));
        }
        for (offset, &byte) in s.as_bytes().iter().enumerate() {
            if !is_token_byte(byte) {
                return Err(TokenError::InvalidByte { offset, byte });
            }
        }
        Ok(())
    }

    /// Validates raw bytes (for example from the bootstrap preamble) against
    /// the token rule.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TokenError> {
        if bytes.is_empty() {
            return Err(TokenError::Empty);
        }
        if bytes.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong(bytes.len()));
        }
        if let Some((offset, &byte)) = bytes.iter().enumerate().find(|(_, b)| !is_token_byte(**b)) {
            return Err(TokenError::InvalidByte { offset, byte });
        }
        // Every byte is ASCII, so this cannot fail; map it anyway instead of
        // panicking.
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Self(s.to_owned())),
            Err(e) => Err(TokenError::InvalidByte {
                offset: e.valid_up_to(),
                byte: bytes.get(e.valid_up_to()).copied().unwrap_or(0),
            }),
        }
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_token_byte(byte: u8) -> bool {
    matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-')
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Token {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for Token {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Token::new(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_token_alphabet() {
        assert!(Token::new("a.b_c-9").is_ok());
        assert!(Token::new("x".repeat(128)).is_ok());
    }

    #[test]
    fn rejects_empty_long_and_foreign_bytes() {
        assert_eq!(Token::new(""), Err(TokenError::Empty));
        assert_eq!(Token::new("x".repeat(129)), Err(TokenError::TooLong(129)));
        assert_eq!(
            Token::new("aB"),
            Err(TokenError::InvalidByte {
                offset: 1,
                byte: b'B'
            })
        );
    }
}
