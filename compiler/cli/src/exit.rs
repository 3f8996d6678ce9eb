//! The exit statuses and examples of every command, in one table: the
//! manual pages render their EXIT STATUS and EXAMPLES sections from it, and
//! a test holds the table in `docs/cli.md` to it. A usage error (an unknown
//! option, a missing argument) is status 2 for every command, as clap
//! reports it.

/// How a command ends: the process's exit status. Each command's page in
/// [`PAGES`] says what each status means for it; the variants name what
/// they mean for most commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// 0: the command did what was asked.
    Success,
    /// 1: what was given is refused or falls short: a policy or manifest
    /// error, a widening (`diff`), a failed expectation (`test`), a check
    /// that fails (`doctor`).
    Rejected,
    /// 2: a usage error or a file that cannot be read or written (for
    /// `test`, also a test that cannot run or prove an expectation here).
    Usage,
    /// 3: a bind, launch, session or teardown failure (for `diff`, a
    /// policy that has errors or cannot be lowered).
    Failed,
}

impl Exit {
    /// The status as the process reports it.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Rejected => 1,
            Exit::Usage => 2,
            Exit::Failed => 3,
        }
    }
}

/// One exit status of a command.
#[derive(Debug, Clone, Copy)]
pub struct Status {
    /// The status.
    pub code: Exit,
    /// When the command exits with it.
    pub meaning: &'static str,
}

/// One example command line and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// The command line, as typed.
    pub line: &'static str,
    /// What it does.
    pub does: &'static str,
}

/// What the manual page of one command says beyond its options.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// The subcommand's name; `splashc` for the top-level page.
    pub command: &'static str,
    /// Its exit statuses, in increasing order.
    pub statuses: &'static [Status],
    /// Example command lines.
    pub examples: &'static [Example],
}

const fn s(code: Exit, meaning: &'static str) -> Status {
    Status { code, meaning }
}

const fn e(line: &'static str, does: &'static str) -> Example {
    Example { line, does }
}

const USAGE_OR_IO: &str = "a usage error, or a file that cannot be read";

/// Every page: the top-level one first, then one per subcommand.
pub const PAGES: &[Page] = &[
    Page {
        command: "splashc",
        statuses: &[
            s(Exit::Success, "success"),
            s(
                Exit::Rejected,
                "a policy or manifest problem; each command's page says what else",
            ),
            s(Exit::Usage, USAGE_OR_IO),
        ],
        examples: &[
            e(
                "splashc check policies/*.splashpol",
                "check every bundled policy",
            ),
            e(
                "splashc run policies/demo.splashpol",
                "launch the demo worker and call its report",
            ),
        ],
    },
    Page {
        command: "check",
        statuses: &[
            s(
                Exit::Success,
                "no file has an error (warnings allowed, unless `--deny-warnings`)",
            ),
            s(
                Exit::Rejected,
                "a file has an error, or a warning under `--deny-warnings`",
            ),
            s(Exit::Usage, USAGE_OR_IO),
        ],
        examples: &[
            e(
                "splashc check --deny-warnings --quiet policies/*.splashpol",
                "a CI gate: fail on any warning, print only what fails",
            ),
            e(
                "generate-policy | splashc check -",
                "check a policy read from standard input",
            ),
        ],
    },
    Page {
        command: "emit",
        statuses: &[
            s(Exit::Success, "the launch objects were printed"),
            s(
                Exit::Rejected,
                "the policy or manifest has errors, or the policy cannot be lowered",
            ),
            s(
                Exit::Usage,
                "a usage error (an unknown `--arch`), or a file that cannot be read",
            ),
        ],
        examples: &[
            e(
                "splashc emit --argv policies/demo.splashpol",
                "the Bubblewrap argument list, shell-quoted",
            ),
            e(
                "splashc emit --bpf --listing --arch aarch64 policies/demo.splashpol",
                "the seccomp program for aarch64, disassembled",
            ),
        ],
    },
    Page {
        command: "compile",
        statuses: &[
            s(Exit::Success, "the artifact was written"),
            s(
                Exit::Rejected,
                "the policy has errors, or its artifact would exceed the policy size bound",
            ),
            s(
                Exit::Usage,
                "a usage error, or a file that cannot be read or written",
            ),
        ],
        examples: &[e(
            "splashc compile policies/demo.splashpol -o demo.splashc",
            "a compiled artifact a host loads without the front end",
        )],
    },
    Page {
        command: "run",
        statuses: &[
            s(
                Exit::Success,
                "every call succeeded and the worker exited cleanly",
            ),
            s(
                Exit::Rejected,
                "the policy or manifest has errors, or the policy file is not the one `--expect-digest` names",
            ),
            s(
                Exit::Usage,
                "a usage error (a malformed `--invoke`/`--input` pair or `--calls` line), or a file that cannot be read",
            ),
            s(Exit::Failed, "bind, launch, session or tool failure"),
        ],
        examples: &[
            e(
                "splashc run policies/demo.splashpol --invoke probe.echo --input '{\"x\":1}'",
                "launch the demo worker and make one call",
            ),
            e(
                "splashc run policies/demo.splashpol --calls calls.jsonl",
                "make the calls of a file in order, one result line each",
            ),
        ],
    },
    Page {
        command: "serve",
        statuses: &[
            s(
                Exit::Success,
                "standard input ended and every sandbox was stopped and reaped",
            ),
            s(
                Exit::Usage,
                "a usage error, or standard input cannot be read",
            ),
            s(Exit::Failed, "a sandbox could not be torn down"),
        ],
        examples: &[e(
            "python3 examples/stdio_client.py --splashc \"$(command -v splashc)\"",
            "a host in Python driving `splashc serve --stdio`",
        )],
    },
    Page {
        command: "doctor",
        statuses: &[
            s(
                Exit::Success,
                "every control can be enforced on this host (warnings allowed)",
            ),
            s(
                Exit::Rejected,
                "a control cannot be enforced, or the policy, manifest or plan has errors",
            ),
            s(Exit::Usage, USAGE_OR_IO),
        ],
        examples: &[e(
            "splashc doctor policies/agent-worker.splashpol",
            "what this host lacks to enforce the policy, and the fix",
        )],
    },
    Page {
        command: "explain",
        statuses: &[
            s(Exit::Success, "explained"),
            s(
                Exit::Rejected,
                "the policy or manifest has errors, or the policy cannot be lowered",
            ),
            s(
                Exit::Usage,
                "a usage error (an unknown `--arch`), or a file that cannot be read",
            ),
        ],
        examples: &[
            e(
                "splashc explain policies/agent-worker.splashpol",
                "the effective sandbox, and what is not enforced",
            ),
            e(
                "splashc explain --dot policies/demo.splashpol | dot -Tsvg",
                "the mount graph as a picture",
            ),
        ],
    },
    Page {
        command: "diff",
        statuses: &[
            s(
                Exit::Success,
                "nothing widened: identical sandboxes, or only narrowings",
            ),
            s(Exit::Rejected, "at least one widening"),
            s(
                Exit::Usage,
                "a usage error (an unknown `--arch`), or a file that cannot be read",
            ),
            s(Exit::Failed, "a policy has errors or cannot be lowered"),
        ],
        examples: &[e(
            "splashc diff main.splashpol branch.splashpol",
            "a CI gate: exit 1 when the branch widens the sandbox",
        )],
    },
    Page {
        command: "learn",
        statuses: &[
            s(Exit::Success, "the proposal was written"),
            s(
                Exit::Rejected,
                "the policy or manifest has errors, or the proposal does not check",
            ),
            s(
                Exit::Usage,
                "a usage error, or a file that cannot be read or written",
            ),
            s(Exit::Failed, "bind, launch, session or recording failure"),
        ],
        examples: &[e(
            "splashc learn policies/demo.splashpol --invoke probe.echo --input '{\"input\":1}' -o p.splashpol",
            "record one call in the policy's sandbox and propose a strict allowlist",
        )],
    },
    Page {
        command: "fmt",
        statuses: &[
            s(
                Exit::Success,
                "every file is in the canonical layout (or was rewritten to it)",
            ),
            s(
                Exit::Rejected,
                "a file would change (`--check`), or a file does not parse",
            ),
            s(
                Exit::Usage,
                "a usage error, or a file that cannot be read or written",
            ),
        ],
        examples: &[
            e(
                "splashc fmt --check --diff policies/*.splashpol",
                "a CI gate: show each change, exit 1 if any",
            ),
            e(
                "splashc fmt - < in.splashpol > out.splashpol",
                "format a stream",
            ),
        ],
    },
    Page {
        command: "test",
        statuses: &[
            s(
                Exit::Success,
                "every expectation held, each denial against its control (with `--battery`: no attempt escaped)",
            ),
            s(
                Exit::Rejected,
                "an expectation failed (with `--battery`: an attempt escaped), or the policy or manifest has errors",
            ),
            s(
                Exit::Usage,
                "the test could not run or could not prove an expectation on this host (the reason is printed)",
            ),
        ],
        examples: &[
            e(
                "splashc test policies/demo.splashpol",
                "check the demo's `expect` block inside its sandbox",
            ),
            e(
                "splashc test --battery policies/demo.splashpol",
                "run the escape battery inside the demo's sandbox",
            ),
            e(
                "splashc test --format junit policy.splashpol > report.xml",
                "a CI report",
            ),
        ],
    },
    Page {
        command: "lsp",
        statuses: &[
            s(Exit::Success, "the client sent `shutdown`, then `exit`"),
            s(
                Exit::Rejected,
                "the client sent `exit` without `shutdown`, or closed the connection",
            ),
            s(Exit::Usage, "a usage error"),
        ],
        examples: &[e(
            "splashc lsp",
            "serve an editor's language client on standard input and output",
        )],
    },
    Page {
        command: "completions",
        statuses: &[
            s(Exit::Success, "the script was printed"),
            s(
                Exit::Usage,
                "a usage error, or standard output cannot be written",
            ),
        ],
        examples: &[e(
            "splashc completions bash > /etc/bash_completion.d/splashc",
            "install completions for bash",
        )],
    },
    Page {
        command: "man",
        statuses: &[
            s(Exit::Success, "the page (or pages) were written"),
            s(Exit::Usage, "a usage error, or a page cannot be written"),
        ],
        examples: &[e(
            "splashc man --out-dir /usr/local/share/man/man1",
            "install a page per command",
        )],
    },
];

/// The page of `command` (`splashc` for the top level).
pub fn page(command: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.command == command)
}

/// Roff text: backslashes and hyphens escaped, a leading `.` or `'` kept
/// from being read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The EXIT STATUS and EXAMPLES sections of `page`, in roff.
pub fn roff_sections(page: &Page) -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for status in page.statuses {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            status.code.code(),
            roff(status.meaning)
        ));
    }
    if page.command != "splashc" {
        out.push_str(".PP\nA usage error (an unknown option, a missing argument) is status 2.\n");
    }
    out.push_str(".SH EXAMPLES\n");
    for example in page.examples {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff(example.line),
            roff(example.does)
        ));
    }
    out
}

/// The exit statuses of every command as the Markdown table of
/// `docs/cli.md`.
#[cfg(test)]
fn markdown_table() -> String {
    let mut out = String::from("| command | status | meaning |\n|---|---|---|\n");
    for page in PAGES.iter().filter(|p| p.command != "splashc") {
        for status in page.statuses {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                page.command,
                status.code.code(),
                status.meaning.replace('|', "\\|")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn every_command_has_one_page_with_sorted_statuses_and_an_example() {
        let cli = crate::Cli::command();
        let mut names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        names.insert(0, "splashc");
        let pages: Vec<&str> = PAGES.iter().map(|p| p.command).collect();
        assert_eq!(pages, names);
        for page in PAGES {
            assert!(
                page.statuses.windows(2).all(|w| w[0].code < w[1].code),
                "{}",
                page.command
            );
            assert!(
                page.statuses.iter().any(|s| s.code == Exit::Success),
                "{}",
                page.command
            );
            assert!(
                page.statuses.iter().any(|s| s.code == Exit::Usage),
                "{}",
                page.command
            );
            assert!(!page.examples.is_empty(), "{}", page.command);
            for example in page.examples {
                assert!(example.line.contains("splashc"), "{}", example.line);
            }
        }
    }

    /// `docs/cli.md` holds the same table between its markers
    /// (`SPLASH_BLESS=1` rewrites it).
    #[test]
    fn the_documented_exit_statuses_are_the_table() {
        const BEGIN: &str = "<!-- exit statuses: generated from compiler/cli/src/exit.rs -->\n";
        const END: &str = "<!-- end of exit statuses -->\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
        let doc = std::fs::read_to_string(path).expect("docs/cli.md");
        let start = doc.find(BEGIN).expect("the begin marker") + BEGIN.len();
        let end = doc[start..].find(END).expect("the end marker") + start;
        let want = markdown_table();
        if std::env::var_os("SPLASH_BLESS").is_some() {
            let updated = format!("{}{want}{}", &doc[..start], &doc[end..]);
            std::fs::write(path, updated).expect("write docs/cli.md");
            return;
        }
        assert_eq!(
            &doc[start..end],
            want,
            "docs/cli.md differs; SPLASH_BLESS=1 rewrites it"
        );
    }

    #[test]
    fn roff_text_is_escaped() {
        assert_eq!(roff("--deny-warnings"), "\\-\\-deny\\-warnings");
        assert_eq!(roff(".hidden"), "\\&.hidden");
        assert_eq!(roff("a\\b"), "a\\eb");
    }
}
