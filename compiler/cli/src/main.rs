//! `splashc`: the command-line front end.
//!
//! Exit status: 0 success, 1 the policy (or manifest) has errors, 2 usage or
//! I/O problems. Each subcommand lives in its own module.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod battery;
mod bpf;
mod check;
mod compile;
mod diff;
mod doctor;
mod emit;
mod exit;
mod explain;
mod fmt;
mod help;
mod learn;
mod lsp;
mod run;
mod serve;
mod sys;
mod test;

#[derive(Debug, Parser)]
#[command(
    name = "splashc",
    version,
    propagate_version = true,
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
    /// Drive sessions over a JSON-lines control protocol on standard input
    /// and output: launch, invoke, start, cancel, close, several at once.
    Serve(ServeArgs),
    /// Prove that this host can enforce every control of a policy, or name
    /// what is missing and the fix.
    Doctor(DoctorArgs),
    /// Show the effective sandbox of a policy: paths, writes, execution,
    /// syscalls, limits, and what is not enforced.
    Explain(ExplainArgs),
    /// Compare two policies layer by layer; exit 1 when B widens A.
    Diff(DiffArgs),
    /// Run the worker in the policy's sandbox under a recording filter and
    /// propose the narrowest strict allowlist for the same run.
    Learn(LearnArgs),
    /// Rewrite policy files in the canonical layout, keeping comments.
    Fmt(FmtArgs),
    /// Check the policy's `expect` block from inside the sandbox it
    /// produces on this host, each denied attempt against a control.
    Test(TestArgs),
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
    /// Policy files to check; `-` reads standard input.
    #[arg(required = true)]
    pub policies: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Print errors only: no warnings and no per-file summary (with
    /// `--deny-warnings`, warnings are errors and are printed).
    #[arg(short, long)]
    pub quiet: bool,
    /// Treat warnings as errors: exit 1 when any file has a warning.
    #[arg(long)]
    pub deny_warnings: bool,
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
    /// Tool to call; repeat for several calls, made in order (default
    /// `probe.report`, the bundled probe's report).
    #[arg(long, value_name = "TOOL")]
    pub invoke: Vec<String>,
    /// JSON input of the `--invoke` before it (default `{}`).
    #[arg(long, value_name = "JSON", requires = "invoke")]
    pub input: Vec<String>,
    /// Make the calls of FILE (`-`: standard input), one JSON object
    /// `{"tool": TOOL, "input": JSON}` per line, instead of `--invoke`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["invoke", "input"])]
    pub calls: Option<PathBuf>,
    /// Refuse to run unless the policy file's BLAKE3 digest (64 lowercase
    /// hex digits, as `b3sum` prints it) is HEX: binds the run to one
    /// reviewed file. It detects change, not who made the file.
    #[arg(long, value_name = "HEX")]
    pub expect_digest: Option<String>,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    pub policy: PathBuf,
    /// Capability manifest JSON: the session and file roots to test with;
    /// without it every registered root is active.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// The static test probe (default: `splash-probe` beside `splashc`).
    #[arg(long, conflicts_with = "battery")]
    pub probe: Option<PathBuf>,
    /// Run the escape battery in the policy's sandbox instead of its
    /// `expect` block: exit 1 when an attempt escapes.
    #[arg(long)]
    pub battery: bool,
    /// The static escape probe for `--battery` (default:
    /// `splash-escape-probe` beside `splashc`).
    #[arg(long, requires = "battery")]
    pub escape_probe: Option<PathBuf>,
    /// Under a strict allowlist that leaves out syscalls the probe needs to
    /// start and make its attempts, test with exactly those added (each is
    /// named in the report; a `syscall denied` expectation of one of them is
    /// unproven) instead of refusing to run.
    #[arg(long, conflicts_with = "battery")]
    pub allow_probe_syscalls: bool,
    #[arg(long, value_enum, default_value = "human")]
    pub format: test::TestFormat,
}

#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The policy to learn from (source, not an artifact).
    pub policy: PathBuf,
    /// Capability manifest JSON; without it a manifest granting every tool
    /// called and activating every registered root is generated. Without
    /// `--invoke`, each granted tool is called with `{}`.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// A tool to call; repeat for several calls, in order.
    #[arg(long)]
    pub invoke: Vec<String>,
    /// JSON input of the `--invoke` it follows (default `{}`).
    #[arg(long)]
    pub input: Vec<String>,
    /// Worker-visible path of a runner that accepts `--learn-fd`, used when
    /// the policy's own runner does not install its filter (default:
    /// `splash-runner` beside the worker).
    #[arg(long, value_name = "PATH")]
    pub runner: Option<String>,
    /// Where to write the proposal (default: standard output, without the
    /// comparison).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Read control lines on standard input and write events on standard
    /// output (the only transport).
    #[arg(long, required = true)]
    pub stdio: bool,
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
    /// With `--check`: print each change as a unified diff instead of the
    /// file's name.
    #[arg(long, requires = "check")]
    pub diff: bool,
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
/// The one-line help of `splashc run`.
const RUN_ABOUT: &str = "Launch a worker under a policy and open an authenticated session.";

/// Whether diagnostics on standard error may use colour: it is a terminal,
/// `NO_COLOR` is unset or empty (<https://no-color.org>), and `TERM` is not
/// `dumb`.
pub fn stderr_color() -> bool {
    use std::io::IsTerminal;
    color_allowed(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

fn color_allowed(
    terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

/// Runs the command line: the process's exit status.
fn run_command_line() -> Exit {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Check(a) => check::run(&a),
        Command::Emit(a) => emit::run(&a),
        Command::Compile(a) => compile::run(&a),
        Command::Run(a) => run::run(&a, matches.subcommand_matches("run")),
        Command::Serve(a) => serve::run(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Learn(a) => learn::run(&a),
        Command::Fmt(a) => fmt::run(&a),
        Command::Test(a) if a.battery => battery::run(&a),
        Command::Test(a) => test::run(&a),
        Command::Lsp => lsp::run(),
        Command::Completions(a) => help::completions(&a),
        Command::Man(a) => help::man(&a),
    }
}

fn main() -> ExitCode {
    ExitCode::from(run_command_line().code())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn colour_needs_a_terminal_and_neither_no_color_nor_a_dumb_terminal() {
        let xterm = Some(OsStr::new("xterm"));
        assert!(color_allowed(true, None, xterm));
        assert!(color_allowed(true, Some(OsStr::new("")), None));
        assert!(!color_allowed(false, None, xterm));
        assert!(!color_allowed(true, Some(OsStr::new("1")), xterm));
        assert!(!color_allowed(true, None, Some(OsStr::new("dumb"))));
    }
}
