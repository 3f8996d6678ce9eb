//! Runner wiring: distinct executables, one runner for each block that needs
//! one, no redundant Landlock targets, no idle combined runner.

use super::{Checker, Collected, Placed, reported, valid};
use crate::diag::{Code, Diagnostic};
use crate::model::SeccompPolicy;
use crate::span::Span;

impl Checker {
    pub(super) fn missing_runner(&mut self, keyword: Span, block: &str) {
        self.push(
            Diagnostic::error(
                Code::MissingRunner,
                keyword,
                format!("`{block}` has no runner to enforce it"),
            )
            .with_label("no runner")
            .with_help(format!(
                "name its runner (`{block} runner \"/opt/splash/bin/...\"`) or add `runner combined \"PATH\"`"
            )),
        );
    }

    pub(super) fn runners(&mut self, c: &Collected) {
        // Distinct worker and runner paths.
        let mut named: Vec<&Placed> = Vec::new();
        named.extend(c.worker.as_ref());
        if let Some(l) = &c.limits {
            named.extend(valid(&l.runner));
        }
        if let Some(l) = &c.landlock {
            named.extend(valid(&l.runner));
        }
        named.extend(valid(&c.combined));
        for i in 0..named.len() {
            if let Some(prev) = named[..i].iter().find(|p| p.path == named[i].path) {
                self.push(
                    Diagnostic::error(
                        Code::RunnerPathConflict,
                        named[i].span,
                        format!("{} uses the same path as {}", named[i].what, prev.what),
                    )
                    .with_label("same path")
                    .with_related(prev.span, prev.what.clone())
                    .with_help("the worker and each runner must be distinct executables"),
                );
            }
        }

        let combined = valid(&c.combined);
        if let Some(l) = &c.limits {
            match (&l.runner, combined) {
                (Some(Ok(r)), Some(comb)) => self.push(
                    Diagnostic::error(
                        Code::RunnerConflict,
                        r.span,
                        "`limits` names its own runner while `runner combined` is set",
                    )
                    .with_label("separate runner")
                    .with_related(comb.span, "combined runner")
                    .with_help(
                        "with `runner combined`, write `limits { ... }` without `runner PATH`",
                    ),
                ),
                (None, None) if !reported(&c.combined) => {
                    self.missing_runner(
                        l.required.map_or(l.keyword, |r| l.keyword.join(r)),
                        "limits",
                    );
                }
                _ => {}
            }
        }
        if let Some(l) = &c.landlock {
            match (&l.runner, combined) {
                (Some(Ok(r)), Some(comb)) => self.push(
                    Diagnostic::error(
                        Code::RunnerConflict,
                        r.span,
                        "`landlock` names its own runner while `runner combined` is set",
                    )
                    .with_label("separate runner")
                    .with_related(comb.span, "combined runner")
                    .with_help(
                        "with `runner combined`, write `landlock { ... }` without `runner PATH`",
                    ),
                ),
                (None, None) if !reported(&c.combined) => {
                    self.missing_runner(l.keyword, "landlock");
                }
                _ => {}
            }
            // Targets already on the list.
            let auto: Vec<&Placed> = c
                .worker
                .iter()
                .chain(c.limits.as_ref().and_then(|l| valid(&l.runner)))
                .collect();
            // The runner that applies the allowlist does so before any exec,
            // so it never needs to be on it.
            let applier = valid(&l.runner).or(combined);
            for t in &l.allow {
                if let Some(a) = applier.filter(|a| a.path == t.path) {
                    self.push(
                        Diagnostic::warning(
                            Code::RedundantLandlockTarget,
                            t.span,
                            format!(
                                "`{}` is the {}, which applies the allowlist and needs no `allow-exec`",
                                t.path, a.what
                            ),
                        )
                        .with_label("redundant")
                        .with_related(a.span, a.what.clone())
                        .with_help(
                            "remove this `allow-exec`: it only lets the worker execute the runner again",
                        ),
                    );
                } else if let Some(a) = auto.iter().find(|a| a.path == t.path) {
                    self.push(
                        Diagnostic::warning(
                            Code::RedundantLandlockTarget,
                            t.span,
                            format!(
                                "`{}` is the {} and is allowed automatically",
                                t.path, a.what
                            ),
                        )
                        .with_label("redundant")
                        .with_related(a.span, a.what.clone())
                        .with_help("remove this `allow-exec`"),
                    );
                }
            }
        }
        if let Some(p) = combined {
            let strict = matches!(c.seccomp, Some((SeccompPolicy::StrictAllowlist { .. }, _)));
            if c.limits.is_none() && c.landlock.is_none() && !strict {
                self.push(
                    Diagnostic::warning(
                        Code::IdleCombinedRunner,
                        p.span,
                        "the combined runner has nothing to apply",
                    )
                    .with_label("no `limits`, `landlock` or strict seccomp allowlist")
                    .with_help("add the controls it should apply, or remove `runner combined`"),
                );
            }
        }
    }
}
