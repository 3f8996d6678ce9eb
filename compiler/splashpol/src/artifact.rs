//! Compiled-policy artifacts: a checked [`Policy`] stored as versioned JSON,
//! so a Rust host can load it without the `.splashpol` front end and
//! activate it with a manifest.
//!
//! Layout (one JSON object, keys in this order):
//!
//! ```json
//! {"format":"splashpol-compiled","version":3,
//!  "source_digest":"<blake3 hex of the .splashpol source>",
//!  "policy_digest":"<blake3 hex of the compact JSON of `policy`>",
//!  "policy":{...}}
//! ```
//!
//! [`load`] holds an artifact to exactly what its source went through: the
//! format tag and the version; every path, id and syscall name decoded
//! through the same validating constructors the checker uses
//! ([`crate::model::AbsPath::new`], which refuses control and bidirectional
//! formatting characters as the parser does, the token rule,
//! [`crate::model::SyscallName::new`]); the policy in the one form
//! [`write()`] produces (no duplicate or unsorted set entry); the policy
//! digest (recomputed over the policy as re-serialized, which catches
//! truncation and accidental edits; it is not a signature); the invariants
//! lowering relies on ([`Policy::try_from`]); and the language rules the
//! checker enforces beyond them ([`crate::model::check_rules`]: ranges,
//! units, characters in the name and arguments, cross-field rules), the
//! same two checks the checker makes of every policy it builds. Unknown
//! fields anywhere are rejected.
//!
//! [`write()`] and [`load`] are inverses: `load(&write(&p, src)?)?.policy == p`.
//! An artifact is trusted host configuration exactly like the `.splashpol`
//! file it came from; the digests detect damage, not tampering (anyone who
//! can write the file can reseal it), so protect artifacts as you protect
//! policy sources. A resealed artifact can still only hold a policy that
//! its source language could express. A host that must run one reviewed
//! artifact pins the digest of its file (`splash_runtime`'s
//! `LoadedPolicy::from_path_expecting`, `splashc run --expect-digest`): that
//! detects any change, not who made the file.
//!
//! ```
//! use splashpol::artifact;
//!
//! let source = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  \
//!               worker \"/opt/splash/bin/worker\"\n  \
//!               runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n}\n";
//! let policy = splashpol::check_source("p.splashpol", source).policy.expect("valid");
//! let bytes = artifact::write(&policy, source.as_bytes())?;
//! assert!(artifact::looks_like_artifact(&bytes));
//!
//! let loaded = artifact::load(&bytes)?;
//! assert_eq!(loaded.policy, policy);
//! assert_eq!(loaded.source_digest, artifact::digest(source.as_bytes()));
//! # Ok::<(), artifact::ArtifactError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::model::invariants::InvariantError;
use crate::model::{Policy, RawPolicy, RuleError};
use crate::text::escaped;

/// The value of an artifact's `format` field, which tells an artifact apart
/// from any other JSON; [`load`] refuses any other value
/// ([`ArtifactError::Format`]).
pub const FORMAT: &str = "splashpol-compiled";
/// The only artifact version this crate reads and writes (the `version`
/// field); [`load`] refuses any other ([`ArtifactError::Version`]) before it
/// looks at the policy.
pub const VERSION: u32 = 3;

/// A loaded artifact, every field validated by [`load`].
///
/// Deserializing this type directly (rather than through [`load`]) still
/// validates the policy through [`Policy::try_from`], but checks neither the
/// tag, the version nor the digests: use [`load`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Always [`FORMAT`] in an artifact from [`load`].
    pub format: String,
    /// Always [`VERSION`] in an artifact from [`load`].
    pub version: u32,
    /// The lowercase hex BLAKE3 digest ([`digest`]) of the `.splashpol`
    /// source the policy was checked from: 64 characters from `0-9a-f`. It
    /// identifies the source in reports (lowering copies it into the launch
    /// plan, see [`crate::lower::lower`]); [`load`] checks its form, and
    /// cannot check it against a source it does not have.
    pub source_digest: String,
    /// The lowercase hex BLAKE3 digest of the compact JSON of
    /// [`Artifact::policy`]; [`load`] has recomputed it and found it equal.
    pub policy_digest: String,
    /// The checked policy; its invariants hold ([`Policy::try_from`]).
    pub policy: Policy,
}

/// Why an artifact was refused by [`load`] or could not be produced by
/// [`write()`]. [`load`] reports the first check that fails, in this order:
/// decoding the header, the tag, the version, decoding the whole document,
/// the source digest's form, duplicate set entries, the policy's form, the
/// policy digest, the policy's invariants, and finally the language rules.
/// Text from the file is shown with control and bidirectional formatting
/// characters escaped ([`crate::text::escaped`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// The bytes are not JSON of the artifact's shape: not JSON at all, a
    /// missing or mistyped field, or an unknown field anywhere (including
    /// inside the policy).
    #[error("not a compiled policy artifact: {}", escaped(&.0.to_string()))]
    Decode(#[source] serde_json::Error),
    /// The `format` field is not [`FORMAT`] (the tag found).
    #[error("artifact format is `{0}`; expected `{FORMAT}`")]
    Format(FoundText),
    /// The `version` field (carried here) is not [`VERSION`]; reported before
    /// the rest of the document is decoded, so a future version's new fields
    /// do not hide it.
    #[error(
        "artifact version is {0}; only version {VERSION} is supported (compile the policy again with `splashc compile`)"
    )]
    Version(u32),
    /// The policy does not hash to the stored `policy_digest`: the artifact
    /// was truncated or edited without being resealed.
    #[error(
        "artifact policy digest does not match its policy (expected `{stored}`, computed `{computed}`)"
    )]
    Digest {
        /// The `policy_digest` field as stored in the artifact.
        stored: FoundText,
        /// The digest of the policy as decoded and re-serialized.
        computed: blake3::Hash,
    },
    /// The `source_digest` field is not 64 lowercase hex digits (the text
    /// found).
    #[error("artifact source digest `{0}` is not a 64-digit lowercase hex BLAKE3 digest")]
    SourceDigest(FoundText),
    /// The policy decodes and its digest matches, but it breaks an invariant
    /// lowering relies on (for example pinned executables without pinned
    /// mounts): a resealed, weakened policy is refused here.
    #[error("artifact policy is unsafe: {0}")]
    Invariant(#[from] InvariantError),
    /// The policy holds its invariants but breaks a rule of the language
    /// its source was checked against ([`crate::model::check_rules`]):
    /// no `.splashpol` source compiles to it.
    #[error("artifact policy breaks a rule of the language: {0}")]
    Rule(#[from] RuleError),
    /// A set of the policy (strict-allowlist syscalls, broker ids) lists
    /// an entry twice, which its source could not.
    #[error("artifact policy lists {entry} twice in `{field}`")]
    Duplicate {
        /// The field, as a path of the serialized policy.
        field: &'static str,
        /// The entry, as JSON.
        entry: FoundText,
    },
    /// The policy is not in the one form [`write()`] gives it (a set out of
    /// order, for example): its digest would not be over what the file
    /// holds. Carries the first top-level policy field that differs.
    #[error(
        "artifact policy is not in its canonical form (`{0}` differs from what `write` produces)"
    )]
    NotCanonical(String),
    /// The policy could not be serialized to JSON (for digesting or
    /// writing); not expected for a valid policy.
    #[error("cannot serialize the policy: {0}")]
    Encode(#[source] serde_json::Error),
}

/// Text read from an artifact that is not what it must be, kept for the
/// error message. The file is untrusted, so it is shown with control and
/// bidirectional formatting characters escaped ([`crate::text::escaped`]),
/// and cut after [`FoundText::MAX_SHOWN_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundText(String);

impl FoundText {
    /// At most this many characters are shown.
    pub const MAX_SHOWN_CHARS: usize = 80;

    /// The text as read.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for FoundText {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl std::fmt::Display for FoundText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cut = self
            .0
            .char_indices()
            .nth(Self::MAX_SHOWN_CHARS)
            .map_or(self.0.len(), |(at, _)| at);
        write!(f, "{}", escaped(&self.0[..cut]))?;
        if cut < self.0.len() {
            f.write_str("…")?;
        }
        Ok(())
    }
}

/// The lowercase hex BLAKE3 digest of `bytes` (64 characters from `0-9a-f`):
/// the form of both digests in an artifact, and of the source digest a
/// launch plan records.
pub fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// An artifact's fields as [`load`] decodes them, before any check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    format: String,
    version: u32,
    source_digest: String,
    policy_digest: String,
    policy: RawPolicy,
}

/// The policy digest [`write()`] would store for the policy in `artifact`
/// (an artifact's bytes): the digest of the policy's fields as they
/// re-serialize. The artifact must decode as [`load`] decodes it
/// ([`ArtifactError::Decode`] otherwise); nothing else is checked (not the
/// tag, the version, either digest, the invariants or the rules), so an
/// edited artifact can be given a matching digest and [`load`] then judges
/// the edit itself.
pub fn stored_policy_digest(artifact: &[u8]) -> Result<String, ArtifactError> {
    let fields: Fields = serde_json::from_slice(artifact).map_err(ArtifactError::Decode)?;
    let json = serde_json::to_vec(&fields.policy).map_err(ArtifactError::Encode)?;
    Ok(digest(&json))
}

fn policy_digest(policy: &Policy) -> Result<String, ArtifactError> {
    let json = serde_json::to_vec(policy).map_err(ArtifactError::Encode)?;
    Ok(digest(&json))
}

/// Serialize `policy` (checked from `source`) as an artifact: pretty-printed
/// JSON with [`FORMAT`], [`VERSION`], the digest of `source` and the digest
/// of the policy's compact JSON. The output ends with a newline and is
/// byte-identical for the same inputs.
///
/// `source` is only digested; it is not stored and not checked against
/// `policy`.
///
/// # Errors
///
/// [`ArtifactError::Encode`] if the policy cannot be serialized.
pub fn write(policy: &Policy, source: &[u8]) -> Result<Vec<u8>, ArtifactError> {
    let artifact = Artifact {
        format: FORMAT.to_string(),
        version: VERSION,
        source_digest: digest(source),
        policy_digest: policy_digest(policy)?,
        policy: policy.clone(),
    };
    let mut out = serde_json::to_vec_pretty(&artifact).map_err(ArtifactError::Encode)?;
    out.push(b'\n');
    Ok(out)
}

/// Load and re-validate an artifact written by [`write()`].
///
/// Nothing in the file is trusted on its word: the tag and version are
/// checked first, then the whole document is decoded (unknown fields are
/// refused; every path, id and syscall name through its validating
/// constructor), the source digest's form is checked, the policy must be in
/// its canonical form, the policy digest is recomputed, and the policy is
/// rebuilt through [`Policy::try_from`] and held to
/// [`crate::model::check_rules`]. The result can be activated and lowered
/// like a freshly checked policy.
///
/// # Errors
///
/// The first failing check, as an [`ArtifactError`] (never
/// [`ArtifactError::Encode`] for well-formed input).
pub fn load(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
    // Check the tag and version before decoding the policy, so an artifact
    // of another version gets a version error, not a field error.
    #[derive(Deserialize)]
    struct Header {
        format: String,
        version: u32,
    }
    let header: Header = serde_json::from_slice(bytes).map_err(ArtifactError::Decode)?;
    if header.format != FORMAT {
        return Err(ArtifactError::Format(header.format.into()));
    }
    if header.version != VERSION {
        return Err(ArtifactError::Version(header.version));
    }
    // The policy is decoded as its raw fields first, so a resealed policy
    // that breaks an invariant is named as such, after the digest check.
    let raw: Fields = serde_json::from_slice(bytes).map_err(ArtifactError::Decode)?;
    if !is_hex_digest(&raw.source_digest) {
        return Err(ArtifactError::SourceDigest(raw.source_digest.into()));
    }
    // The same bytes as plain JSON, for what the typed decoding cannot see:
    // sets decode without their duplicates and in order.
    #[derive(Deserialize)]
    struct Stored {
        policy: serde_json::Value,
    }
    let stored: Stored = serde_json::from_slice(bytes).map_err(ArtifactError::Decode)?;
    canonical(&stored.policy, &raw.policy)?;
    let json = serde_json::to_vec(&raw.policy).map_err(ArtifactError::Encode)?;
    let computed = blake3::hash(&json);
    if computed.to_hex().as_str() != raw.policy_digest {
        return Err(ArtifactError::Digest {
            stored: raw.policy_digest.into(),
            computed,
        });
    }
    let policy = Policy::try_from(raw.policy)?;
    crate::model::check_rules(&policy)?;
    Ok(Artifact {
        format: raw.format,
        version: raw.version,
        source_digest: raw.source_digest,
        policy_digest: raw.policy_digest,
        policy,
    })
}

/// True for 64 lowercase hex digits: the form of [`digest`].
pub fn is_hex_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The stored policy is the one form [`write()`] gives `decoded`: its sets
/// list no entry twice ([`ArtifactError::Duplicate`]) and nothing differs
/// from the re-serialized policy ([`ArtifactError::NotCanonical`]), so the
/// digest recomputed over the re-serialized policy is over what the file
/// holds.
fn canonical(stored: &serde_json::Value, decoded: &RawPolicy) -> Result<(), ArtifactError> {
    let sets: [(&'static str, &[&str]); 2] = [
        (
            "seccomp.strict_allowlist.syscalls",
            &["seccomp", "strict_allowlist", "syscalls"],
        ),
        ("network_broker.ids", &["network_broker", "ids"]),
    ];
    for (field, keys) in sets {
        let list = keys.iter().try_fold(stored, |v, k| v.get(k));
        let Some(items) = list.and_then(serde_json::Value::as_array) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            if items[..i].contains(item) {
                return Err(ArtifactError::Duplicate {
                    field,
                    entry: FoundText::from(item.to_string()),
                });
            }
        }
    }
    let rewritten = serde_json::to_value(decoded).map_err(ArtifactError::Encode)?;
    if rewritten != *stored {
        let field = match (stored, &rewritten) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => b
                .iter()
                .find(|(k, v)| a.get(*k) != Some(v))
                .map_or_else(|| "policy".to_string(), |(k, _)| k.clone()),
            _ => "policy".to_string(),
        };
        return Err(ArtifactError::NotCanonical(field));
    }
    Ok(())
}

/// True when `bytes` look like an artifact rather than `.splashpol` source
/// (the first non-blank byte is `{`, which no policy source starts with).
///
/// This only picks the loader; it validates nothing. A host that accepts
/// both forms (as `splash_runtime`'s policy loader does) calls [`load`] when
/// this is true and [`crate::check_source`] otherwise.
pub fn looks_like_artifact(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::tests::sample;

    /// An artifact as its raw fields, for editing.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    struct Edited {
        format: String,
        version: u32,
        source_digest: String,
        policy_digest: String,
        policy: RawPolicy,
    }

    fn policy_digest(policy: &RawPolicy) -> Result<String, ArtifactError> {
        let json = serde_json::to_vec(policy).map_err(ArtifactError::Encode)?;
        Ok(digest(&json))
    }

    /// Re-seal an edited artifact with a correct digest, as an attacker with
    /// write access to the file could.
    fn reseal(mut artifact: Edited) -> Vec<u8> {
        artifact.policy_digest = policy_digest(&artifact.policy).expect("digest");
        serde_json::to_vec(&artifact).expect("json")
    }

    #[test]
    fn round_trip() {
        let bytes = write(&sample(), b"source").expect("write");
        let loaded = load(&bytes).expect("load");
        assert_eq!(loaded.policy, sample());
        assert_eq!(loaded.source_digest, digest(b"source"));
        assert!(looks_like_artifact(&bytes));
        assert!(!looks_like_artifact(b"splashpol 1\n"));
    }

    #[test]
    fn version_tag_and_digest_are_checked() {
        let good: Edited =
            serde_json::from_slice(&write(&sample(), b"s").expect("write")).expect("json");
        let mut a = good.clone();
        for old_or_new in [1, 2, 4] {
            a.version = old_or_new;
            assert!(matches!(
                load(&serde_json::to_vec(&a).expect("json")),
                Err(ArtifactError::Version(v)) if v == old_or_new
            ));
        }
        let mut a = good.clone();
        a.format = "other".into();
        assert!(matches!(
            load(&serde_json::to_vec(&a).expect("json")),
            Err(ArtifactError::Format(_))
        ));
        let mut a = good.clone();
        a.policy.name = "edited".into();
        assert!(matches!(
            load(&serde_json::to_vec(&a).expect("json")),
            Err(ArtifactError::Digest { .. })
        ));
        let mut a = good;
        a.source_digest = "xyz".into();
        assert!(matches!(
            load(&serde_json::to_vec(&a).expect("json")),
            Err(ArtifactError::SourceDigest(_))
        ));
    }

    #[test]
    fn found_text_is_escaped_and_cut() {
        let good: Edited =
            serde_json::from_slice(&write(&sample(), b"s").expect("write")).expect("json");
        let mut a = good.clone();
        a.format = "other\u{1b}[2J".into();
        let err = load(&serde_json::to_vec(&a).expect("json")).expect_err("format");
        assert_eq!(
            err.to_string(),
            "artifact format is `other\\u{1b}[2J`; expected `splashpol-compiled`"
        );
        // Control: a plain tag is shown as it is.
        a.format = "other".into();
        let err = load(&serde_json::to_vec(&a).expect("json")).expect_err("format");
        assert_eq!(
            err.to_string(),
            "artifact format is `other`; expected `splashpol-compiled`"
        );
        let mut a = good;
        a.source_digest = "x".repeat(1000);
        let err = load(&serde_json::to_vec(&a).expect("json")).expect_err("digest");
        let shown = format!("`{}…`", "x".repeat(FoundText::MAX_SHOWN_CHARS));
        assert!(err.to_string().contains(&shown), "{err}");
    }

    #[test]
    fn resealed_weaker_policies_are_refused() {
        let good: Edited =
            serde_json::from_slice(&write(&sample(), b"s").expect("write")).expect("json");
        // Pinned executables without pinned mounts.
        let mut a = good.clone();
        a.policy.pin_mounts = false;
        assert!(matches!(load(&reseal(a)), Err(ArtifactError::Invariant(_))));
        // Bounded writes without the user-namespace lockdown.
        let mut a = good.clone();
        a.policy.no_further_user_namespaces = false;
        assert!(matches!(load(&reseal(a)), Err(ArtifactError::Invariant(_))));
        // A mount over the worker's runtime.
        let mut a = good;
        a.policy.file_roots[0].destination = crate::lower::tests::p("/opt/splash/bin");
        assert!(matches!(load(&reseal(a)), Err(ArtifactError::Invariant(_))));
    }

    #[test]
    fn unknown_syscalls_and_invalid_paths_do_not_decode() {
        let bytes = write(&sample(), b"s").expect("write");
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let edits: [(&str, serde_json::Value); 4] = [
            (
                "seccomp",
                serde_json::json!({"strict_allowlist": {"syscalls": ["execve", "exceve"]}}),
            ),
            ("bubblewrap", serde_json::json!("usr/bin/bwrap")),
            ("worker", serde_json::json!("/opt/splash/../bin/worker")),
            ("worker", serde_json::json!("/opt/splash/bin/w\u{0}")),
        ];
        for (field, value) in edits {
            let mut e = v.clone();
            e["policy"][field] = value;
            let got = load(&serde_json::to_vec(&e).expect("json"));
            assert!(
                matches!(got, Err(ArtifactError::Decode(_))),
                "{field}: {got:?}"
            );
        }
        // The controls: the same document unedited loads, and with a list
        // of known names it decodes (and only its digest no longer matches).
        assert!(load(&serde_json::to_vec(&v).expect("json")).is_ok());
        let mut e = v;
        e["policy"]["seccomp"] =
            serde_json::json!({"strict_allowlist": {"syscalls": ["execve", "read"]}});
        let got = load(&serde_json::to_vec(&e).expect("json"));
        assert!(matches!(got, Err(ArtifactError::Digest { .. })), "{got:?}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let bytes = write(&sample(), b"s").expect("write");
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        v["policy"]["share_net"] = serde_json::Value::Bool(true);
        assert!(matches!(
            load(&serde_json::to_vec(&v).expect("json")),
            Err(ArtifactError::Decode(_))
        ));
    }
}
