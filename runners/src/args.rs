//! Command-line parsing shared by the three runners.
//!
//! One parser serves every runner; [`RunnerKind`] decides which flag
//! families it accepts. Every flag comes before a mandatory `--`; what follows
//! is the program path and its arguments, passed through verbatim.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::Failure;
use crate::limits::Limit;

/// The most `--allow` paths a runner accepts: 32 explicit targets from the
/// policy plus the fixed worker and the limit runner, which the compiler
/// adds automatically.
pub const MAX_ALLOWED: usize = 34;

/// Longest accepted path, in bytes (`PATH_MAX` including the terminator).
const MAX_PATH_BYTES: usize = 4095;

/// Which runner is parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerKind {
    /// `splash-limit-runner`: rlimit flags only.
    Limit,
    /// `splash-landlock-runner`: `--allow` (required) and `--seccomp-fd`.
    Landlock,
    /// `splash-runner`: every flag; at least one layer selected.
    Combined,
}

impl RunnerKind {
    /// The binary name used in diagnostics.
    pub fn binary_name(self) -> &'static str {
        match self {
            RunnerKind::Limit => "splash-limit-runner",
            RunnerKind::Landlock => "splash-landlock-runner",
            RunnerKind::Combined => "splash-runner",
        }
    }

    fn accepts_limits(self) -> bool {
        matches!(self, RunnerKind::Limit | RunnerKind::Combined)
    }

    fn accepts_landlock(self) -> bool {
        matches!(self, RunnerKind::Landlock | RunnerKind::Combined)
    }
}

/// A validated `--allow` path: absolute, normalized, at most `PATH_MAX`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AllowedPath(CString);

impl AllowedPath {
    fn parse(raw: &OsStr) -> Result<Self, String> {
        let shown = raw.display();
        let bytes = raw.as_bytes();
        check_absolute_normalized(bytes)
            .map_err(|why| format!("`--allow` path `{shown}` {why}"))?;
        CString::new(bytes)
            .map(AllowedPath)
            .map_err(|_| format!("`--allow` path `{shown}` contains a NUL byte"))
    }

    /// The path as a C string.
    pub fn as_c_str(&self) -> &std::ffi::CStr {
        &self.0
    }

    /// The path as an `OsStr`.
    pub fn as_os_str(&self) -> &OsStr {
        OsStr::from_bytes(self.0.as_bytes())
    }

    /// The path for diagnostics.
    pub fn display(&self) -> std::borrow::Cow<'_, str> {
        self.0.to_string_lossy()
    }
}

/// Checks that `bytes` is an absolute path without empty, `.` or `..`
/// components (so no `//` and no trailing `/`), and not `/` itself.
fn check_absolute_normalized(bytes: &[u8]) -> Result<(), &'static str> {
    let Some(rest) = bytes.strip_prefix(b"/") else {
        return Err("is not absolute");
    };
    if rest.is_empty() {
        return Err("names the root directory");
    }
    if bytes.len() > MAX_PATH_BYTES {
        return Err("is longer than `PATH_MAX`");
    }
    for component in rest.split(|&b| b == b'/') {
        match component {
            b"" => return Err("has an empty component"),
            b"." | b".." => return Err("has a `.` or `..` component"),
            _ => {}
        }
    }
    Ok(())
}

/// A parsed invocation.
#[derive(Debug)]
pub struct Invocation {
    /// Selected limits, in a fixed order.
    pub limits: BTreeMap<Limit, u64>,
    /// Allowed executables, in command-line order.
    pub allowed: Vec<AllowedPath>,
    /// The descriptor holding the strict seccomp program.
    pub seccomp_fd: Option<RawFd>,
    /// The socket a learning run's listener is handed to the host on
    /// ([`crate::learn`]); never together with `seccomp_fd`.
    pub learn_fd: Option<RawFd>,
    /// The program to execute (absolute).
    pub program: CString,
    /// The complete argument vector for the program, `argv[0]` included.
    pub argv: Vec<CString>,
}

fn usage(message: String) -> Failure {
    Failure::usage(message)
}

/// Parses the arguments that follow the binary name.
pub fn parse(
    kind: RunnerKind,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Invocation, Failure> {
    let mut args = args.into_iter();
    let mut limits = BTreeMap::new();
    let mut allowed: Vec<AllowedPath> = Vec::new();
    let mut seccomp_fd = None;
    let mut learn_fd = None;
    let mut saw_separator = false;

    while let Some(arg) = args.next() {
        if arg == "--" {
            saw_separator = true;
            break;
        }
        let flag = arg
            .to_str()
            .map(str::to_owned)
            .unwrap_or_else(|| arg.display().to_string());
        if let Some(limit) = Limit::from_flag(&flag).filter(|_| kind.accepts_limits()) {
            let value = flag_value(&mut args, &flag)?;
            let value = parse_limit(&flag, &value)?;
            if limits.insert(limit, value).is_some() {
                return Err(usage(format!("`{flag}` is given more than once")));
            }
        } else if flag == "--allow" && kind.accepts_landlock() {
            let value = flag_value(&mut args, &flag)?;
            let path = AllowedPath::parse(&value).map_err(usage)?;
            if allowed.contains(&path) {
                return Err(usage(format!(
                    "`--allow` path `{}` is given more than once",
                    path.display()
                )));
            }
            if allowed.len() == MAX_ALLOWED {
                return Err(usage(format!("more than {MAX_ALLOWED} `--allow` paths")));
            }
            allowed.push(path);
        } else if flag == "--seccomp-fd" && kind.accepts_landlock() {
            let value = flag_value(&mut args, &flag)?;
            if seccomp_fd.is_some() {
                return Err(usage(format!("`{flag}` is given more than once")));
            }
            seccomp_fd = Some(parse_fd(&value)?);
        } else if flag == "--learn-fd" && kind.accepts_landlock() {
            let value = flag_value(&mut args, &flag)?;
            if learn_fd.is_some() {
                return Err(usage(format!("`{flag}` is given more than once")));
            }
            learn_fd = Some(parse_fd_of("--learn-fd", &value)?);
        } else if flag.starts_with('-') {
            return Err(usage(format!("unknown flag `{flag}`")));
        } else {
            return Err(usage(format!("unexpected argument `{flag}` before `--`")));
        }
    }

    if !saw_separator {
        return Err(usage("missing `--` before the program".to_owned()));
    }
    let Some(program) = args.next() else {
        return Err(usage("missing program after `--`".to_owned()));
    };
    if !program.as_bytes().starts_with(b"/") {
        return Err(usage(format!(
            "program `{}` is not an absolute path",
            program.display()
        )));
    }

    if seccomp_fd.is_some() && learn_fd.is_some() {
        return Err(usage(
            "`--seccomp-fd` and `--learn-fd` exclude each other".to_owned(),
        ));
    }
    match kind {
        RunnerKind::Limit if limits.is_empty() => {
            return Err(usage("no limit selected".to_owned()));
        }
        RunnerKind::Landlock if allowed.is_empty() => {
            return Err(usage("no `--allow` path given".to_owned()));
        }
        RunnerKind::Combined
            if limits.is_empty()
                && allowed.is_empty()
                && seccomp_fd.is_none()
                && learn_fd.is_none() =>
        {
            return Err(usage(
                "nothing selected: give a limit, `--allow` or `--seccomp-fd`".to_owned(),
            ));
        }
        _ => {}
    }
    if !allowed.is_empty()
        && !allowed
            .iter()
            .any(|a| a.as_c_str().to_bytes() == program.as_bytes())
    {
        return Err(usage(format!(
            "program `{}` is not one of the `--allow` paths",
            program.display()
        )));
    }

    let mut argv = Vec::new();
    for arg in std::iter::once(program).chain(args) {
        let shown = arg.display().to_string();
        argv.push(
            CString::new(arg.into_vec())
                .map_err(|_| usage(format!("argument `{shown}` contains a NUL byte")))?,
        );
    }
    let program = argv[0].clone();
    Ok(Invocation {
        limits,
        allowed,
        seccomp_fd,
        learn_fd,
        program,
        argv,
    })
}

pub(crate) fn flag_value(
    args: &mut impl Iterator<Item = OsString>,
    flag: &str,
) -> Result<OsString, Failure> {
    match args.next() {
        Some(v) if v != "--" => Ok(v),
        _ => Err(usage(format!("`{flag}` needs a value"))),
    }
}

/// Parses a canonical unsigned decimal: digits only, no sign, no leading
/// zero, no whitespace.
pub(crate) fn parse_decimal(flag: &str, raw: &OsStr) -> Result<u64, Failure> {
    let text = raw.to_str().unwrap_or("");
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if !canonical {
        return Err(usage(format!(
            "`{flag}` value `{}` is not a decimal number",
            raw.display()
        )));
    }
    text.parse::<u64>()
        .map_err(|_| usage(format!("`{flag}` value `{text}` is too large")))
}

fn parse_limit(flag: &str, raw: &OsStr) -> Result<u64, Failure> {
    let value = parse_decimal(flag, raw)?;
    if value == 0 {
        return Err(usage(format!("`{flag}` must not be zero")));
    }
    if value == libc::RLIM_INFINITY {
        return Err(usage(format!("`{flag}` value `{value}` is unbounded")));
    }
    Ok(value)
}

fn parse_fd(raw: &OsStr) -> Result<RawFd, Failure> {
    parse_fd_of("--seccomp-fd", raw)
}

fn parse_fd_of(flag: &str, raw: &OsStr) -> Result<RawFd, Failure> {
    let value = parse_decimal(flag, raw)?;
    if value < 3 {
        return Err(usage(format!(
            "`{flag}` value `{value}` is a standard stream"
        )));
    }
    RawFd::try_from(value).map_err(|_| usage(format!("`{flag}` value `{value}` is too large")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: RunnerKind, args: &[&str]) -> Result<Invocation, Failure> {
        parse(kind, args.iter().map(OsString::from))
    }

    #[test]
    fn limit_runner_accepts_every_limit() {
        let inv = run(
            RunnerKind::Limit,
            &[
                "--cpu-seconds",
                "5",
                "--address-space-bytes",
                "1048576",
                "--process-count",
                "3",
                "--open-files",
                "64",
                "--file-size-bytes",
                "10",
                "--",
                "/bin/cat",
                "-",
                "x",
            ],
        )
        .expect("valid");
        assert_eq!(inv.limits.len(), 5);
        assert_eq!(inv.argv.len(), 3);
        assert_eq!(inv.program.as_bytes(), b"/bin/cat");
    }

    #[test]
    fn learn_fd_alone_selects_the_combined_runner_and_excludes_seccomp_fd() {
        let inv = run(
            RunnerKind::Combined,
            &["--learn-fd", "5", "--", "/bin/true"],
        )
        .expect("valid");
        assert_eq!(inv.learn_fd, Some(5));
        assert_eq!(inv.seccomp_fd, None);
        let both = run(
            RunnerKind::Combined,
            &["--seccomp-fd", "4", "--learn-fd", "5", "--", "/bin/true"],
        );
        assert!(both.is_err_and(|f| f.code == crate::exit::USAGE && f.message.contains("exclude")));
        let twice = run(
            RunnerKind::Combined,
            &["--learn-fd", "5", "--learn-fd", "6", "--", "/bin/true"],
        );
        assert!(twice.is_err_and(|f| f.message.contains("more than once")));
        let stdio = run(
            RunnerKind::Combined,
            &["--learn-fd", "2", "--", "/bin/true"],
        );
        assert!(stdio.is_err_and(|f| {
            f.message
                .contains("`--learn-fd` value `2` is a standard stream")
        }));
        let limit = run(
            RunnerKind::Limit,
            &["--cpu-seconds", "1", "--learn-fd", "5", "--", "/bin/true"],
        );
        assert!(limit.is_err_and(|f| f.message.contains("unknown flag `--learn-fd`")));
    }

    #[test]
    fn normalized_paths() {
        for bad in ["", "/", "rel/x", "/a//b", "/a/", "/a/./b", "/a/../b", "/."] {
            assert!(check_absolute_normalized(bad.as_bytes()).is_err(), "{bad}");
        }
        for good in ["/a", "/usr/bin/true", "/a/.hidden", "/a/..b"] {
            assert!(check_absolute_normalized(good.as_bytes()).is_ok(), "{good}");
        }
    }

    #[test]
    fn decimals_are_canonical() {
        for bad in [
            "",
            "+1",
            "-1",
            " 1",
            "1 ",
            "01",
            "0x10",
            "1e3",
            "18446744073709551616",
        ] {
            assert!(parse_decimal("--x", OsStr::new(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            parse_decimal("--x", OsStr::new("18446744073709551615")).ok(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn allow_limit_is_enforced() {
        let mut args = Vec::new();
        for i in 0..=MAX_ALLOWED {
            args.push("--allow".to_owned());
            args.push(format!("/p{i}"));
        }
        args.push("--".to_owned());
        args.push("/p0".to_owned());
        let strs: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = run(RunnerKind::Landlock, &strs).expect_err("35 paths");
        assert!(err.message.contains("more than 34"), "{}", err.message);
        let strs: Vec<&str> = strs[2..].to_vec();
        let inv = run(RunnerKind::Landlock, &strs);
        assert!(inv.is_err(), "program not listed after dropping /p0");
    }
}
