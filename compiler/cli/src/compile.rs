//! `splashc compile POLICY -o FILE`: check a `.splashpol` file and write a
//! versioned compiled-policy artifact (`splashpol::artifact`), which a Rust
//! host loads without the front end and activates with a manifest.

use crate::CompileArgs;
use splash_runtime::launch::MAX_POLICY_BYTES;

use crate::emit::{policy_from_bytes, read_policy};
use crate::exit::Exit;

pub fn run(args: &CompileArgs) -> Exit {
    let source = match read_policy(&args.policy) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if splashpol::artifact::looks_like_artifact(&source) {
        eprintln!(
            "splashc compile: `{}` is already a compiled artifact; compile `.splashpol` source",
            args.policy.display()
        );
        return Exit::Usage;
    }
    let loaded = match policy_from_bytes(&args.policy, source.clone()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let bytes = match splashpol::artifact::write(&loaded.policy, &source) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("splashc compile: {e}");
            return Exit::Rejected;
        }
    };
    // Every artifact written can be read back by the loaders.
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_POLICY_BYTES {
        eprintln!(
            "splashc compile: the artifact of `{}` would be {} bytes; a policy file may hold at most {MAX_POLICY_BYTES}",
            args.policy.display(),
            bytes.len()
        );
        return Exit::Rejected;
    }
    if let Err(e) = std::fs::write(&args.output, bytes) {
        eprintln!(
            "splashc compile: cannot write `{}`: {e}",
            args.output.display()
        );
        return Exit::Usage;
    }
    Exit::Success
}
