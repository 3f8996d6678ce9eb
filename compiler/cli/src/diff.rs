//! `splashc diff A B [--arch A] [--format json]`: per layer, what `B`
//! widens and narrows compared with `A` (`splashpol::diff`), each change
//! with the deciding tokens of both files. Both policies are lowered
//! with every registered root active.
//!
//! Exit status: 0 nothing widened (identical, or only narrowed), 1 at least
//! one widening, 2 usage or I/O problems, 3 a policy has errors or cannot be
//! lowered.

use std::io::Write;
use std::path::Path;

use splashpol::diff;
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};

use crate::exit::Exit;
use crate::{DiffArgs, Format};

struct Loaded {
    file: String,
    source: String,
    policy: Policy,
    plan: LaunchPlan,
}

fn side(l: &Loaded) -> diff::Side<'_> {
    diff::Side {
        file: &l.file,
        source: &l.source,
        policy: &l.policy,
        plan: &l.plan,
    }
}

fn load(path: &Path, arch: Arch) -> Result<Loaded, Exit> {
    let bytes = crate::emit::read_policy(path)?;
    let Ok(source) = String::from_utf8(bytes.clone()) else {
        eprintln!(
            "splashc diff: `{}` is not a UTF-8 policy source",
            path.display()
        );
        return Err(Exit::Usage);
    };
    let (policy, plan) =
        crate::emit::policy_and_plan_from_bytes(path, bytes, None, arch).map_err(|code| {
            if code == Exit::Rejected {
                Exit::Failed
            } else {
                code
            }
        })?;
    Ok(Loaded {
        file: path.display().to_string(),
        source,
        policy,
        plan,
    })
}

pub fn run(args: &DiffArgs) -> Exit {
    let arch = match crate::emit::arch(args.arch.as_deref()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let (a, b) = match (load(&args.a, arch), load(&args.b, arch)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let result = diff::diff(&side(&a), &side(&b));
    let text = match args.format {
        Format::Human => diff::render_human(&result),
        Format::Json => match serde_json::to_string_pretty(&result) {
            Ok(t) => t + "\n",
            Err(e) => {
                eprintln!("splashc diff: cannot render JSON: {e}");
                return Exit::Usage;
            }
        },
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        eprintln!("splashc diff: cannot write the output: {e}");
        return Exit::Usage;
    }
    if result.widened() {
        Exit::Rejected
    } else {
        Exit::Success
    }
}
