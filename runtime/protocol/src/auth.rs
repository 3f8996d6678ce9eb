//! Frame authentication.
//!
//! The tag of a frame is the BLAKE3 keyed hash, under the 32-byte session
//! key, of the compact serde_json serialization of
//!
//! ```text
//! {"domain":"splash-worker-auth-v5","protocol_version":5,"sender":ROLE,
//!  "sequence":N,"session_id":ID,"message":MESSAGE}
//! ```
//!
//! with the keys in exactly that order. The message is re-serialized from
//! its typed form, never taken from the received bytes. Each direction
//! counts its own sequence from 1. A receiver computes the tag with the
//! peer's role and compares it in constant time before it checks the
//! sequence, the direction or the content; a rejected frame leaves the
//! receiver's state unchanged.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::PROTOCOL_VERSION;
use crate::bootstrap::SessionKey;
use crate::canonical;
use crate::codec::MAX_LINE_BYTES;
use crate::message::{Message, MessageError, SessionRole};
use crate::token::Token;
use splash_manifest::StrictValue;

/// The domain separation string bound into every tag.
pub const AUTH_DOMAIN: &str = "splash-worker-auth-v5";

/// A 32-byte authentication tag, written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AuthTag([u8; 32]);

impl AuthTag {
    /// Wraps raw tag bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw tag bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Parses exactly 64 lowercase hex digits.
    pub fn from_hex(s: &str) -> Option<Self> {
        let s = s.as_bytes();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            let hi = hex_digit(pair[0])?;
            let lo = hex_digit(pair[1])?;
            out[i] = (hi << 4) | lo;
        }
        Some(Self(out))
    }

    /// The 64 lowercase hex digits of the wire form.
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(DIGITS[usize::from(b >> 4)]));
            s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
        }
        s
    }

    /// Constant-time equality.
    fn ct_eq(&self, other: &Self) -> bool {
        blake3::Hash::from_bytes(self.0) == blake3::Hash::from_bytes(other.0)
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Debug for AuthTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuthTag({})", self.to_hex())
    }
}

impl Serialize for AuthTag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for AuthTag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::from_hex(&s)
            .ok_or_else(|| de::Error::custom("auth_tag must be 64 lowercase hex digits"))
    }
}

/// One authenticated frame:
/// `{"sequence": N, "message": {...}, "auth_tag": "<64 lowercase hex>"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    /// The sender's sequence number, from 1, one step per frame.
    pub sequence: u64,
    /// The authenticated message.
    pub message: Message,
    /// The keyed BLAKE3 tag over the signed data.
    pub auth_tag: AuthTag,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFrame {
    sequence: u64,
    message: Message,
    auth_tag: AuthTag,
}

impl<'de> Deserialize<'de> for Frame {
    /// Accepts only the object form, with an object `message`, and no
    /// repeated key at any depth.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let StrictValue(value) = StrictValue::deserialize(d)?;
        let Some(obj) = value.as_object() else {
            return Err(de::Error::custom("frame must be a JSON object"));
        };
        if let Some(m) = obj.get("message")
            && !m.is_object()
        {
            return Err(de::Error::custom("frame `message` must be a JSON object"));
        }
        let raw: RawFrame = serde_json::from_value(value).map_err(de::Error::custom)?;
        raw.message.validate().map_err(de::Error::custom)?;
        Ok(Self {
            sequence: raw.sequence,
            message: raw.message,
            auth_tag: raw.auth_tag,
        })
    }
}

/// A direction of frames, as seen from one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameFlow {
    /// Frames this end seals and sends.
    Send,
    /// Frames this end receives and opens.
    Receive,
}

impl std::fmt::Display for FrameFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Send => "send",
            Self::Receive => "receive",
        })
    }
}

/// Why a frame could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The tag does not match the frame.
    #[error("frame authentication tag does not match")]
    BadTag,
    /// A frame out of sequence (replayed, dropped or reordered).
    #[error("frame has sequence {got}; expected {expected}")]
    Sequence {
        /// The next sequence number.
        expected: u64,
        /// The frame's.
        got: u64,
    },
    /// No sequence number is left in this direction.
    #[error("the {0} sequence is exhausted; open a new session")]
    SequenceExhausted(FrameFlow),
    /// A message type this role may not send.
    #[error("a {role} may not send `{kind}`", role = role.as_str())]
    Direction {
        /// The sender's role.
        role: SessionRole,
        /// The message type.
        kind: &'static str,
    },
    /// The signed data could not be serialized.
    #[error("failed to serialize the authenticated data: {0}")]
    Encode(serde_json::Error),
    /// The signed data is over the line bound (its size).
    #[error("the authenticated data of a frame is {0} bytes; the maximum is {MAX_LINE_BYTES}")]
    TooLarge(usize),
    /// A message for another session.
    #[error("message is for session `{got}`; this session is `{expected}`")]
    Session {
        /// This session's id.
        expected: Token,
        /// The session the message names.
        got: Token,
    },
    /// A message that breaks a message rule.
    #[error("invalid `{kind}` message: {error}")]
    Invalid {
        /// The message type.
        kind: &'static str,
        /// The broken rule.
        error: MessageError,
    },
}

#[derive(Serialize)]
struct SignedData<'a> {
    domain: &'static str,
    protocol_version: u16,
    sender: SessionRole,
    sequence: u64,
    session_id: &'a Token,
    message: &'a Message,
}

/// The exact bytes a tag covers.
pub fn signed_bytes(
    sender: SessionRole,
    sequence: u64,
    session_id: &Token,
    message: &Message,
) -> Result<Vec<u8>, AuthError> {
    let bytes = canonical::to_vec(&SignedData {
        domain: AUTH_DOMAIN,
        protocol_version: PROTOCOL_VERSION,
        sender,
        sequence,
        session_id,
        message,
    })
    .map_err(AuthError::Encode)?;
    if bytes.len() > MAX_LINE_BYTES {
        return Err(AuthError::TooLarge(bytes.len()));
    }
    Ok(bytes)
}

fn compute_tag(
    key: &SessionKey,
    sender: SessionRole,
    sequence: u64,
    session_id: &Token,
    message: &Message,
) -> Result<AuthTag, AuthError> {
    let data = signed_bytes(sender, sequence, session_id, message)?;
    Ok(AuthTag(*blake3::keyed_hash(key.expose(), &data).as_bytes()))
}

/// The sending half of one end: seals this role's frames with its own
/// sequence.
pub struct FrameSealer {
    session_id: Token,
    /// Shared with the opener of the same end: one copy of the key.
    key: Arc<SessionKey>,
    role: SessionRole,
    /// The next sequence; `u64::MAX` is never sealed.
    next: u64,
}

/// The receiving half of one end: opens the peer's frames in sequence.
pub struct FrameOpener {
    session_id: Token,
    key: Arc<SessionKey>,
    role: SessionRole,
    /// The next sequence; `u64::MAX` is never accepted.
    next: u64,
}

impl fmt::Debug for FrameSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameSealer")
            .field("session_id", &self.session_id)
            .field("key", &self.key)
            .field("role", &self.role)
            .field("next", &self.next)
            .finish()
    }
}

impl fmt::Debug for FrameOpener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameOpener")
            .field("session_id", &self.session_id)
            .field("key", &self.key)
            .field("role", &self.role)
            .field("next", &self.next)
            .finish()
    }
}

impl FrameSealer {
    /// The sequence the next sealed frame will carry (`None`: exhausted).
    pub fn next_sequence(&self) -> Option<u64> {
        usable(self.next)
    }

    /// The role of this end.
    pub fn role(&self) -> SessionRole {
        self.role
    }

    /// Seals `message` as this role's next frame: it must be a message this
    /// role may send, for this session, valid, and the sequence must not be
    /// exhausted (`u64::MAX` is never used).
    pub fn seal(&mut self, message: Message) -> Result<Frame, AuthError> {
        if message.sender() != self.role {
            return Err(AuthError::Direction {
                role: self.role,
                kind: message.kind(),
            });
        }
        check_session(&self.session_id, &message)?;
        message.validate().map_err(|error| AuthError::Invalid {
            kind: message.kind(),
            error,
        })?;
        let Some(sequence) = usable(self.next) else {
            return Err(AuthError::SequenceExhausted(FrameFlow::Send));
        };
        let auth_tag = compute_tag(&self.key, self.role, sequence, &self.session_id, &message)?;
        self.next = sequence.saturating_add(1);
        Ok(Frame {
            sequence,
            message,
            auth_tag,
        })
    }
}

impl FrameOpener {
    /// The sequence the next accepted frame must carry (`None`: exhausted).
    pub fn next_sequence(&self) -> Option<u64> {
        usable(self.next)
    }

    /// The role of this end.
    pub fn role(&self) -> SessionRole {
        self.role
    }

    /// Verifies a frame from the peer and returns its message: the tag
    /// first (constant time, peer role), then the message's session, then
    /// the sequence (`u64::MAX` is never accepted), then the direction. On
    /// any error the state is unchanged.
    pub fn open(&mut self, frame: Frame) -> Result<Message, AuthError> {
        let peer = self.role.peer();
        let expected = compute_tag(
            &self.key,
            peer,
            frame.sequence,
            &self.session_id,
            &frame.message,
        )?;
        if !expected.ct_eq(&frame.auth_tag) {
            return Err(AuthError::BadTag);
        }
        check_session(&self.session_id, &frame.message)?;
        let next = self.next;
        if frame.sequence != next {
            return Err(AuthError::Sequence {
                expected: next,
                got: frame.sequence,
            });
        }
        if usable(next).is_none() {
            return Err(AuthError::SequenceExhausted(FrameFlow::Receive));
        }
        if frame.message.sender() != peer {
            return Err(AuthError::Direction {
                role: peer,
                kind: frame.message.kind(),
            });
        }
        self.next = next.saturating_add(1);
        Ok(frame.message)
    }
}

/// `Some(next)` unless the direction is exhausted: the last usable
/// sequence is `u64::MAX - 1`.
fn usable(next: u64) -> Option<u64> {
    (next != u64::MAX).then_some(next)
}

/// A message must name the session it is sent in.
fn check_session(session_id: &Token, message: &Message) -> Result<(), AuthError> {
    if message.session_id() != session_id {
        return Err(AuthError::Session {
            expected: session_id.clone(),
            got: message.session_id().clone(),
        });
    }
    Ok(())
}

/// One end's authentication state: the key, the session id, its role and
/// the next sequence number in each direction. [`Self::split`] separates
/// the two directions for a transport with one reader and one writer owner.
#[derive(Debug)]
pub struct SessionAuthenticator {
    sealer: FrameSealer,
    opener: FrameOpener,
}

impl SessionAuthenticator {
    /// The authenticator of `role` in session `session_id` under `key`;
    /// both directions start at sequence 1.
    pub fn new(session_id: Token, key: SessionKey, role: SessionRole) -> Self {
        let key = Arc::new(key);
        Self {
            opener: FrameOpener {
                session_id: session_id.clone(),
                key: Arc::clone(&key),
                role,
                next: 1,
            },
            sealer: FrameSealer {
                session_id,
                key,
                role,
                next: 1,
            },
        }
    }

    /// The session this end authenticates.
    pub fn session_id(&self) -> &Token {
        &self.sealer.session_id
    }

    /// The role of this end.
    pub fn role(&self) -> SessionRole {
        self.sealer.role
    }

    /// The sequence the next sealed frame will carry (`None`: exhausted).
    pub fn next_send_sequence(&self) -> Option<u64> {
        self.sealer.next_sequence()
    }

    /// The sequence the next accepted frame must carry (`None`: exhausted).
    pub fn next_receive_sequence(&self) -> Option<u64> {
        self.opener.next_sequence()
    }

    /// Seals `message` as this role's next frame.
    pub fn seal(&mut self, message: Message) -> Result<Frame, AuthError> {
        self.sealer.seal(message)
    }

    /// Verifies a frame from the peer and returns its message. On any error
    /// the state is unchanged.
    pub fn open(&mut self, frame: Frame) -> Result<Message, AuthError> {
        self.opener.open(frame)
    }

    /// The two directions, each with its own copy of the key.
    pub fn split(self) -> (FrameSealer, FrameOpener) {
        (self.sealer, self.opener)
    }

    /// Test hook: moves both counters, to exercise exhaustion.
    #[cfg(test)]
    pub(crate) fn set_sequences(&mut self, next_send: u64, next_recv: u64) {
        self.sealer.next = next_send;
        self.opener.next = next_recv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{CancelRequest, Version};

    fn tok(s: &str) -> Token {
        Token::new(s).expect("token")
    }

    fn pair() -> (SessionAuthenticator, SessionAuthenticator) {
        let key = SessionKey::from_bytes([9; 32]).expect("key");
        (
            SessionAuthenticator::new(tok("s"), key.clone(), SessionRole::Host),
            SessionAuthenticator::new(tok("s"), key, SessionRole::Worker),
        )
    }

    fn cancel() -> Message {
        Message::Cancel {
            request: CancelRequest {
                protocol_version: Version,
                session_id: tok("s"),
                cancellation_id: tok("c-2"),
                request_id: tok("r-1"),
                tool: tok("t.x"),
            },
        }
    }

    #[test]
    fn the_last_usable_sequence_is_max_minus_one() {
        let (mut host, mut worker) = pair();
        host.set_sequences(u64::MAX - 1, 1);
        worker.set_sequences(1, u64::MAX - 1);
        let last = host.seal(cancel()).expect("last sequence");
        assert_eq!(last.sequence, u64::MAX - 1);
        assert_eq!(host.next_send_sequence(), None);
        assert!(matches!(
            host.seal(cancel()),
            Err(AuthError::SequenceExhausted(FrameFlow::Send))
        ));
        worker.open(last.clone()).expect("last frame");
        assert_eq!(worker.next_receive_sequence(), None);
    }

    #[test]
    fn a_frame_at_sequence_max_is_never_accepted() {
        let (mut host, mut worker) = pair();
        host.set_sequences(u64::MAX - 1, 1);
        let mut frame = host.seal(cancel()).expect("seal");
        // Re-tag the frame at u64::MAX, as a peer that did use it would.
        frame.sequence = u64::MAX;
        frame.auth_tag = compute_tag(
            &SessionKey::from_bytes([9; 32]).expect("key"),
            SessionRole::Host,
            u64::MAX,
            &tok("s"),
            &frame.message,
        )
        .expect("tag");
        worker.set_sequences(1, u64::MAX);
        assert!(matches!(
            worker.open(frame),
            Err(AuthError::SequenceExhausted(FrameFlow::Receive))
        ));
    }

    #[test]
    fn hex_round_trips_and_is_strict() {
        let tag = AuthTag::from_bytes([0xa5; 32]);
        assert_eq!(AuthTag::from_hex(&tag.to_hex()), Some(tag));
        assert_eq!(AuthTag::from_hex(&tag.to_hex().to_uppercase()), None);
        assert_eq!(AuthTag::from_hex(&"g".repeat(64)), None);
        assert_eq!(AuthTag::from_hex("ab"), None);
    }
}
