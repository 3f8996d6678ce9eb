//! `identity`: the ids in range, and no read-write host root under a
//! dynamic identity.

use super::{Checker, Collected};
use crate::ast::{self, NumberLit};
use crate::diag::{Code, Diagnostic};
use crate::model::{Access, FileRootKind, MAX_IDENTITY_ID, WorkerIdentity};
use crate::span::Node;
use crate::units;

impl Checker {
    /// Pass 1: an `identity` statement on its own.
    pub(super) fn identity(&mut self, identity: &ast::Identity) -> Option<WorkerIdentity> {
        match identity {
            ast::Identity::Dynamic => Some(WorkerIdentity::Dynamic),
            ast::Identity::Fixed { user, group } => {
                let uid = self.identity_id(user, "user");
                let gid = self.identity_id(group, "group");
                Some(WorkerIdentity::Fixed {
                    uid: uid?,
                    gid: gid?,
                })
            }
        }
    }

    fn identity_id(&mut self, lit: &Node<NumberLit>, what: &str) -> Option<u32> {
        let v = match units::integer(lit) {
            Ok(v) => v,
            Err(d) => {
                self.push(*d);
                return None;
            }
        };
        if WorkerIdentity::valid_id(v) {
            return u32::try_from(v).ok();
        }
        let (label, help) = if v == 0 {
            (
                "0 is root".to_string(),
                format!(
                    "choose an unprivileged {what} id such as 64000 that the host reserves for this worker"
                ),
            )
        } else {
            (
                format!("above {MAX_IDENTITY_ID}"),
                format!(
                    "choose a {what} id from 1 to {MAX_IDENTITY_ID} (4294967295 means \"unchanged\" to the kernel)"
                ),
            )
        };
        self.push(
            Diagnostic::error(
                Code::IdentityIdOutOfRange,
                lit.span,
                format!("`identity` {what} id {v} is not an unprivileged id"),
            )
            .with_label(label)
            .with_help(help),
        );
        None
    }

    /// Cross-statement: `identity dynamic` refuses read-write host roots.
    pub(super) fn identity_roots(&mut self, c: &Collected) {
        let Some((Ok(WorkerIdentity::Dynamic), span)) = c.identity.as_ref().map(|(i, s)| (*i, *s))
        else {
            return;
        };
        for r in &c.roots {
            if let FileRootKind::Host {
                access: Access::ReadWrite,
                ..
            } = r.root.kind
            {
                let at = r.access_span.unwrap_or(r.dest_span);
                self.push(
                    Diagnostic::error(
                        Code::DynamicIdentityWritableRoot,
                        at,
                        format!(
                            "root `{}` is read-write on the host, which `identity dynamic` refuses",
                            r.root.id
                        ),
                    )
                    .with_label("files written here stay owned by a uid a later session may get")
                    .with_related(span, "dynamic identity")
                    .with_help(
                        "make the root `read-only` or a `tmpfs` root, or give the worker a fixed `identity user UID group GID`",
                    ),
                );
            }
        }
    }
}
