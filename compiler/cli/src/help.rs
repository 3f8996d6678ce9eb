//! `splashc completions SHELL` and `splashc man [--out-dir DIR]`: shell
//! completion scripts and manual pages generated from the command-line
//! definition itself, so they never fall behind it.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use crate::exit::Exit;
use crate::{Cli, CompletionsArgs, ManArgs};

/// The command-line definition, named as installed.
pub fn command() -> clap::Command {
    Cli::command()
}

pub fn completions(args: &CompletionsArgs) -> Exit {
    let mut cmd = command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "splashc", &mut out);
    write_stdout(&out)
}

pub fn man(args: &ManArgs) -> Exit {
    let cmd = command();
    match &args.out_dir {
        None => match render(&cmd, "splashc") {
            Ok(page) => write_stdout(&page),
            Err(e) => {
                eprintln!("splashc man: {e}");
                Exit::Usage
            }
        },
        Some(dir) => match write_pages(&cmd, dir) {
            Ok(()) => Exit::Success,
            Err(e) => {
                eprintln!("splashc man: cannot write into `{}`: {e}", dir.display());
                Exit::Usage
            }
        },
    }
}

/// The roff page of `cmd`, the command `name` of [`crate::exit::PAGES`]:
/// clap's sections, then EXIT STATUS and EXAMPLES, then the version.
pub fn render(cmd: &clap::Command, name: &str) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        man.render_extra_section(&mut page)?;
    }
    let extra = crate::exit::page(name)
        .ok_or_else(|| std::io::Error::other(format!("no exit statuses for `{name}`")))?;
    page.extend_from_slice(crate::exit::roff_sections(extra).as_bytes());
    if cmd.get_version().is_some() || cmd.get_long_version().is_some() {
        man.render_version_section(&mut page)?;
    }
    Ok(page)
}

/// `splashc.1` and one `splashc-NAME.1` per subcommand (except `help`).
fn write_pages(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("splashc.1"), render(cmd, "splashc")?)?;
    for sub in cmd.get_subcommands() {
        let name = format!("splashc-{}", sub.get_name());
        let mut page = sub.clone().name(name.clone()).bin_name(name.clone());
        if let Some(version) = cmd.get_version() {
            page = page.version(version.to_string());
        }
        std::fs::write(
            dir.join(format!("{name}.1")),
            render(&page, sub.get_name())?,
        )?;
    }
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("splashc: cannot write standard output: {e}");
            Exit::Usage
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subcommands() -> Vec<String> {
        let names: Vec<String> = command()
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        assert!(names.len() >= 7, "{names:?}");
        names
    }

    #[test]
    fn completions_mention_every_subcommand_and_its_long_options() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut cmd = command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "splashc", &mut out);
            let script = String::from_utf8(out).expect("utf-8");
            for name in subcommands() {
                assert!(script.contains(&name), "{shell}: no `{name}`");
            }
            for sub in command().get_subcommands() {
                for arg in sub.get_arguments() {
                    if let Some(long) = arg.get_long() {
                        assert!(
                            script.contains(long),
                            "{shell}: no `--{long}` of `{}`",
                            sub.get_name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn man_pages_mention_every_subcommand_and_each_gets_a_page() {
        let page =
            String::from_utf8(render(&command(), "splashc").expect("render")).expect("utf-8");
        assert!(page.contains(".TH splashc 1"), "{page}");
        assert!(page.contains(".SH \"EXIT STATUS\"") && page.contains(".SH EXAMPLES"));
        for name in subcommands() {
            assert!(
                page.contains(&format!("splashc\\-{name}(1)")),
                "no `{name}` in:\n{page}"
            );
        }
        let dir_guard = tempfile::Builder::new()
            .prefix("splashc-man-test-")
            .tempdir()
            .expect("create a temporary directory");
        let dir = dir_guard.path();
        write_pages(&command(), dir).expect("pages");
        for sub in command().get_subcommands() {
            let name = sub.get_name();
            let text = std::fs::read_to_string(dir.join(format!("splashc-{name}.1")))
                .unwrap_or_else(|e| panic!("page of `{name}`: {e}"));
            assert!(
                text.contains(&format!(
                    ".TH splashc-{name} 1  \"splashc-{name} {}\"",
                    env!("CARGO_PKG_VERSION")
                )),
                "{text}"
            );
            for arg in sub.get_arguments() {
                if let Some(long) = arg.get_long() {
                    let roff = long.replace('-', "\\-");
                    assert!(text.contains(&roff), "`--{long}` missing from:\n{text}");
                }
            }
            for code in crate::exit::page(name).expect("page").statuses {
                assert!(
                    text.contains(&format!(".TP\n\\fB{}\\fR\n", code.code.code())),
                    "status {} of `{name}` missing",
                    code.code.code()
                );
            }
            assert!(text.contains(".SH EXAMPLES"), "{text}");
        }
    }

    /// Every option a page lists works: each command accepts `-h`, `-V` and
    /// each of its long options as its page shows them (a value where one
    /// is needed), and none of them is an unknown argument.
    #[test]
    fn every_option_a_page_lists_is_accepted() {
        for sub in command().get_subcommands() {
            let name = sub.get_name().to_string();
            for flag in ["-h", "--help", "-V", "--version"] {
                let err = command()
                    .try_get_matches_from(["splashc", name.as_str(), flag])
                    .expect_err("help and version end parsing");
                assert!(
                    matches!(
                        err.kind(),
                        clap::error::ErrorKind::DisplayHelp
                            | clap::error::ErrorKind::DisplayVersion
                    ),
                    "`splashc {name} {flag}`: {err}"
                );
            }
            for arg in sub.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if matches!(long, "help" | "version") {
                    continue;
                }
                let mut line = vec!["splashc".to_string(), name.clone(), format!("--{long}")];
                if arg.get_action().takes_values() {
                    let value = arg
                        .get_possible_values()
                        .first()
                        .map_or_else(|| "x".to_string(), |v| v.get_name().to_string());
                    line.push(value);
                }
                if let Err(err) = command().try_get_matches_from(&line) {
                    assert_ne!(
                        err.kind(),
                        clap::error::ErrorKind::UnknownArgument,
                        "{line:?}: {err}"
                    );
                }
            }
        }
    }
}
