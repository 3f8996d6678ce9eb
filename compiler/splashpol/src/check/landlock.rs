//! `landlock { allow-exec ... }` targets.

use std::collections::BTreeMap;

use super::{Checker, Placed};
use crate::diag::{Code, Diagnostic};
use crate::model;
use crate::span::{Node, Span};

impl Checker {
    pub(super) fn allow_exec(&mut self, entries: &[Node<String>]) -> Vec<Placed> {
        let mut out: Vec<Placed> = Vec::new();
        let mut first: BTreeMap<&str, Span> = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            if i == model::MAX_LANDLOCK_TARGETS {
                self.push(
                    Diagnostic::error(
                        Code::TooManyLandlockTargets,
                        e.span,
                        format!(
                            "`landlock` lists {} `allow-exec` targets; the maximum is 32",
                            entries.len()
                        ),
                    )
                    .with_label("the 33rd target")
                    .with_help("keep the executable allowlist minimal"),
                );
            }
            if let Some(&f) = first.get(e.node.as_str()) {
                self.duplicate(
                    Code::DuplicateLandlockTarget,
                    e.span,
                    f,
                    &format!("`allow-exec \"{}\"`", e.node),
                );
                continue;
            }
            first.insert(&e.node, e.span);
            if let Some(p) = self.placed(e, "`allow-exec` target") {
                out.push(p);
            }
        }
        out
    }
}
