//! `splashc explain POLICY [--manifest FILE] [--arch A] [--format json | --dot]`:
//! the effective sandbox of the lowered plan and its compiled filter
//! (`splashpol::explain`): visible paths, the writable-bytes bound, the exec
//! surface, denied syscalls per architecture, limits, isolation and what is
//! not enforced. When the plan is for this host's architecture, the probes of
//! `splashc doctor` add what this host cannot enforce (skipped with
//! `--plan-only`, which makes the output depend on the policy alone), and
//! each bind source is resolved the way bind resolves it (canonicalized,
//! symbolic links followed), so a source that leads elsewhere shows where;
//! with `--plan-only` the sources stay unresolved and the output says so.
//! `--dot` prints the mount graph for Graphviz. The entries of the policy's
//! `expect` block are listed last.
//!
//! Exit status: 0 explained, 1 the policy or manifest has errors, 2 usage or
//! I/O problems.

use std::io::Write;

use splashpol::explain;
use splashpol::plan::Arch;

use crate::exit::Exit;
use crate::{ExplainArgs, Format, doctor};

pub fn run(args: &ExplainArgs) -> Exit {
    let arch = match crate::emit::arch(args.arch.as_deref()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let (policy, plan) =
        match crate::emit::policy_and_plan(&args.policy, args.manifest.as_deref(), arch) {
            Ok(p) => p,
            Err(code) => return code,
        };
    let mut explanation = explain::explain(&policy, &plan);
    // The `expect` block is not part of the plan: it comes from the source
    // (an artifact has none).
    if let Ok(source) = std::fs::read_to_string(&args.policy)
        && let Some((_, expectations)) = splashpol::expect::of_source(&source)
    {
        explanation.expectations = expectations.into_iter().map(|x| x.text).collect();
    }
    if !args.plan_only && !args.dot && Some(arch) == Arch::host() {
        let preflight = splash_runtime::preflight(&plan, &splash_runtime::BindOptions::default());
        let gaps = doctor::diagnose(&doctor::RealHost, &plan, &preflight)
            .into_iter()
            .filter_map(|f| {
                let status = match f.status {
                    doctor::Status::Ok => return None,
                    doctor::Status::Warning => explain::GapStatus::Warning,
                    doctor::Status::Skipped => explain::GapStatus::Skipped,
                    doctor::Status::Missing => explain::GapStatus::Missing,
                };
                Some(explain::HostGap {
                    control: f.control.to_string(),
                    status,
                    detail: f.detail,
                    fix: f.fix,
                })
            })
            .collect();
        explanation.on_this_host = Some(gaps);
        // Bind canonicalizes every source, pinned or not, before it opens
        // or pins it: this is the object the worker would see.
        explanation.resolve_sources(|source| {
            std::fs::canonicalize(source)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
        });
    }
    let text = if args.dot {
        explain::render_dot(&explanation)
    } else if args.format == Format::Json {
        match serde_json::to_string_pretty(&explanation) {
            Ok(mut t) => {
                t.push('\n');
                t
            }
            Err(e) => {
                eprintln!("splashc explain: cannot render JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        explain::render_human(&explanation)
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("splashc explain: cannot write the output: {e}");
            Exit::Usage
        }
    }
}
