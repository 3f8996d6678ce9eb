//! `splashc emit POLICY [--manifest FILE] [--argv [--null] | --format json | --bpf [--listing]] [--arch A]`.
//!
//! - `--argv` (the default): the Bubblewrap command line, program first, one
//!   shell-quoted argument per line, or NUL-terminated with `--null`;
//!   descriptors appear as placeholders (`docs/launch-plan.md`).
//! - `--format json`: the whole launch plan as JSON.
//! - `--bpf [--listing]`: the seccomp program (raw bytes, or a listing).
//!
//! `POLICY` is `.splashpol` source or a compiled artifact (`splashc
//! compile`). Without `--manifest` every registered root is active; the
//! output says so (a note on stderr for argv, a field in JSON).

use std::io::Write;
use std::path::Path;

use splash_protocol::CapabilityManifest;
use splash_seccomp::Arch;
use splashpol::model::Policy;
use splashpol::plan::LaunchPlan;
use splashpol::{activate, artifact, emit, lower};

use crate::exit::Exit;
use crate::{EmitArgs, Format};

/// A policy loaded from source or from an artifact.
pub struct Loaded {
    pub policy: Policy,
    /// BLAKE3 hex digest of the `.splashpol` source.
    pub source_digest: String,
}

/// The most bytes a capability manifest file may hold: 4 MiB. The largest
/// manifest the decoder accepts (128 grants of 64 resources, every id 128
/// bytes) is under 2 MiB even pretty-printed.
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// Read the regular file at `path`, at most `bound` bytes
/// ([`splash_runtime::launch::read_regular_file`]: a FIFO, a device or a
/// directory is refused without blocking). A failure is reported and
/// becomes exit status 2.
pub fn read_bounded(path: &Path, what: &str, bound: u64) -> Result<Vec<u8>, Exit> {
    splash_runtime::launch::read_regular_file(path, bound).map_err(|e| {
        eprintln!("splashc: cannot read {what} `{}`: {e}", path.display());
        Exit::Usage
    })
}

/// Read a policy file (source or artifact), at most
/// [`splash_runtime::launch::MAX_POLICY_BYTES`]; see [`read_bounded`].
pub fn read_policy(path: &Path) -> Result<Vec<u8>, Exit> {
    read_bounded(path, "policy", splash_runtime::launch::MAX_POLICY_BYTES)
}

/// Load a policy from `.splashpol` source (checked, diagnostics on stderr) or
/// from a compiled artifact (re-validated). Errors are reported; the `Err`
/// value is the exit status.
pub fn load_policy(path: &Path) -> Result<Loaded, Exit> {
    let bytes = read_policy(path)?;
    policy_from_bytes(path, bytes)
}

/// [`load_policy`] for bytes already read from `path`.
pub fn policy_from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Loaded, Exit> {
    if artifact::looks_like_artifact(&bytes) {
        return match artifact::load(&bytes) {
            Ok(a) => Ok(Loaded {
                policy: a.policy,
                source_digest: a.source_digest,
            }),
            Err(e) => {
                eprintln!("splashc: `{}`: {e}", path.display());
                Err(Exit::Rejected)
            }
        };
    }
    let name = path.display().to_string();
    let (source, outcome) = splashpol::check_bytes(&name, &bytes);
    if !outcome.diagnostics.is_empty() {
        eprint!("{}", outcome.render_human(&name, &source));
    }
    match outcome.policy {
        Some(policy) if !outcome.has_errors() => Ok(Loaded {
            policy,
            source_digest: artifact::digest(source.as_bytes()),
        }),
        _ => Err(Exit::Rejected),
    }
}

/// Load and validate a manifest; errors are reported, `Err` is the status.
pub fn load_manifest(path: &Path) -> Result<CapabilityManifest, Exit> {
    let bytes = read_bounded(path, "manifest", MAX_MANIFEST_BYTES)?;
    CapabilityManifest::from_json(&bytes).map_err(|e| {
        eprintln!(
            "splashc: manifest `{}`: {}",
            path.display(),
            splashpol::text::escaped(&e.to_string())
        );
        Exit::Rejected
    })
}

/// The architecture named by `--arch`, or this host's; a bad name is a
/// usage error (status 2).
pub fn arch(flag: Option<&str>) -> Result<Arch, Exit> {
    crate::bpf::arch_from_flag(flag).map_err(|e| {
        eprintln!("splashc: {e}");
        Exit::Usage
    })
}

/// Load, activate and lower: the plan `emit` and `run` display or launch.
pub fn plan(policy_path: &Path, manifest: Option<&Path>, arch: Arch) -> Result<LaunchPlan, Exit> {
    policy_and_plan(policy_path, manifest, arch).map(|(_, plan)| plan)
}

/// [`plan`], also returning the checked policy the plan was lowered from.
pub fn policy_and_plan(
    policy_path: &Path,
    manifest: Option<&Path>,
    arch: Arch,
) -> Result<(Policy, LaunchPlan), Exit> {
    let bytes = read_policy(policy_path)?;
    policy_and_plan_from_bytes(policy_path, bytes, manifest, arch)
}

/// [`policy_and_plan`] for bytes already read from `policy_path`.
pub fn policy_and_plan_from_bytes(
    policy_path: &Path,
    bytes: Vec<u8>,
    manifest: Option<&Path>,
    arch: Arch,
) -> Result<(Policy, LaunchPlan), Exit> {
    let loaded = policy_from_bytes(policy_path, bytes)?;
    let manifest = manifest.map(load_manifest).transpose()?;
    let activation = activate::activate(&loaded.policy, manifest.as_ref()).map_err(|e| {
        eprintln!("splashc: activation failed: {e}");
        Exit::Rejected
    })?;
    let plan =
        lower::lower(&loaded.policy, &activation, arch, &loaded.source_digest).map_err(|e| {
            eprintln!("splashc: cannot lower the policy: {e}");
            Exit::Rejected
        })?;
    Ok((loaded.policy, plan))
}

pub fn run(args: &EmitArgs) -> Exit {
    match emit_main(args) {
        Ok(()) => Exit::Success,
        Err(code) => code,
    }
}

fn emit_main(args: &EmitArgs) -> Result<(), Exit> {
    if args.argv && args.format == Format::Json {
        eprintln!("splashc emit: `--argv` and `--format json` are exclusive");
        return Err(Exit::Usage);
    }
    let arch = arch(args.arch.as_deref())?;

    if args.bpf {
        let loaded = load_policy(&args.policy)?;
        let program = match crate::bpf::program_for(&loaded.policy, arch) {
            Ok(Some(p)) => p,
            Ok(None) => {
                eprintln!("splashc emit: the policy selects no seccomp profile");
                return Err(Exit::Rejected);
            }
            Err(e) => {
                eprintln!("splashc emit: cannot compile the seccomp program: {e}");
                return Err(Exit::Rejected);
            }
        };
        return match crate::bpf::run_bpf(&program, args.listing) {
            Exit::Success => Ok(()),
            code => Err(code),
        };
    }

    let plan = plan(&args.policy, args.manifest.as_deref(), arch)?;
    let mut out = std::io::stdout().lock();
    let written = if args.format == Format::Json {
        serde_json::to_string_pretty(&plan)
            .map_err(std::io::Error::other)
            .and_then(|json| writeln!(out, "{json}"))
    } else {
        if plan.all_registered_roots_active() {
            eprintln!("note: no manifest given; every registered file root is active");
        }
        eprintln!(
            "note: this command line needs bubblewrap {} or later",
            emit::minimum_bwrap_version(&plan)
        );
        let line = plan.display_command_line();
        if args.null {
            line.iter().try_for_each(|a| {
                out.write_all(a.as_bytes())
                    .and_then(|()| out.write_all(b"\0"))
            })
        } else {
            out.write_all(render_shell(&line).as_bytes())
        }
    };
    written.and_then(|()| out.flush()).map_err(|e| {
        eprintln!("splashc emit: cannot write the output: {e}");
        Exit::Usage
    })
}

/// Shell-quoted, a new line (with a ` \` continuation) before each option,
/// so the text is both readable and a valid shell command.
fn render_shell(line: &[String]) -> String {
    let mut text = String::new();
    for (i, arg) in line.iter().enumerate() {
        if i > 0 {
            text.push_str(if arg.starts_with("--") {
                " \\\n  "
            } else {
                " "
            });
        }
        text.push_str(&emit::shell_quote(arg));
    }
    text.push('\n');
    text
}
