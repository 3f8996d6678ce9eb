//! Code generation: a [`RuleSet`] becomes a bounded, deterministic cBPF
//! program.
//!
//! Layout (see `docs/seccomp.md`):
//!
//! 1. `ld arch`; a mismatch returns `KILL_PROCESS`.
//! 2. `ld nr`; on x86_64 a set x32 bit returns `KILL_PROCESS`.
//! 3. A balanced binary search (`jge`) over the ranges of syscall numbers
//!    that share a decision, merged across neighbouring numbers.
//! 4. At each leaf: a `ret` when the decision needs no argument, otherwise
//!    the argument tests followed by the `ret`s. Arguments are loaded only on
//!    the leaves of guarded syscalls, so every other decision depends on the
//!    number alone and is served by the kernel's seccomp action cache.
//!
//! Conditional jumps reach at most 255 instructions forward; a farther
//! target is reached through an inserted `ja` (32-bit offset).

use crate::bpf::{
    BPF_ABS, BPF_JA, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_MAXINSNS, BPF_RET,
    BPF_W, OFF_ARCH, OFF_NR, SockFilter, off_arg_lo,
};
use crate::error::CompileError;
use crate::program::Program;
use crate::rules::{Action, ArgCond, NrDecision, Profile, RuleSet};
use crate::{Arch, X32_SYSCALL_BIT};

/// Compile `profile` for `arch`. The same input always yields the same bytes.
pub fn compile(profile: &Profile, arch: Arch) -> Result<Program, CompileError> {
    let rules = RuleSet::for_profile(profile, arch)?;
    compile_rules(&rules)
}

/// Compile `profile` for `arch` as a launch uses it: with `exec_allowlist`,
/// plus the memfd guard of [`RuleSet::exec_allowlist_guard`].
pub fn compile_launch(
    profile: &Profile,
    arch: Arch,
    exec_allowlist: bool,
) -> Result<Program, CompileError> {
    let rules = RuleSet::for_launch(profile, arch, exec_allowlist)?;
    compile_rules(&rules)
}

/// A run of consecutive syscall numbers `lo..=hi` with one decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NrRange {
    /// The first number of the run.
    pub lo: u32,
    /// The last number of the run (inclusive).
    pub hi: u32,
    /// What the filter decides for every number of the run.
    pub decision: NrDecision,
}

/// The merged ranges covering every number `0..=u32::MAX`, ascending.
pub fn ranges(rules: &RuleSet) -> Vec<NrRange> {
    let default = NrDecision {
        conditional: Vec::new(),
        otherwise: rules.default_action(),
    };
    let mut out: Vec<NrRange> = Vec::new();
    let mut push = |lo: u32, hi: u32, decision: NrDecision| {
        if let Some(last) = out.last_mut()
            && last.decision == decision
            && last.hi.checked_add(1) == Some(lo)
        {
            last.hi = hi;
            return;
        }
        out.push(NrRange { lo, hi, decision });
    };
    let mut next: Option<u32> = Some(0);
    for nr in rules.special_numbers() {
        if let Some(cur) = next
            && cur < nr
        {
            push(cur, nr - 1, default.clone());
        }
        push(nr, nr, rules.nr_decision(nr));
        next = nr.checked_add(1);
    }
    if let Some(cur) = next {
        push(cur, u32::MAX, default);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Label(usize);

#[derive(Debug, Clone)]
enum Op {
    Stmt(SockFilter),
    Jump {
        code: u16,
        k: u32,
        jt: Label,
        jf: Label,
    },
    Ja(Label),
    Mark(Label),
}

#[derive(Debug, Default)]
struct Asm {
    ops: Vec<Op>,
    labels: usize,
}

impl Asm {
    fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }
    fn mark(&mut self, l: Label) {
        self.ops.push(Op::Mark(l));
    }
    fn stmt(&mut self, s: SockFilter) {
        self.ops.push(Op::Stmt(s));
    }
    fn ld(&mut self, off: u32) {
        self.stmt(SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, off));
    }
    fn ret(&mut self, a: Action) {
        self.stmt(SockFilter::stmt(BPF_RET | BPF_K, a.to_ret()));
    }
    fn jump(&mut self, op: u16, k: u32, jt: Label, jf: Label) {
        self.ops.push(Op::Jump {
            code: BPF_JMP | op | BPF_K,
            k,
            jt,
            jf,
        });
    }

    /// Resolve labels, inserting `ja` trampolines for conditional jumps whose
    /// target lies more than 255 instructions ahead.
    fn assemble(mut self) -> Result<Vec<SockFilter>, usize> {
        loop {
            let pos = self.positions();
            let mut fixes: Vec<(usize, bool, bool)> = Vec::new();
            let mut pc = 0usize;
            for (i, op) in self.ops.iter().enumerate() {
                match op {
                    Op::Mark(_) => continue,
                    Op::Jump { jt, jf, .. } => {
                        let far = |l: &Label| pos[l.0] - (pc + 1) > usize::from(u8::MAX);
                        let (ft, ff) = (far(jt), far(jf));
                        if ft || ff {
                            fixes.push((i, ft, ff));
                        }
                    }
                    _ => {}
                }
                pc += 1;
            }
            if fixes.is_empty() {
                break;
            }
            // Apply from the back so earlier indices stay valid.
            for (i, ft, ff) in fixes.into_iter().rev() {
                let mut tramp = Vec::new();
                if let Op::Jump { jt, jf, .. } = &mut self.ops[i] {
                    if ft {
                        let l = Label(self.labels);
                        self.labels += 1;
                        tramp.push(Op::Mark(l));
                        tramp.push(Op::Ja(*jt));
                        *jt = l;
                    }
                    if ff {
                        let l = Label(self.labels);
                        self.labels += 1;
                        tramp.push(Op::Mark(l));
                        tramp.push(Op::Ja(*jf));
                        *jf = l;
                    }
                }
                self.ops.splice(i + 1..i + 1, tramp);
            }
        }
        let pos = self.positions();
        let mut out = Vec::new();
        for op in &self.ops {
            let pc = out.len();
            let rel = |l: &Label| pos[l.0] - (pc + 1);
            match op {
                Op::Mark(_) => {}
                Op::Stmt(s) => out.push(*s),
                Op::Jump { code, k, jt, jf } => {
                    // Distances were bounded by the loop above.
                    let t = u8::try_from(rel(jt)).map_err(|_| pc)?;
                    let f = u8::try_from(rel(jf)).map_err(|_| pc)?;
                    out.push(SockFilter::jump(*code, *k, t, f));
                }
                Op::Ja(l) => {
                    let k = u32::try_from(rel(l)).map_err(|_| pc)?;
                    out.push(SockFilter::stmt(BPF_JMP | BPF_JA | BPF_K, k));
                }
            }
        }
        Ok(out)
    }

    fn positions(&self) -> Vec<usize> {
        let mut pos = vec![0usize; self.labels];
        let mut pc = 0;
        for op in &self.ops {
            match op {
                Op::Mark(l) => pos[l.0] = pc,
                _ => pc += 1,
            }
        }
        pos
    }
}

/// Compile a validated rule set.
pub fn compile_rules(rules: &RuleSet) -> Result<Program, CompileError> {
    let arch = rules.arch();
    let mut asm = Asm::default();

    // Architecture check.
    let arch_ok = asm.label();
    let kill = asm.label();
    asm.ld(OFF_ARCH);
    asm.jump(BPF_JEQ, arch.audit_arch(), arch_ok, kill);
    asm.mark(kill);
    asm.ret(Action::KillProcess);
    asm.mark(arch_ok);
    asm.ld(OFF_NR);
    if rules.kills_x32() {
        let x32 = asm.label();
        let native = asm.label();
        asm.jump(BPF_JSET, X32_SYSCALL_BIT, x32, native);
        asm.mark(x32);
        asm.ret(Action::KillProcess);
        asm.mark(native);
    }

    let ranges = ranges(rules);
    emit_tree(&mut asm, &ranges);

    let insns = asm
        .assemble()
        .map_err(|at| CompileError::JumpOutOfRange { arch, at })?;
    if insns.len() > BPF_MAXINSNS {
        return Err(CompileError::ProgramTooLong {
            arch,
            len: insns.len(),
            max: BPF_MAXINSNS,
        });
    }
    Ok(Program {
        arch,
        insns,
        skipped: rules.skipped().to_vec(),
    })
}

/// Emit a balanced binary search over `ranges` (which cover a contiguous
/// span of numbers); the accumulator holds the syscall number on entry.
fn emit_tree(asm: &mut Asm, ranges: &[NrRange]) {
    match ranges {
        [] => {}
        [one] => emit_leaf(asm, &one.decision),
        // A single number between two runs with the same decision: one
        // `jeq` instead of two `jge`s.
        [a, b, c] if b.lo == b.hi && a.decision == c.decision => {
            let hit = asm.label();
            let miss = asm.label();
            asm.jump(BPF_JEQ, b.lo, hit, miss);
            asm.mark(miss);
            emit_leaf(asm, &a.decision);
            asm.mark(hit);
            emit_leaf(asm, &b.decision);
        }
        _ => {
            let mid = ranges.len().div_ceil(2);
            let high = asm.label();
            let low = asm.label();
            asm.jump(BPF_JGE, ranges[mid].lo, high, low);
            asm.mark(low);
            emit_tree(asm, &ranges[..mid]);
            asm.mark(high);
            emit_tree(asm, &ranges[mid..]);
        }
    }
}

/// Emit the decision for one range. Arguments are loaded only here, and only
/// for decisions with conditional guards.
fn emit_leaf(asm: &mut Asm, decision: &NrDecision) {
    for (cond, action) in &decision.conditional {
        let hit = asm.label();
        let miss = asm.label();
        match cond {
            ArgCond::AnyBitsLow32 { arg, mask } => {
                asm.ld(off_arg_lo(*arg));
                asm.jump(BPF_JSET, *mask, hit, miss);
            }
            ArgCond::NoBitsLow32 { arg, mask } => {
                asm.ld(off_arg_lo(*arg));
                asm.jump(BPF_JSET, *mask, miss, hit);
            }
            ArgCond::EqualsLow32 { arg, values } => {
                asm.ld(off_arg_lo(*arg));
                for (i, v) in values.iter().enumerate() {
                    if i + 1 == values.len() {
                        asm.jump(BPF_JEQ, *v, hit, miss);
                    } else {
                        let next = asm.label();
                        asm.jump(BPF_JEQ, *v, hit, next);
                        asm.mark(next);
                    }
                }
            }
        }
        asm.mark(hit);
        asm.ret(*action);
        asm.mark(miss);
    }
    asm.ret(decision.otherwise);
}
