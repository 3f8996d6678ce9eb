//! Settings that require each other: pinning, bounded writes, the broker.

use super::{Checker, Collected};
use crate::diag::{Code, Diagnostic};
use crate::model::PrivateTmp;

impl Checker {
    pub(super) fn hardening(&mut self, c: &Collected) {
        if let (Some(pe), None) = (c.pin_executables, c.pin_mounts) {
            self.push(
                Diagnostic::error(
                    Code::PinExecutablesWithoutMounts,
                    pe,
                    "`pin executables` requires `pin mounts`",
                )
                .with_label("executables pinned without pinned mounts")
                .with_help("write `pin mounts, executables`"),
            );
        }
        if let Some(wb) = c.writes_bounded {
            if c.userns_none.is_none() {
                self.push(
                    Diagnostic::error(
                        Code::BoundedWritesRequiresNoUserNamespaces,
                        wb,
                        "`writes bounded` requires `user-namespaces none`",
                    )
                    .with_label("without it the remounts could be undone")
                    .with_help("add `user-namespaces none`"),
                );
            }
            if let Some((PrivateTmp::Unbounded, tmp_span)) = c.tmp {
                self.push(
                    Diagnostic::error(
                        Code::BoundedWritesUnboundedTmp,
                        tmp_span,
                        "`writes bounded` rejects an unbounded private `/tmp`",
                    )
                    .with_label("unbounded")
                    .with_related(wb, "`writes bounded` here")
                    .with_help("write `tmp private size SIZE`, or `tmp off`"),
                );
            }
        }
        if let Some((_, _, kw)) = &c.broker
            && c.pin_mounts.is_none()
        {
            self.push(
                Diagnostic::error(
                    Code::BrokerRequiresPinnedMounts,
                    *kw,
                    "`network-broker` requires `pin mounts`",
                )
                .with_label("broker directory would be mounted by path")
                .with_help("add `pin mounts`"),
            );
        }
    }
}
