//! `root` statements: ids, destinations, host sources with their project
//! quotas, and tmpfs sizes.

use super::{Checker, Collected, RootInfo};
use crate::ast::{self, Quantity};
use crate::diag::{Code, Diagnostic};
use crate::model::{self, Access, FileRoot, FileRootKind, ProjectQuota};
use crate::span::Node;
use crate::units::{self, Dimension};

impl Checker {
    pub(super) fn tmpfs_size(&mut self, q: &Node<Quantity>, what: &str) -> Option<u64> {
        let v = self.value(q, Dimension::Bytes, what)?;
        if v == 0 || v > model::MAX_TMPFS_BYTES {
            self.push(
                Diagnostic::error(
                    Code::TmpfsSizeOutOfRange,
                    q.span,
                    format!("{what} must be from 1 B to 2^63 - 1 bytes"),
                )
                .with_label(if v == 0 {
                    "zero would mean no bound"
                } else {
                    "larger than Bubblewrap accepts"
                })
                .with_help("give a positive size such as `64 MiB`"),
            );
            return None;
        }
        Some(v)
    }

    pub(super) fn root(
        &mut self,
        id: &Node<String>,
        destination: &Node<String>,
        kind: &ast::RootKind,
        c: &mut Collected,
    ) {
        let sel = self.selector(id, "root id");
        let dest = self.path(destination, "root destination");
        let mut quota_span = None;
        let mut access_span = None;
        let mut size_span = None;
        let kind = match kind {
            ast::RootKind::Host {
                source,
                access,
                quota,
            } => {
                let src = self.path(source, "root source");
                access_span = Some(access.span);
                let access_v = match access.node {
                    ast::AccessDecl::ReadOnly => Access::ReadOnly,
                    ast::AccessDecl::ReadWrite => Access::ReadWrite,
                };
                let mut q = None;
                let mut quota_ok = true;
                if let Some(quota) = quota {
                    quota_span = Some(quota.span);
                    if access_v == Access::ReadOnly {
                        self.push(
                            Diagnostic::error(
                                Code::QuotaOnReadOnly,
                                quota.span,
                                format!("read-only root `{}` has a quota", id.node),
                            )
                            .with_label("a quota bounds writes; this root cannot be written")
                            .with_related(access.span, "read-only here")
                            .with_help("remove the quota, or make the root `read-write`"),
                        );
                    }
                    q = self.project_quota(&quota.node);
                    quota_ok = q.is_some();
                }
                match (src, quota_ok) {
                    (Some(source), true) => Some(FileRootKind::Host {
                        source,
                        access: access_v,
                        quota: q,
                    }),
                    _ => None,
                }
            }
            ast::RootKind::Tmpfs { size } => {
                size_span = Some(size.span);
                self.tmpfs_size(size, "tmpfs root `size`")
                    .map(|size_bytes| FileRootKind::Ephemeral { size_bytes })
            }
        };
        // Duplicate ids: one namespace for host and ephemeral roots.
        if let Some(&first) = c.root_ids.get(id.node.as_str()) {
            self.push(
                Diagnostic::error(
                    Code::DuplicateRootId,
                    id.span,
                    format!("root id `{}` is registered twice", id.node),
                )
                .with_label("second registration")
                .with_related(first, "first registered here")
                .with_help("host-backed and tmpfs roots share one id namespace; give each root a distinct id"),
            );
            return;
        }
        if let (Some(id_t), Some(dest), Some(kind)) = (sel, dest, kind) {
            c.root_ids.insert(id.node.clone(), id.span);
            c.roots.push(RootInfo {
                root: FileRoot {
                    id: id_t,
                    destination: dest,
                    kind,
                },
                dest_span: destination.span,
                quota_span,
                access_span,
                size_span,
            });
        }
    }

    pub(super) fn project_quota(&mut self, q: &ast::Quota) -> Option<ProjectQuota> {
        let project = match units::integer(&q.project) {
            Ok(v) => match u32::try_from(v) {
                Ok(0) => {
                    self.push(
                        Diagnostic::error(Code::ZeroProjectId, q.project.span, "project id is 0")
                            .with_label("project 0 is the default project of every file")
                            .with_help("use the nonzero project id the host provisioned for this directory"),
                    );
                    None
                }
                Ok(v) => Some(v),
                Err(_) => {
                    self.push(
                        Diagnostic::error(
                            Code::NumberOverflow,
                            q.project.span,
                            format!("project id `{}` is too large", q.project.node.0),
                        )
                        .with_label("project ids are 32-bit")
                        .with_help("use a project id up to 4294967295"),
                    );
                    None
                }
            },
            Err(d) => {
                self.push(*d);
                None
            }
        };
        let bytes = self.nonzero(&q.bytes, Dimension::Bytes, "the quota `bytes` ceiling");
        let inodes = self.nonzero(&q.inodes, Dimension::Count, "the quota `inodes` ceiling");
        Some(ProjectQuota {
            project_id: project?,
            max_bytes: bytes?,
            max_inodes: inodes?,
        })
    }
}
