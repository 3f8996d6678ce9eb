//! `cgroup ... { ... }` entries: controller limits, `io` devices and their
//! rates, the join timeout.

use std::collections::BTreeMap;

use super::Checker;
use crate::ast::{self, Parsed};
use crate::diag::{Code, Diagnostic};
use crate::model::{self, CgroupLimits, IoMax};
use crate::span::{Node, Span};
use crate::units::{self, Dimension, Rate, Value};

impl Checker {
    /// Returns the limits and the join timeout, or `None` when something was wrong.
    pub(super) fn cgroup_limits(
        &mut self,
        keyword: Span,
        entries: &[Node<ast::CgroupEntry>],
        parsed: Parsed,
    ) -> Option<(CgroupLimits, u64)> {
        let mut l = CgroupLimits::default();
        let mut join = None;
        let mut ok = true;
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        let mut devices: BTreeMap<(u32, u32), Span> = BTreeMap::new();
        let mut any_io = false;
        for e in entries {
            match &e.node {
                ast::CgroupEntry::Value { kind, value } => {
                    let kw = kind.node.keyword();
                    if let Some(&f) = first.get(kw) {
                        self.duplicate(Code::DuplicateEntry, kind.span, f, &format!("`{kw}`"));
                        ok = false;
                        continue;
                    }
                    first.insert(kw, kind.span);
                    let what = format!("`{kw}`");
                    let v = match kind.node {
                        ast::CgroupKind::Cpu => self
                            .nonzero(value, Dimension::Duration, &what)
                            .and_then(|ms| {
                                let micros = ms.checked_mul(1000);
                                if micros.is_none() {
                                    self.push(
                                        Diagnostic::error(
                                            Code::NumberOverflow,
                                            value.span,
                                            "`cpu` quota is too large",
                                        )
                                        .with_label("overflows in microseconds")
                                        .with_help("give a smaller quota"),
                                    );
                                }
                                micros
                            }),
                        ast::CgroupKind::Memory => self.nonzero(value, Dimension::Bytes, &what),
                        ast::CgroupKind::Swap => self.value(value, Dimension::Bytes, &what),
                        ast::CgroupKind::Pids => self.nonzero(value, Dimension::Count, &what),
                        ast::CgroupKind::JoinTimeout => {
                            self.nonzero(value, Dimension::Duration, &what)
                        }
                    };
                    let Some(v) = v else {
                        ok = false;
                        continue;
                    };
                    match kind.node {
                        ast::CgroupKind::Cpu => l.cpu_quota_micros = Some(v),
                        ast::CgroupKind::Memory => l.memory_max_bytes = Some(v),
                        ast::CgroupKind::Swap => l.memory_swap_max_bytes = Some(v),
                        ast::CgroupKind::Pids => l.pids_max = Some(v),
                        ast::CgroupKind::JoinTimeout => join = Some(v),
                    }
                }
                ast::CgroupEntry::Io {
                    major,
                    minor,
                    limits,
                    parsed: io_parsed,
                } => {
                    any_io = true;
                    let dev_span = major.span.join(minor.span);
                    let ma = self.device_number(major);
                    let mi = self.device_number(minor);
                    let io = self.io_limits(dev_span, limits, *io_parsed);
                    let (Some(major), Some(minor), Some((rbps, wbps, riops, wiops))) = (ma, mi, io)
                    else {
                        ok = false;
                        continue;
                    };
                    if let Some(&f) = devices.get(&(major, minor)) {
                        self.push(
                            Diagnostic::error(
                                Code::DuplicateIoDevice,
                                dev_span,
                                format!("device `{major}:{minor}` has two `io` entries"),
                            )
                            .with_label("second entry")
                            .with_related(f, "first entry")
                            .with_help("put all limits for one device in one `io` block"),
                        );
                        ok = false;
                        continue;
                    }
                    devices.insert((major, minor), dev_span);
                    l.io_max.push(IoMax {
                        major,
                        minor,
                        rbps,
                        wbps,
                        riops,
                        wiops,
                    });
                }
            }
        }
        l.io_max.sort_by_key(|io| (io.major, io.minor));
        let has_limit = l.cpu_quota_micros.is_some()
            || l.memory_max_bytes.is_some()
            || l.memory_swap_max_bytes.is_some()
            || l.pids_max.is_some()
            || !l.io_max.is_empty();
        if !has_limit && ok && parsed == Parsed::Clean && !any_io {
            self.push(
                Diagnostic::error(
                    Code::CgroupWithoutLimit,
                    keyword,
                    "the cgroup policy sets no controller limit",
                )
                .with_label("no `cpu`, `memory`, `swap`, `pids` or `io` limit")
                .with_help("add at least one finite limit such as `memory 512 MiB`"),
            );
            ok = false;
        }
        let join = join.unwrap_or(model::DEFAULT_CGROUP_JOIN_TIMEOUT_MS);
        ok.then_some((l, join))
    }

    pub(super) fn device_number(&mut self, n: &Node<ast::NumberLit>) -> Option<u32> {
        let v = units::integer(n).map_err(|d| self.push(*d)).ok()?;
        match u32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                self.push(
                    Diagnostic::error(
                        Code::NumberOverflow,
                        n.span,
                        format!("device number `{}` is too large", n.node.0),
                    )
                    .with_label("device numbers are 32-bit")
                    .with_help("use the `MAJOR:MINOR` numbers shown by `lsblk`"),
                );
                None
            }
        }
    }

    #[expect(
        clippy::type_complexity,
        reason = "the four io.max keys, in kernel order"
    )]
    pub(super) fn io_limits(
        &mut self,
        dev_span: Span,
        limits: &[Node<ast::IoLimit>],
        parsed: Parsed,
    ) -> Option<(Option<u64>, Option<u64>, Option<u64>, Option<u64>)> {
        let (mut rbps, mut wbps, mut riops, mut wiops) = (None, None, None, None);
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        let mut ok = true;
        for e in limits {
            let dir = e.node.direction.node;
            let dir_kw = match dir {
                ast::IoDirection::Read => "read",
                ast::IoDirection::Write => "write",
            };
            match units::quantity(&e.node.value, Dimension::Rate, &format!("`{dir_kw}`")) {
                Err(d) => {
                    self.push(*d);
                    ok = false;
                }
                Ok(Value::Rate(r)) => {
                    let (key, slot, v) = match (dir, r) {
                        (ast::IoDirection::Read, Rate::BytesPerSecond(v)) => ("rbps", &mut rbps, v),
                        (ast::IoDirection::Write, Rate::BytesPerSecond(v)) => {
                            ("wbps", &mut wbps, v)
                        }
                        (ast::IoDirection::Read, Rate::Iops(v)) => ("riops", &mut riops, v),
                        (ast::IoDirection::Write, Rate::Iops(v)) => ("wiops", &mut wiops, v),
                    };
                    if let Some(&f) = first.get(key) {
                        self.duplicate(
                            Code::DuplicateEntry,
                            e.span,
                            f,
                            &format!(
                                "the `{dir_kw}` {} limit",
                                if key.ends_with("iops") {
                                    "iops"
                                } else {
                                    "byte-rate"
                                }
                            ),
                        );
                        ok = false;
                        continue;
                    }
                    first.insert(key, e.span);
                    *slot = Some(v);
                }
                Ok(Value::Scalar(_)) => ok = false,
            }
        }
        if limits.is_empty() && parsed == Parsed::Clean {
            self.push(
                Diagnostic::error(Code::EmptyIo, dev_span, "this `io` entry sets no limit")
                    .with_label("empty block")
                    .with_help("add e.g. `read 2 MiB/s` or `write 120 iops`, or remove the entry"),
            );
            ok = false;
        }
        ok.then_some((rbps, wbps, riops, wiops))
    }
}
