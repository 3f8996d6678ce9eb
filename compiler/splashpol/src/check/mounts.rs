//! The mount layout: worker-visible destinations must not overlap, and every
//! executable must lie inside a read-only runtime mount.

use super::{Checker, Collected, Placed, path_key, valid};
use crate::diag::{Code, Diagnostic};
use crate::model::{PrivateTmp, SandboxPath};
use crate::span::Span;

impl Checker {
    /// Worker-visible destinations may not overlap each other, `/proc`,
    /// `/dev`, or an enabled private `/tmp`. Sorted with a stack of enclosing
    /// destinations: O(n log n) for n destinations.
    pub(super) fn mount_layout(&mut self, c: &Collected) {
        struct Dest<'a> {
            path: &'a SandboxPath,
            span: Option<Span>,
            what: String,
            order: usize,
        }
        let proc_ = SandboxPath::new("/proc").ok();
        let dev = SandboxPath::new("/dev").ok();
        let tmp = SandboxPath::new("/tmp").ok();
        let mut dests: Vec<Dest<'_>> = Vec::new();
        for (p, what) in [(&proc_, "`/proc`"), (&dev, "`/dev`")] {
            if let Some(p) = p {
                dests.push(Dest {
                    path: p,
                    span: None,
                    what: format!("the sandbox's {what}"),
                    order: 0,
                });
            }
        }
        let mut tmp_span = None;
        if let (Some(t), Some((mode, span))) = (&tmp, &c.tmp)
            && *mode != PrivateTmp::Off
        {
            tmp_span = Some(*span);
            dests.push(Dest {
                path: t,
                span: None,
                what: "the private `/tmp`".to_string(),
                order: 0,
            });
        }
        for (i, (m, span)) in c.runtime.iter().enumerate() {
            dests.push(Dest {
                path: &m.destination,
                span: Some(*span),
                what: format!("runtime mount `{}`", m.destination),
                order: i + 1,
            });
        }
        for r in &c.roots {
            dests.push(Dest {
                path: &r.root.destination,
                span: Some(r.dest_span),
                what: format!("root `{}`", r.root.id),
                order: r.dest_span.start.saturating_add(1),
            });
        }
        if let Some((b, span, _)) = &c.broker {
            dests.push(Dest {
                path: &b.destination,
                span: Some(*span),
                what: "the network broker mount".to_string(),
                order: span.start.saturating_add(1),
            });
        }
        dests.sort_by(|a, b| {
            path_key(a.path)
                .cmp(path_key(b.path))
                .then(a.order.cmp(&b.order))
        });
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..dests.len() {
            while let Some(&top) = stack.last() {
                if dests[i].path.is_within(dests[top].path) {
                    break;
                }
                stack.pop();
            }
            if let Some(&top) = stack.last() {
                let (outer, inner) = (&dests[top], &dests[i]);
                if let Some(span) = inner.span {
                    let relation = if inner.path == outer.path {
                        "is the same path as"
                    } else {
                        "lies inside"
                    };
                    let mut d = Diagnostic::error(
                        Code::OverlappingMount,
                        span,
                        format!("destination `{}` {relation} {}", inner.path, outer.what),
                    )
                    .with_label(format!("{} here", inner.what))
                    .with_help("worker-visible destinations must not overlap; move one of them to a separate directory");
                    match outer.span {
                        Some(s) => d = d.with_related(s, outer.what.clone()),
                        None => {
                            if outer.path.as_str() == "/tmp"
                                && let Some(t) = tmp_span
                            {
                                d = d.with_related(t, "private `/tmp` enabled here");
                            }
                        }
                    }
                    self.push(d);
                }
            }
            stack.push(i);
        }
    }

    /// The worker, the limit, Landlock and combined runners and every Landlock
    /// target must lie inside a read-only runtime mount.
    pub(super) fn executables(&mut self, c: &Collected) {
        let mut execs: Vec<&Placed> = Vec::new();
        execs.extend(c.worker.as_ref());
        if let Some(l) = &c.limits {
            execs.extend(valid(&l.runner));
        }
        if let Some(l) = &c.landlock {
            execs.extend(valid(&l.runner));
            execs.extend(l.allow.iter());
        }
        execs.extend(valid(&c.combined));
        if c.runtime_dests.iter().any(Result::is_err) {
            // The invalid destination is reported; whether it would cover
            // these paths is unknown, so reporting them would only repeat it.
            return;
        }
        for e in execs {
            if c.runtime_dests
                .iter()
                .flatten()
                .any(|d| e.path.is_within(d))
            {
                continue;
            }
            let in_root = c
                .roots
                .iter()
                .find(|r| e.path.is_within(&r.root.destination));
            let mut d = Diagnostic::error(
                Code::ExecutableOutsideRuntime,
                e.span,
                format!("{} `{}` is not inside a read-only runtime mount", e.what, e.path),
            )
            .with_help(
                "add a `runtime \"HOST\" at \"DIR\"` mount whose destination contains it; file roots and \
                 tmpfs cannot provide executables",
            );
            if let Some(r) = in_root {
                d = d
                    .with_label(format!("inside root `{}`", r.root.id))
                    .with_related(r.dest_span, format!("root `{}`", r.root.id));
            } else {
                d = d.with_label("no runtime mount covers this path");
            }
            self.push(d);
        }
    }
}
