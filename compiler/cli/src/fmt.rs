//! `splashc fmt [--check] FILE...`: canonical layout of `.splashpol` files
//! (`splashpol::format`), comments kept.
//!
//! Without `--check` each file that is not already formatted is replaced
//! atomically (a temporary file beside it, with the original's mode and
//! owner, renamed over it; a symbolic link keeps pointing at the formatted
//! file). `-` reads standard input and writes the result to standard output.
//! With `--check` nothing is written: the files that would change are listed
//! on stdout, or with `--diff` each change is printed as a unified diff.
//!
//! Exit status: 0 all files are formatted (or were formatted now), 1 a file
//! would change (`--check`) or does not parse (its syntax diagnostics on
//! stderr, the file untouched), 2 a file cannot be read or written.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use splash_runtime::launch::{MAX_POLICY_BYTES, read_bounded, read_regular_file};
use splashpol::format::{FormatError, format_source};
use splashpol::{CheckOutcome, RenderOptions};

use crate::FmtArgs;
use crate::exit::Exit;

pub fn run(args: &FmtArgs) -> Exit {
    let mut worst = Exit::Success;
    for path in &args.files {
        let code = one(path, args.check, args.diff);
        worst = worst.max(code);
    }
    worst
}

fn one(path: &Path, check: bool, diff: bool) -> Exit {
    let stdin = path == Path::new("-");
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let source = match read(path, stdin) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("splashc fmt: cannot read `{name}`: {e}");
            return Exit::Usage;
        }
    };
    let formatted = match format_source(&source) {
        Ok(f) => f,
        Err(FormatError::Syntax(diagnostics)) => {
            let outcome = CheckOutcome {
                policy: None,
                diagnostics,
            };
            let options = RenderOptions {
                color: crate::stderr_color(),
                ..RenderOptions::default()
            };
            let text = outcome.render_human_with(&name, &source, options);
            let _ = std::io::stderr().write_all(text.as_bytes());
            eprintln!("splashc fmt: `{name}` does not parse; not formatted");
            return Exit::Rejected;
        }
        Err(e) => {
            eprintln!("splashc fmt: `{name}`: {e}; not formatted");
            return Exit::Rejected;
        }
    };
    if check {
        if formatted == source {
            return Exit::Success;
        }
        let shown = if diff {
            unified_diff(&name, &source, &formatted)
        } else {
            format!("{name}\n")
        };
        let _ = std::io::stdout().lock().write_all(shown.as_bytes());
        return Exit::Rejected;
    }
    if stdin {
        let mut out = std::io::stdout().lock();
        return match out
            .write_all(formatted.as_bytes())
            .and_then(|()| out.flush())
        {
            Ok(()) => Exit::Success,
            Err(e) => {
                eprintln!("splashc fmt: cannot write standard output: {e}");
                Exit::Usage
            }
        };
    }
    if formatted == source {
        return Exit::Success;
    }
    match replace(path, formatted.as_bytes()) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("splashc fmt: cannot write `{name}`: {e}");
            Exit::Usage
        }
    }
}

/// The change from `source` to `formatted` as a unified diff with three
/// lines of context, headed `--- NAME` and `+++ NAME (formatted)`.
fn unified_diff(name: &str, source: &str, formatted: &str) -> String {
    similar::TextDiff::from_lines(source, formatted)
        .unified_diff()
        .context_radius(3)
        .header(name, &format!("{name} (formatted)"))
        .to_string()
}

/// The file, or standard input, as text: at most [`MAX_POLICY_BYTES`]; a
/// path must name a regular file.
fn read(path: &Path, stdin: bool) -> Result<String, String> {
    let bytes = if stdin {
        read_bounded(std::io::stdin().lock(), MAX_POLICY_BYTES)
    } else {
        read_regular_file(path, MAX_POLICY_BYTES)
    }
    .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| format!("not valid UTF-8: {e}"))
}

/// Replaces the file `path` refers to with `bytes`: write a temporary file in
/// the same directory with the original's mode and owner, sync it, rename it
/// over the original. The temporary file is removed on any failure.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let meta = std::fs::metadata(&target)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let dir = target
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = temp_path(dir, &file_name);
    let result = write_temp(&temp, bytes, &meta).and_then(|()| std::fs::rename(&temp, &target));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn temp_path(dir: &Path, file_name: &str) -> PathBuf {
    dir.join(format!(".{file_name}.splashc-fmt.{}", std::process::id()))
}

fn write_temp(temp: &Path, bytes: &[u8], meta: &std::fs::Metadata) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temp)?;
    file.write_all(bytes)?;
    let current = file.metadata()?;
    if (current.uid(), current.gid()) != (meta.uid(), meta.gid()) {
        std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid())).map_err(|e| {
            std::io::Error::other(format!(
                "cannot give the formatted file the original's owner {}:{}: {e}",
                meta.uid(),
                meta.gid()
            ))
        })?;
    }
    file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    file.sync_all()
}
