//! Persistent and ephemeral storage: project quotas, read-write roots, the
//! aggregate quota and tmpfs bounds, the active-root bound.

use std::collections::BTreeMap;

use super::{Checker, Collected, RootInfo};
use crate::diag::{Code, Diagnostic};
use crate::model::invariants::{QuotaRootDefect, StorageFacts, UnquotedRootDefect};
use crate::model::{self, Access, FileRootKind, PrivateTmp};
use crate::span::Span;

impl Checker {
    /// Project quotas, read-write roots, the aggregate quota.
    pub(super) fn storage(&mut self, c: &Collected) {
        let quota_roots: Vec<&RootInfo> = c
            .roots
            .iter()
            .filter(|r| matches!(r.root.kind, FileRootKind::Host { quota: Some(_), .. }))
            .collect();
        let facts = StorageFacts {
            pin_mounts: c.pin_mounts.is_some(),
            no_further_user_namespaces: c.userns_none.is_some(),
            aggregate_quota: c.aggregate_quota.is_some(),
            bounded_writes: c.writes_bounded.is_some(),
            allow_unbounded_host_writes: c.host_writes.is_some(),
        };
        if let Some(first) = quota_roots.first() {
            let at = first.quota_span.unwrap_or(first.dest_span);
            for defect in facts.quota_root_defects() {
                let (code, msg, help) = match defect {
                    QuotaRootDefect::NeedsPinMounts => (
                        Code::QuotaRequiresPinnedMounts,
                        "a quota root needs `pin mounts`",
                        "add `pin mounts` so the checked directory is the one Bubblewrap mounts",
                    ),
                    QuotaRootDefect::NeedsNoUserNamespaces => (
                        Code::QuotaRequiresNoUserNamespaces,
                        "a quota root needs `user-namespaces none`",
                        "add `user-namespaces none` so the worker cannot change the project id",
                    ),
                    QuotaRootDefect::NeedsAggregate => (
                        Code::QuotaRequiresAggregate,
                        "a quota root needs `quota aggregate`",
                        "add `quota aggregate bytes SIZE inodes COUNT` covering every quota root",
                    ),
                    // The quota's own values are checked where it is read.
                    QuotaRootDefect::ProjectZero | QuotaRootDefect::ZeroCeiling => continue,
                };
                self.push(
                    Diagnostic::error(code, at, msg)
                        .with_label(format!("quota on root `{}`", first.root.id))
                        .with_help(help),
                );
            }
        }

        self.aggregate_quota(c, &quota_roots);
        self.unquoted_roots(c, &facts);
    }

    /// The aggregate quota against the project quotas it covers.
    fn aggregate_quota(&mut self, c: &Collected, quota_roots: &[&RootInfo]) {
        // Aggregate: each distinct project id counted once, at its largest ceiling.
        let mut per_project: BTreeMap<u32, (u64, u64, Span)> = BTreeMap::new();
        for r in quota_roots {
            if let FileRootKind::Host { quota: Some(q), .. } = &r.root.kind {
                let span = r.quota_span.unwrap_or(r.dest_span);
                match per_project.get_mut(&q.project_id) {
                    Some((b, i, first)) => {
                        if *b != q.max_bytes || *i != q.max_inodes {
                            self.push(
                                Diagnostic::warning(
                                    Code::InconsistentProjectQuota,
                                    span,
                                    format!("project {} is given different ceilings", q.project_id),
                                )
                                .with_label("different ceilings for the same project")
                                .with_related(*first, "first ceilings here")
                                .with_help(
                                    "one project is one quota; give every root of the project the same \
                                     ceilings (the aggregate check uses the largest)",
                                ),
                            );
                        }
                        *b = (*b).max(q.max_bytes);
                        *i = (*i).max(q.max_inodes);
                    }
                    None => {
                        per_project.insert(q.project_id, (q.max_bytes, q.max_inodes, span));
                    }
                }
            }
        }
        if let Some((Ok(agg), span)) = &c.aggregate_quota {
            let bytes = per_project
                .values()
                .try_fold(0u64, |s, (b, _, _)| s.checked_add(*b));
            let inodes = per_project
                .values()
                .try_fold(0u64, |s, (_, i, _)| s.checked_add(*i));
            for (sum, max, what) in [
                (bytes, agg.max_bytes, "bytes"),
                (inodes, agg.max_inodes, "inodes"),
            ] {
                let over = sum.is_none_or(|s| s > max);
                if over {
                    let total = sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
                    self.push(
                        Diagnostic::error(
                            Code::AggregateQuotaExceeded,
                            *span,
                            format!("project quotas allow {total} {what} in total, above the aggregate {max}"),
                        )
                        .with_label(format!("aggregate `{what}` too small"))
                        .with_help(
                            "raise the aggregate or lower the per-root ceilings; each distinct project id \
                             counts once",
                        ),
                    );
                }
            }
        }
    }

    /// Read-write host roots without a quota, and the escape hatch that
    /// allows them.
    fn unquoted_roots(&mut self, c: &Collected, facts: &StorageFacts) {
        // Read-write host roots without a quota.
        let mut any_raw = false;
        for r in &c.roots {
            let FileRootKind::Host {
                access: Access::ReadWrite,
                quota: None,
                ..
            } = &r.root.kind
            else {
                continue;
            };
            any_raw = true;
            let access = r.access_span.unwrap_or(r.dest_span);
            let id = &r.root.id;
            let diagnostic = match facts.unquoted_writable_root_defect() {
                None => continue,
                Some(UnquotedRootDefect::UnderBoundedWrites) => Diagnostic::error(
                    Code::BoundedWritesUnverifiedRoot,
                    access,
                    format!("`writes bounded` rejects read-write root `{id}` without a quota"),
                )
                .with_label("unverified persistent writes")
                .with_related(c.writes_bounded.unwrap_or(access), "`writes bounded` here")
                .with_help("attach `quota project ID bytes SIZE inodes COUNT`, or make the root `read-only`"),
                Some(UnquotedRootDefect::Unbounded) => Diagnostic::error(
                    Code::UnverifiedWriteRoot,
                    access,
                    format!("read-write root `{id}` has no quota"),
                )
                .with_label("unbounded host writes are denied by default")
                .with_help(
                    "attach `quota project ID bytes SIZE inodes COUNT`; only if a quota Splash cannot \
                     inspect is enforced elsewhere, add `host-writes unbounded`",
                ),
                Some(UnquotedRootDefect::UnderAggregate) => Diagnostic::error(
                    Code::UnverifiedRootWithAggregate,
                    access,
                    format!("read-write root `{id}` has no quota while `quota aggregate` is set"),
                )
                .with_label("not counted by the aggregate")
                .with_related(
                    c.aggregate_quota.as_ref().map_or(access, |(_, agg)| *agg),
                    "`quota aggregate` here",
                )
                .with_help("attach a project quota; `host-writes unbounded` does not apply under an aggregate"),
            };
            self.push(diagnostic);
        }
        if let Some(hw) = c.host_writes {
            if let Some(wb) = c.writes_bounded {
                self.push(
                    Diagnostic::warning(
                        Code::EscapeHatchOverridden,
                        hw,
                        "`host-writes unbounded` has no effect under `writes bounded`",
                    )
                    .with_label("overridden")
                    .with_related(wb, "`writes bounded` here")
                    .with_help("remove `host-writes unbounded`"),
                );
            } else if !any_raw {
                self.push(
                    Diagnostic::warning(
                        Code::UnusedEscapeHatch,
                        hw,
                        "`host-writes unbounded` is set but no root is read-write without a quota",
                    )
                    .with_label("unused")
                    .with_help("remove it; the escape hatch only weakens the policy"),
                );
            }
        }
    }

    /// The aggregate tmpfs bound and the active-root bound.
    pub(super) fn ephemeral(&mut self, c: &Collected) {
        if let Some((Ok(max), span)) = &c.tmpfs_aggregate {
            self.tmpfs_aggregate(c, *max, *span);
        }
        if let Some((0, span)) = c.active_roots
            && !c.roots.is_empty()
        {
            self.push(
                Diagnostic::warning(
                    Code::NoActiveRoots,
                    span,
                    "`active-roots max 0` but roots are registered",
                )
                .with_label("no root can ever be activated")
                .with_help("raise the bound, or remove the unused roots"),
            );
        }
    }

    /// `tmpfs aggregate` bounds what a session *activates*: a bounded private
    /// `/tmp` plus the tmpfs roots its manifest selects (activation sums
    /// them). Statically, an error only when no selection can hold: `/tmp`
    /// alone, or one root with `/tmp`, above the bound (such a root can
    /// never be activated). Registering more than fits at once is a
    /// warning: the largest selection `active-roots max` allows exceeds the
    /// bound, so some manifests will be refused.
    fn tmpfs_aggregate(&mut self, c: &Collected, max: u64, span: Span) {
        let Some(tmp) = self.aggregate_tmp(c.tmp, max, span) else {
            return;
        };
        let roots: Vec<(&RootInfo, u64)> = c
            .roots
            .iter()
            .filter_map(|r| match r.root.kind {
                FileRootKind::Ephemeral { size_bytes } => Some((r, size_bytes)),
                FileRootKind::Host { .. } => None,
            })
            .collect();
        let selectable = c
            .active_roots
            .map_or(model::DEFAULT_MAX_ACTIVE_FILE_ROOTS, |(n, _)| n);
        if selectable == 0 {
            // No root can be active (`no-active-roots` says so): `/tmp` is
            // the only selection.
            return;
        }
        if !self.roots_never_fitting(&roots, tmp, max, span) {
            self.aggregate_overcommitted(&roots, selectable, tmp, max, span);
        }
    }

    /// The private `/tmp` under a `tmpfs aggregate`: its bound, if any;
    /// `None` after an error (unbounded, or alone above the aggregate).
    fn aggregate_tmp(
        &mut self,
        tmp: Option<(PrivateTmp, Span)>,
        max: u64,
        span: Span,
    ) -> Option<Option<(u64, Span)>> {
        let (size, tmp_span) = match tmp {
            Some((PrivateTmp::Unbounded, tmp_span)) => {
                self.push(
                    Diagnostic::error(
                        Code::AggregateTmpfsUnboundedTmp,
                        tmp_span,
                        "`tmpfs aggregate` requires a bounded private `/tmp`",
                    )
                    .with_label("unbounded private `/tmp`")
                    .with_related(span, "aggregate bound here")
                    .with_help("write `tmp private size SIZE`, or `tmp off`"),
                );
                return None;
            }
            Some((PrivateTmp::Bounded { size_bytes }, tmp_span)) => (size_bytes, tmp_span),
            Some((PrivateTmp::Off, _)) | None => return Some(None),
        };
        if size <= max {
            return Some(Some((size, tmp_span)));
        }
        // Every session has this `/tmp`, so nothing can activate; each root
        // would only repeat it.
        self.push(
            Diagnostic::error(
                Code::AggregateTmpfsExceeded,
                tmp_span,
                format!(
                    "the private `/tmp` alone may hold {size} bytes, above the `tmpfs aggregate` of {max} bytes"
                ),
            )
            .with_label("larger than the aggregate")
            .with_related(span, "aggregate bound here")
            .with_help(
                "every session has this `/tmp`, so no manifest could be activated; shrink \
                 `tmp private size` or raise the aggregate",
            ),
        );
        None
    }

    /// Reports each tmpfs root that does not fit the aggregate even alone
    /// with `/tmp` (it can never be activated); whether there was one.
    fn roots_never_fitting(
        &mut self,
        roots: &[(&RootInfo, u64)],
        tmp: Option<(u64, Span)>,
        max: u64,
        span: Span,
    ) -> bool {
        let tmp_bytes = tmp.map_or(0, |(b, _)| u128::from(b));
        let mut never = false;
        for (r, size) in roots {
            let total = tmp_bytes + u128::from(*size);
            if total <= u128::from(max) {
                continue;
            }
            never = true;
            let id = &r.root.id;
            let message = match tmp {
                Some((tmp_size, _)) => format!(
                    "tmpfs root `{id}` ({size} bytes) and the private `/tmp` ({tmp_size} bytes) \
                     may hold {total} bytes, above the `tmpfs aggregate` of {max} bytes"
                ),
                None => format!(
                    "tmpfs root `{id}` may hold {size} bytes, above the `tmpfs aggregate` of {max} bytes"
                ),
            };
            self.push(
                Diagnostic::error(
                    Code::AggregateTmpfsExceeded,
                    r.size_span.unwrap_or(r.dest_span),
                    message,
                )
                .with_label("this root can never be activated")
                .with_related(span, "aggregate bound here")
                .with_help(
                    "a manifest selecting this root is always refused; shrink the root, raise the \
                     aggregate, or remove the root",
                ),
            );
        }
        never
    }

    /// Warns when the largest selection `active-roots max` allows (the
    /// `selectable` largest tmpfs roots, with `/tmp`) exceeds the aggregate.
    fn aggregate_overcommitted(
        &mut self,
        roots: &[(&RootInfo, u64)],
        selectable: u16,
        tmp: Option<(u64, Span)>,
        max: u64,
        span: Span,
    ) {
        let tmp_bytes = tmp.map_or(0, |(b, _)| u128::from(b));
        let mut sizes: Vec<u64> = roots.iter().map(|(_, size)| *size).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        sizes.truncate(usize::from(selectable));
        let worst = tmp_bytes + sizes.iter().map(|&s| u128::from(s)).sum::<u128>();
        if worst <= u128::from(max) {
            return;
        }
        let which = if sizes.len() < roots.len() {
            format!(
                "the {} largest of the {} tmpfs roots (`active-roots max {selectable}`)",
                sizes.len(),
                roots.len()
            )
        } else {
            format!("the {} tmpfs roots", roots.len())
        };
        let with_tmp = if tmp.is_some() {
            " and the private `/tmp`"
        } else {
            ""
        };
        self.push(
            Diagnostic::warning(
                Code::AggregateTmpfsOvercommitted,
                span,
                format!(
                    "{which}{with_tmp} may hold {worst} bytes when activated together, above the \
                     `tmpfs aggregate` of {max} bytes"
                ),
            )
            .with_label("the registered roots do not all fit at once")
            .with_help(
                "the bound applies to the active roots: a manifest whose selected tmpfs roots and \
                 `/tmp` exceed it is refused at activation; raise the aggregate if the roots must be \
                 usable together",
            ),
        );
    }
}
