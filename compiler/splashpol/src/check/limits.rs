//! `limits { ... }` entries: one value per resource, in its unit.

use std::collections::BTreeMap;

use super::Checker;
use crate::ast;
use crate::diag::{Code, Diagnostic};
use crate::model::ResourceLimits;
use crate::span::{Node, Span};
use crate::units::Dimension;

impl Checker {
    pub(super) fn limits(&mut self, entries: &[Node<ast::LimitEntry>]) -> ResourceLimits {
        let mut l = ResourceLimits::default();
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        for e in entries {
            let kind = e.node.kind.node;
            let kw = kind.keyword();
            if let Some(&f) = first.get(kw) {
                self.duplicate(
                    Code::DuplicateEntry,
                    e.node.kind.span,
                    f,
                    &format!("`{kw}`"),
                );
                continue;
            }
            first.insert(kw, e.node.kind.span);
            let what = format!("`{kw}`");
            let q = &e.node.value;
            match kind {
                ast::LimitKind::Cpu => {
                    if let Some(ms) = self.nonzero(q, Dimension::Duration, &what) {
                        if ms % 1000 != 0 {
                            self.push(
                                Diagnostic::error(
                                    Code::InexactDuration,
                                    q.span,
                                    "`cpu` is counted in whole seconds",
                                )
                                .with_label("not a whole number of seconds")
                                .with_help(
                                    "RLIMIT_CPU has one-second granularity; write e.g. `30 s`",
                                ),
                            );
                        } else {
                            l.cpu_seconds = Some(ms / 1000);
                        }
                    }
                }
                ast::LimitKind::AddressSpace => {
                    l.address_space_bytes = self.nonzero(q, Dimension::Bytes, &what)
                }
                ast::LimitKind::Processes => {
                    l.process_count = self.nonzero(q, Dimension::Count, &what)
                }
                ast::LimitKind::OpenFiles => {
                    l.open_files = self.nonzero(q, Dimension::Count, &what)
                }
                ast::LimitKind::FileSize => {
                    l.file_size_bytes = self.nonzero(q, Dimension::Bytes, &what)
                }
            }
        }
        l
    }
}
