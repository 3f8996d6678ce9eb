//! Compiled `.splashc` artifact bytes through the loaders: the runtime's
//! `LoadedPolicy::from_bytes` (artifact or source, as `splashc` and hosts
//! read a policy file) and `splashpol::artifact::load`.
//!
//! A mutated artifact almost never keeps a matching policy digest, which
//! would stop every input at the digest check. So each input is also
//! resealed: when its `policy` decodes as a raw policy, the digest is
//! recomputed and the document loaded again, which reaches the invariant
//! checks a resealed, weakened policy must fail.
//!
//! Invariants, besides not panicking:
//! - the two loaders agree on artifact bytes;
//! - a loaded artifact writes and loads back to the same policy and the
//!   same policy digest;
//! - a loaded policy activates (every registered root) and lowers for
//!   x86_64 or refuses, and a plan it lowers to renders its argv.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use splash_runtime::launch::LoadedPolicy;
use splash_seccomp::Arch;
use splashpol::artifact::{self, Artifact, ArtifactError};
use splashpol::{activate, lower};

fuzz_target!(|data: &[u8]| {
    let direct = artifact::load(data);
    let loaded = LoadedPolicy::from_bytes("fuzz.splashc", data.to_vec());
    if artifact::looks_like_artifact(data) {
        assert_eq!(
            direct.is_ok(),
            loaded.is_ok(),
            "artifact::load and LoadedPolicy::from_bytes disagree"
        );
    }
    if let Ok(a) = &direct {
        round_trip(a);
        lower_all(a);
    }
    if let Some(resealed) = reseal(data) {
        match artifact::load(&resealed) {
            Ok(a) => {
                round_trip(&a);
                lower_all(&a);
            }
            Err(ArtifactError::Digest { .. }) => panic!("a resealed artifact fails its digest"),
            Err(_) => {}
        }
    }
});

/// `data` with its `policy_digest` recomputed, when it decodes as an
/// artifact's fields.
fn reseal(data: &[u8]) -> Option<Vec<u8>> {
    let digest = artifact::stored_policy_digest(data).ok()?;
    let mut doc: Value = serde_json::from_slice(data).ok()?;
    *doc.get_mut("policy_digest")? = Value::String(digest);
    serde_json::to_vec(&doc).ok()
}

fn round_trip(a: &Artifact) {
    let bytes = artifact::write(&a.policy, b"").expect("a loaded policy writes");
    let back = artifact::load(&bytes).expect("a written artifact loads");
    assert_eq!(back.policy, a.policy, "write/load changed the policy");
    assert_eq!(
        back.policy_digest, a.policy_digest,
        "write/load changed the policy digest"
    );
}

fn lower_all(a: &Artifact) {
    let Ok(activation) = activate::activate(&a.policy, None) else {
        return;
    };
    if let Ok(plan) = lower::lower(&a.policy, &activation, Arch::X86_64, &a.source_digest) {
        let argv = plan.display_command_line();
        assert!(!argv.is_empty(), "a plan has a command line");
    }
}
