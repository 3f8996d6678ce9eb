//! `expect { ... }` entries against the built policy: each becomes an
//! [`Expectation`], or an error when the policy can never meet it.
//!
//! Only what the policy's text decides is judged here; whether this host
//! enforces it is `splashc test`'s to find out.

use std::collections::BTreeMap;

use super::Checker;
use crate::ast::{self, ExecVerdict, ExpectEntry, Parsed, Quantity, Statement};
use crate::diag::{Code, Diagnostic};
use crate::expect::{Cover, ExpectKind, Expectation, cover};
use crate::model::{self, SandboxPath, SeccompPolicy};
use crate::span::{Node, Span};
use crate::units::{self, Dimension};

/// The expectations of `file` against its checked `policy`, and every
/// diagnostic about them.
pub(crate) fn expectations(
    file: &ast::File,
    policy: &model::Policy,
) -> (Vec<Expectation>, Vec<Diagnostic>) {
    let mut c = Checker::default();
    let mut out = Vec::new();
    for stmt in &file.policy.statements {
        if let Statement::Expect { entries, parsed } = &stmt.kind {
            c.expect_block(stmt.span, entries, *parsed, policy, &mut out);
        }
    }
    (out, c.diags)
}

fn quoted(p: &str) -> String {
    format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Checker {
    fn expect_block(
        &mut self,
        span: Span,
        entries: &[Node<ExpectEntry>],
        parsed: Parsed,
        policy: &model::Policy,
        out: &mut Vec<Expectation>,
    ) {
        if entries.is_empty() && parsed == Parsed::Clean {
            self.push(
                Diagnostic::error(Code::EmptyList, span, "the `expect` block is empty")
                    .with_label("expects nothing")
                    .with_help("add what the sandbox must hold, e.g. `hidden \"/etc\"`, or remove the block"),
            );
        }
        let mut first: BTreeMap<String, Span> = BTreeMap::new();
        for e in entries {
            for x in self.expect_entry(e, policy) {
                if let Some(&f) = first.get(&x.text) {
                    self.duplicate(Code::DuplicateEntry, x.span, f, &format!("`{}`", x.text));
                    continue;
                }
                first.insert(x.text.clone(), x.span);
                out.push(x);
            }
        }
    }

    /// Reports an expectation the policy can never meet; it is left out.
    fn impossible<T>(&mut self, span: Span, message: String, label: &str, help: &str) -> Option<T> {
        self.push(
            Diagnostic::error(Code::ImpossibleExpectation, span, message)
                .with_label(label.to_string())
                .with_help(help.to_string()),
        );
        None
    }

    fn expect_path(&mut self, p: &Node<String>) -> Option<SandboxPath> {
        self.path(p, "expected path")
    }

    /// The expectations of one entry (a `syscall denied` entry gives one per
    /// name); invalid or impossible ones are reported and left out.
    fn expect_entry(&mut self, e: &Node<ExpectEntry>, policy: &model::Policy) -> Vec<Expectation> {
        let one = match &e.node {
            ExpectEntry::ReadOnly { path } => self.expect_read_only(path, policy),
            ExpectEntry::Writable { path, max } => self.expect_writable(path, max, policy),
            ExpectEntry::Hidden { path } => self.expect_hidden(path, policy),
            ExpectEntry::Exec { verdict, path } => self.expect_exec(verdict, path, policy),
            ExpectEntry::SyscallDenied { names } => {
                return names
                    .iter()
                    .filter_map(|n| self.syscall_expectation(n, policy))
                    .collect();
            }
            ExpectEntry::NetworkNone => self.expect_network_none(e.span, policy),
            ExpectEntry::ProcessesMax { max } => self.expect_processes_max(max, policy),
            ExpectEntry::UserNamespacesNone => self.expect_user_namespaces_none(e.span, policy),
        };
        one.map(|(kind, text)| Expectation {
            kind,
            span: e.span,
            text,
        })
        .into_iter()
        .collect()
    }

    /// `read-only PATH`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_read_only(
        &mut self,
        path: &Node<String>,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        let p = self.expect_path(path)?;
        match cover(policy, &p) {
            Cover::ReadOnly(_) | Cover::Skeleton => {}
            Cover::Writable(dest, _) => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is writable in this sandbox: it lies in the writable mount at `{dest}`"),
                    "never read-only",
                    "expect `writable` here, or mount the path read-only",
                );
            }
            Cover::Nothing => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is not visible in this sandbox: no mount covers it"),
                    "nothing is mounted here",
                    "expect `hidden` here, or add a `runtime` mount or a read-only root for it",
                );
            }
        }
        Some((
            ExpectKind::ReadOnly(p.clone()),
            format!("read-only {}", quoted(p.as_str())),
        ))
    }

    /// `writable PATH [max SIZE]`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_writable(
        &mut self,
        path: &Node<String>,
        max: &Option<Node<Quantity>>,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        let p = self.expect_path(path);
        let m = max
            .as_ref()
            .map(|q| self.nonzero(q, Dimension::Bytes, "the `writable` bound"));
        let p = p?;
        let max_bytes = match m {
            Some(None) => return None,
            Some(Some(v)) => Some(v),
            None => None,
        };
        let bound = match cover(policy, &p) {
            Cover::Writable(_, bound) => bound,
            Cover::ReadOnly(dest) => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is read-only in this sandbox: it lies in the read-only mount at `{dest}`"),
                    "never writable",
                    "expect `read-only` here, or give the worker a tmpfs root or a read-write root there",
                );
            }
            Cover::Skeleton | Cover::Nothing => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is not on a writable mount: the sandbox's root is read-only"),
                    "never writable",
                    "expect a path inside a tmpfs root, a read-write root or a private `/tmp`",
                );
            }
        };
        let file_size = policy.runners().limits().and_then(|l| l.file_size_bytes);
        let bound = match (bound, file_size) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let (Some(want), Some(q)) = (max_bytes, max) {
            match bound {
                None => {
                    return self.impossible(
                        q.span,
                        format!("nothing in this policy bounds writes to `{p}`"),
                        "no bound to stop at",
                        "bound the mount (a tmpfs `size`, a project `quota`, `file-size` in `limits`), or drop `max`",
                    );
                }
                Some(b) if b > want => {
                    return self.impossible(
                        q.span,
                        format!(
                            "writes to `{p}` may reach {}, more than the expected {}",
                            units::format_bytes(b),
                            units::format_bytes(want)
                        ),
                        "the policy's bound is larger",
                        "lower the mount's bound, or expect the bound the policy sets",
                    );
                }
                Some(_) => {}
            }
        }
        let text = match max_bytes {
            Some(b) => format!(
                "writable {} max {}",
                quoted(p.as_str()),
                units::format_bytes(b)
            ),
            None => format!("writable {}", quoted(p.as_str())),
        };
        Some((ExpectKind::Writable { path: p, max_bytes }, text))
    }

    /// `hidden PATH`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_hidden(
        &mut self,
        path: &Node<String>,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        let p = self.expect_path(path)?;
        match cover(policy, &p) {
            Cover::Nothing => {}
            Cover::ReadOnly(dest) | Cover::Writable(dest, _) => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is visible in this sandbox: the mount at `{dest}` covers it"),
                    "never hidden",
                    "remove the mount that shows it, or expect something else of it",
                );
            }
            Cover::Skeleton => {
                return self.impossible(
                    path.span,
                    format!("`{p}` is visible in this sandbox: mounts lie below it, so it is a directory"),
                    "never hidden",
                    "expect `read-only` here, or expect a path no mount lies below",
                );
            }
        }
        Some((
            ExpectKind::Hidden(p.clone()),
            format!("hidden {}", quoted(p.as_str())),
        ))
    }

    /// `exec denied|allowed PATH`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_exec(
        &mut self,
        verdict: &Node<ExecVerdict>,
        path: &Node<String>,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        let p = self.expect_path(path)?;
        let allow = policy.runners().landlock_allow();
        let listed = allow.is_some_and(|a| a.contains(&p));
        match verdict.node {
            ExecVerdict::Allowed => {
                if let Some(a) = allow
                    && !a.contains(&p)
                {
                    return self.impossible(
                        path.span,
                        format!("`{p}` is outside the Landlock executable allowlist"),
                        "Landlock denies this exec",
                        "add `allow-exec` for it to the `landlock` block, or expect `exec denied`",
                    );
                }
                if !matches!(cover(policy, &p), Cover::ReadOnly(_) | Cover::Writable(..)) {
                    return self.impossible(
                        path.span,
                        format!("`{p}` is not visible in this sandbox: no mount covers it"),
                        "nothing to execute here",
                        "mount the program with a `runtime` mount",
                    );
                }
                Some((
                    ExpectKind::ExecAllowed(p.clone()),
                    format!("exec allowed {}", quoted(p.as_str())),
                ))
            }
            ExecVerdict::Denied => {
                if allow.is_none() {
                    return self.impossible(
                        path.span,
                        "this policy has no `landlock` block: nothing denies an exec".to_string(),
                        "no executable allowlist",
                        "add a `landlock` block, or expect `hidden` for a program that is not mounted",
                    );
                }
                if listed || &p == policy.worker() {
                    return self.impossible(
                        path.span,
                        format!("`{p}` is allowed by the Landlock executable allowlist"),
                        "Landlock allows this exec",
                        "remove its `allow-exec`, or expect `exec allowed`",
                    );
                }
                Some((
                    ExpectKind::ExecDenied(p.clone()),
                    format!("exec denied {}", quoted(p.as_str())),
                ))
            }
        }
    }

    /// `network none`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_network_none(
        &mut self,
        span: Span,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        if policy.network_broker().is_some() {
            return self.impossible(
                span,
                "this policy serves a network broker: the worker reaches network origins through it".to_string(),
                "the broker is a way out",
                "remove `network none`, or remove the `network-broker` statement",
            );
        }
        Some((ExpectKind::NetworkNone, "network none".to_string()))
    }

    /// `processes max COUNT`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_processes_max(
        &mut self,
        max: &Node<Quantity>,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        let want = self.nonzero(max, Dimension::Count, "the `processes` bound")?;
        let rlimit = policy.runners().limits().and_then(|l| l.process_count);
        let pids = policy.cgroup().and_then(|c| c.limits.pids_max);
        let bound = match (rlimit, pids) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match bound {
            None => {
                return self.impossible(
                    max.span,
                    "nothing in this policy bounds the number of processes".to_string(),
                    "no process bound",
                    "set `processes` in `limits` or `pids` in `cgroup`",
                );
            }
            Some(b) if b > want => {
                return self.impossible(
                    max.span,
                    format!(
                        "this policy allows up to {b} processes, more than the expected {want}"
                    ),
                    "the policy's bound is larger",
                    "lower the policy's bound, or expect the bound it sets",
                );
            }
            Some(_) => {}
        }
        Some((
            ExpectKind::ProcessesMax(want),
            format!("processes max {want}"),
        ))
    }

    /// `user-namespaces none`: what it expects and its text, or `None` when it
    /// is invalid or impossible (reported).
    fn expect_user_namespaces_none(
        &mut self,
        span: Span,
        policy: &model::Policy,
    ) -> Option<(ExpectKind, String)> {
        if !policy.no_further_user_namespaces() {
            return self.impossible(
                span,
                "this policy does not forbid further user namespaces".to_string(),
                "user namespaces are allowed",
                "add the statement `user-namespaces none`",
            );
        }
        Some((
            ExpectKind::UserNamespacesNone,
            "user-namespaces none".to_string(),
        ))
    }

    fn syscall_expectation(
        &mut self,
        n: &Node<String>,
        policy: &model::Policy,
    ) -> Option<Expectation> {
        let name = n.node.as_str();
        let syscall = self.syscall_name(name, n.span)?;
        let fixed = splash_seccomp::denied_syscall(name).is_some() || name == "clone3";
        // A listed reviewed addition lifts its guard; nothing else can be listed.
        let problem = match policy.seccomp() {
            SeccompPolicy::Off => Some((
                "this policy has no seccomp profile: nothing denies a syscall".to_string(),
                "add `seccomp deny-known-escape-surface` or a strict allowlist",
            )),
            SeccompPolicy::DenyKnownEscapeSurface if !fixed => Some((
                format!("`deny-known-escape-surface` allows `{name}`"),
                "use a strict allowlist that leaves it out, or drop this expectation",
            )),
            SeccompPolicy::StrictAllowlist { syscalls } if syscalls.contains(&syscall) => Some((
                format!("the strict allowlist lists `{name}`"),
                "remove it from the allowlist, or drop this expectation",
            )),
            _ => None,
        };
        if let Some((message, help)) = problem {
            return self.impossible(n.span, message, "the filter allows this syscall", help);
        }
        Some(Expectation {
            kind: ExpectKind::SyscallDenied(name.to_string()),
            span: n.span,
            text: format!("syscall denied {name}"),
        })
    }
}
