//! `splashc`: the command-line front end.
//!
//! Exit status: 0 success, 1 the policy (or manifest) has errors, 2 usage or
//! I/O problems. Each subcommand lives in its own module.
//!
//! The process starts at `sys::main`, not through std's runtime setup for a
//! `main` function: see there.

#![cfg_attr(not(test), no_main)]

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
#[cfg(test)]
use std::process::ExitCode;

use clap::{Args, FromArgMatches, Parser, Subcommand, ValueEnum};

mod bpf;
mod check;
mod compile;
mod diff;
mod doctor;
mod emit;
mod explain;
mod fmt;
mod help;
mod lsp;
mod run;
mod sys;

#[derive(Debug, Parser)]
#[command(
    name = "splashc",
    version,
    about = ABOUT
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report every problem in a policy file at once.
    Check(CheckArgs),
    /// Print the launch objects of a policy.
    Emit(EmitArgs),
    /// Write a compiled-policy artifact.
    Compile(CompileArgs),
    /// Launch a worker under a policy and open an authenticated session.
    #[command(about = RUN_ABOUT)]
    Run(RunArgs),
    /// Prove that this host can enforce every control of a policy, or name
    /// what is missing and the fix.
    Doctor(DoctorArgs),
    /// Show the effective sandbox of a policy: paths, writes, execution,
    /// syscalls, limits, and what is not enforced.
    Explain(ExplainArgs),
    /// Compare two policies layer by layer; exit 1 when B widens A.
    Diff(DiffArgs),
    /// Rewrite policy files in the canonical layout, keeping comments.
    Fmt(FmtArgs),
    /// Serve the Language Server Protocol over standard input and output:
    /// live diagnostics, hover and completion for policy files.
    Lsp,
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the manual page, or write one page per command into a directory.
    Man(ManArgs),
}

/// Output format for diagnostics and plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Policy files to check.
    #[arg(required = true)]
    pub policies: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct EmitArgs {
    pub policy: PathBuf,
    /// Capability manifest JSON; without it every registered root is active.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Print the Bubblewrap argument list.
    #[arg(long, conflicts_with = "bpf")]
    pub argv: bool,
    /// Separate arguments with NUL instead of shell quoting.
    #[arg(long, requires = "argv")]
    pub null: bool,
    /// Print the raw seccomp program for `--arch`.
    #[arg(long)]
    pub bpf: bool,
    /// With `--bpf`: print a disassembly listing instead of raw bytes.
    #[arg(long, requires = "bpf")]
    pub listing: bool,
    /// Target architecture for the seccomp program (default: this host).
    #[arg(long)]
    pub arch: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct CompileArgs {
    pub policy: PathBuf,
    /// Where to write the compiled-policy artifact.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    pub policy: PathBuf,
    /// Capability manifest JSON; without it a manifest activating every
    /// registered root is generated for a fresh session.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Tool to call (default `probe.report`, the bundled probe's report).
    #[arg(long)]
    pub invoke: Option<String>,
    /// JSON input of the call (default `{}`).
    #[arg(long, requires = "invoke")]
    pub input: Option<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The policy, lowered for this host as `splashc run` lowers it.
    #[arg(required_unless_present = "plan", conflicts_with = "plan")]
    pub policy: Option<PathBuf>,
    /// Capability manifest JSON; without it every registered root is checked.
    #[arg(long, conflicts_with = "plan")]
    pub manifest: Option<PathBuf>,
    /// A launch plan (JSON, as `splashc emit --format json` writes it) to
    /// check instead of a policy.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    pub policy: PathBuf,
    /// Capability manifest JSON; without it every registered root is active.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Architecture of the plan (default: this host).
    #[arg(long)]
    pub arch: Option<String>,
    #[arg(long, value_enum, default_value = "human", conflicts_with = "dot")]
    pub format: Format,
    /// Print the mount graph in Graphviz `dot` instead.
    #[arg(long)]
    pub dot: bool,
    /// Do not probe this host; explain the plan alone.
    #[arg(long)]
    pub plan_only: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The policy as it was.
    pub a: PathBuf,
    /// The policy as it would become.
    pub b: PathBuf,
    /// Architecture of the plans (default: this host); the filter is
    /// compared for every architecture.
    #[arg(long)]
    pub arch: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct FmtArgs {
    /// Policy files to format in place; `-` reads standard input and writes
    /// standard output.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write nothing; list the files that would change and exit 1 if any.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `splashc.1` and `splashc-COMMAND.1` for every command into this
    /// directory instead of printing `splashc.1`.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// The one-line help of `splashc`.
const ABOUT: &str = "Policy compiler and launcher for Bubblewrap sandboxes";
/// The one-line help of `splashc run`, shared by the full command tree and
/// [`run_only`].
const RUN_ABOUT: &str = "Launch a worker under a policy and open an authenticated session.";

/// `splashc` with `run` as its only subcommand, the same name, version and
/// `run` arguments as [`Cli`]. Building the whole tree (eleven subcommands
/// with their arguments, values and help) is most of what argument parsing
/// costs, and `splashc run` is the one command whose start-up time matters
/// (it is on a host's launch path), so a command line that starts with `run`
/// is parsed against this tree instead. A test compares its help and
/// its parses with the full tree's.
fn run_only() -> clap::Command {
    clap::Command::new("splashc")
        .version(env!("CARGO_PKG_VERSION"))
        .about(ABOUT)
        .subcommand(RunArgs::augment_args(
            clap::Command::new("run").about(RUN_ABOUT),
        ))
}

/// A `splashc run` line in its plain form, read without building clap's
/// command tree (which costs a fresh process about 0.1 ms): after `run`,
/// exactly one policy path and each of `--manifest`, `--invoke` and
/// `--input` at most once, as `--name value` or `--name=value`, with
/// `--input` only beside `--invoke`; every argument UTF-8, every value
/// non-empty and not starting with `-`. Any other line (help, a typo, a
/// repeated or missing value) is `None` and goes to clap, which answers as
/// it always does; a test compares the two on every short line over a
/// vocabulary of plain and awkward arguments.
fn plain_run(argv: &[OsString]) -> Option<RunArgs> {
    let (run, rest) = argv.get(1..)?.split_first()?;
    if run != "run" {
        return None;
    }
    let mut policy = None;
    let (mut manifest, mut invoke, mut input) = (None, None, None);
    let mut words = rest.iter().map(|w| w.to_str());
    while let Some(word) = words.next() {
        let word = word?;
        let Some(option) = word.strip_prefix("--") else {
            if word.is_empty() || word.starts_with('-') || policy.is_some() {
                return None;
            }
            policy = Some(PathBuf::from(word));
            continue;
        };
        let (name, value) = match option.split_once('=') {
            Some((name, value)) => (name, value),
            None => (option, words.next()??),
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        let slot = match name {
            "manifest" => &mut manifest,
            "invoke" => &mut invoke,
            "input" => &mut input,
            _ => return None,
        };
        if slot.replace(value.to_owned()).is_some() {
            return None;
        }
    }
    if input.is_some() && invoke.is_none() {
        return None;
    }
    Some(RunArgs {
        policy: policy?,
        manifest: manifest.map(PathBuf::from),
        invoke,
        input,
    })
}

/// The parsed command line: a plain `run` line by [`plain_run`], another
/// line starting with `run` through [`run_only`], otherwise through the
/// full tree.
fn parse_command_line() -> Command {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if let Some(args) = plain_run(&argv) {
        return Command::Run(args);
    }
    let first = argv.get(1);
    if first.map(OsString::as_os_str) == Some(OsStr::new("run")) {
        let matches = run_only().get_matches();
        if let Some(("run", sub)) = matches.subcommand() {
            match RunArgs::from_arg_matches(sub) {
                Ok(args) => return Command::Run(args),
                Err(e) => e.exit(),
            }
        }
    }
    Cli::parse().command
}

/// Runs the command line: the process's exit status.
fn run_command_line() -> u8 {
    match parse_command_line() {
        Command::Check(a) => check::run(&a),
        Command::Emit(a) => emit::run(&a),
        Command::Compile(a) => compile::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Fmt(a) => fmt::run(&a),
        Command::Lsp => lsp::run(),
        Command::Completions(a) => help::completions(&a),
        Command::Man(a) => help::man(&a),
    }
}

/// Test builds run the harness's `main`; this keeps the command line's code
/// reachable there, as `sys::main` does in the binary.
#[cfg(test)]
fn main() -> ExitCode {
    ExitCode::from(run_command_line())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// The command lines the test feeds both trees.
    const LINES: &[&[&str]] = &[
        &["splashc", "run", "p.splashpol"],
        &[
            "splashc",
            "run",
            "p.splashpol",
            "--manifest",
            "m.json",
            "--invoke",
            "probe.echo",
            "--input",
            "{}",
        ],
        &["splashc", "run", "p.splashpol", "--input", "{}"],
        &["splashc", "run"],
        &["splashc", "run", "p.splashpol", "--bogus"],
        &["splashc", "run", "p.splashpol", "extra"],
        &["splashc", "run", "--help"],
        &["splashc", "run", "-h"],
        &["splashc", "run", "--version"],
        &["splashc", "run", "--invoke"],
    ];

    fn via_run_only(line: &[&str]) -> Result<String, String> {
        let matches = run_only()
            .try_get_matches_from(line)
            .map_err(|e| e.render().to_string())?;
        let Some(("run", sub)) = matches.subcommand() else {
            return Err("no run subcommand".into());
        };
        RunArgs::from_arg_matches(sub)
            .map(|a| format!("{a:?}"))
            .map_err(|e| e.render().to_string())
    }

    fn via_full_tree(line: &[&str]) -> Result<String, String> {
        match Cli::try_parse_from(line) {
            Ok(Cli {
                command: Command::Run(a),
            }) => Ok(format!("{a:?}")),
            Ok(other) => Err(format!("not run: {other:?}")),
            Err(e) => Err(e.render().to_string()),
        }
    }

    /// Every line of up to four arguments after `run` over a vocabulary of
    /// plain and awkward words: wherever the hand reader accepts a line,
    /// clap accepts it with the same arguments (a reader that accepted
    /// nothing would pass this part, so the plain lines are also required
    /// to be taken by it).
    #[test]
    fn the_plain_run_reader_agrees_with_clap_wherever_it_answers() {
        let vocabulary = [
            "p.splashpol",
            "q",
            "--manifest",
            "m.json",
            "--invoke",
            "probe.echo",
            "--input",
            "{}",
            "--input={\"a\":1}",
            "--invoke=x",
            "--manifest=",
            "--input=-1",
            "-1",
            "-",
            "--",
            "",
            "-h",
            "--help",
            "--version",
            "--bogus",
            "--invoke=a=b",
        ];
        let mut lines: Vec<Vec<&str>> = vec![Vec::new()];
        let mut frontier = lines.clone();
        for _ in 0..4 {
            let mut next = Vec::new();
            for line in &frontier {
                for word in vocabulary {
                    let mut longer = line.clone();
                    longer.push(word);
                    next.push(longer);
                }
            }
            lines.extend(next.iter().cloned());
            frontier = next;
        }
        let mut taken = 0;
        for tail in &lines {
            let mut line = vec!["splashc", "run"];
            line.extend(tail);
            let argv: Vec<OsString> = line.iter().map(OsString::from).collect();
            if let Some(args) = plain_run(&argv) {
                taken += 1;
                assert_eq!(Ok(format!("{args:?}")), via_run_only(&line), "{line:?}");
            }
        }
        assert!(taken > 500, "{taken} lines taken");
        for line in LINES {
            let argv: Vec<OsString> = line.iter().map(OsString::from).collect();
            let plain = plain_run(&argv).map(|a| format!("{a:?}"));
            match via_run_only(line) {
                Ok(parsed) if !line.contains(&"--help") => {
                    assert_eq!(plain, Some(parsed), "{line:?}")
                }
                _ => assert_eq!(plain, None, "{line:?}"),
            }
        }
        // Not `run`, or not UTF-8: clap's.
        let not_run: Vec<OsString> = ["splashc", "check", "p"].map(OsString::from).to_vec();
        assert!(plain_run(&not_run).is_none());
        use std::os::unix::ffi::OsStringExt;
        let bytes = vec![
            OsString::from("splashc"),
            OsString::from("run"),
            OsString::from_vec(b"p\xff".to_vec()),
        ];
        assert!(plain_run(&bytes).is_none());
    }

    #[test]
    fn the_run_only_tree_parses_and_refuses_exactly_like_the_full_tree() {
        for line in LINES {
            assert_eq!(via_run_only(line), via_full_tree(line), "{line:?}");
        }
    }

    #[test]
    fn the_run_only_tree_has_the_full_trees_run_help_and_identity() {
        let mut full = Cli::command();
        let mut fast = run_only();
        assert_eq!(fast.get_name(), full.get_name());
        assert_eq!(fast.get_version(), full.get_version());
        assert_eq!(
            fast.get_about().map(ToString::to_string),
            full.get_about().map(ToString::to_string)
        );
        let full_run = full
            .find_subcommand_mut("run")
            .expect("run in the full tree");
        let full_help = full_run.render_long_help().to_string();
        let fast_run = fast
            .find_subcommand_mut("run")
            .expect("run in the fast tree");
        assert_eq!(fast_run.render_long_help().to_string(), full_help);
        assert!(full_help.contains("--invoke"), "{full_help}");
    }
}
