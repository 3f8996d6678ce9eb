//! Capability manifest bytes through `CapabilityManifest::from_json`, the
//! strict decoder `splashc emit --manifest` and hosts use, then activation
//! of the bundled `agent-worker` policy with the manifest that was accepted.
//!
//! Invariants, besides not panicking:
//! - an accepted manifest validates, and its canonical encoding decodes to
//!   the same value and encodes to the same bytes again;
//! - the serde `Deserialize` impl and `from_value` accept it too, with the
//!   same value (`from_json` refuses strictly more: repeated keys);
//! - activation and lowering either succeed or refuse; a successful
//!   activation selects only roots the manifest names.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use splash_manifest::{CapabilityManifest, ResourceKind};
use splash_seccomp::Arch;
use splashpol::model::Policy;
use splashpol::{activate, lower};

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = CapabilityManifest::from_json(data) else {
        return;
    };
    manifest.validate().expect("an accepted manifest validates");

    let encoded = manifest.to_json_bytes().expect("encode");
    let again = CapabilityManifest::from_json(&encoded).expect("the encoding decodes");
    assert_eq!(again, manifest, "decode(encode(m)) != m");
    assert_eq!(
        again.to_json_bytes().expect("encode"),
        encoded,
        "the canonical encoding is not a fixed point"
    );

    let via_serde: CapabilityManifest =
        serde_json::from_slice(data).expect("the Deserialize impl accepts what from_json does");
    assert_eq!(via_serde, manifest);
    let value: serde_json::Value = serde_json::from_slice(data).expect("JSON");
    let via_value = CapabilityManifest::from_value(value).expect("from_value agrees");
    assert_eq!(via_value, manifest);

    let policy = policy();
    let Ok(activation) = activate::activate(policy, Some(&manifest)) else {
        return;
    };
    let named = manifest.active_ids(ResourceKind::FileRoot);
    for root in activation.roots() {
        assert!(
            named.iter().any(|id| id.as_str() == root.as_str()),
            "activation selected root `{}` that the manifest does not name",
            root.as_str()
        );
    }
    let _ = lower::lower(policy, &activation, Arch::X86_64, &"0".repeat(64));
});

/// The bundled policy the manifests are activated against.
fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let source = include_str!("../../policies/agent-worker.splashpol");
        splashpol::check_source("agent-worker.splashpol", source)
            .policy
            .expect("the bundled policy checks")
    })
}
