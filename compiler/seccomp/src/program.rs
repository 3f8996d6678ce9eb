//! A compiled program: bytes, listing and statistics.

use std::fmt::Write as _;

use crate::bpf::{
    BPF_A, BPF_ABS, BPF_ALU, BPF_JA, BPF_JEQ, BPF_JGE, BPF_JGT, BPF_JMP, BPF_JSET, BPF_K, BPF_LD,
    BPF_RET, BPF_W, OFF_ARCH, OFF_NR, SockFilter, ret_name,
};
use crate::{Arch, interp, syscall_name};

/// A compiled seccomp program for one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The architecture the program checks for.
    pub arch: Arch,
    /// The instructions, in `struct sock_filter` layout.
    pub insns: Vec<SockFilter>,
    /// Strict-list names that `arch` does not have and that were skipped.
    pub skipped: Vec<String>,
}

/// Size and cost figures of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramStats {
    /// Number of instructions.
    pub len: usize,
    /// The most instructions any syscall can execute (longest path from the
    /// first instruction to a `ret`).
    pub worst_case_executed: usize,
    /// Known syscalls of the architecture that the kernel's action cache
    /// serves without running the filter (see [`interp::is_constant_allow`]).
    pub cache_eligible_syscalls: usize,
    /// Known syscalls of the architecture.
    pub known_syscalls: usize,
}

impl Program {
    /// The raw `struct sock_filter` array as the kernel (and bwrap's
    /// `--seccomp`) reads it.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.insns.iter().flat_map(|i| i.to_bytes()).collect()
    }

    /// Figures for reports and benchmarks.
    pub fn stats(&self) -> ProgramStats {
        let table = self.arch.syscalls();
        let cache_eligible_syscalls = table
            .iter()
            .filter(|&&(_, nr)| interp::is_constant_allow(&self.insns, self.arch.audit_arch(), nr))
            .count();
        ProgramStats {
            len: self.insns.len(),
            worst_case_executed: longest_path(&self.insns),
            cache_eligible_syscalls,
            known_syscalls: table.len(),
        }
    }

    /// A human-readable listing: one instruction a line with its index,
    /// encoding, mnemonic with absolute jump targets, and a comment naming
    /// loaded fields, compared syscalls and return actions.
    pub fn disassemble(&self) -> String {
        let acc = accumulator_sources(&self.insns);
        let mut out = String::new();
        for (pc, ins) in self.insns.iter().enumerate() {
            let target = |off: u32| pc + 1 + off as usize;
            let class = ins.code & 0x07;
            let op = ins.code & 0xf0;
            let (text, comment) = if class == BPF_LD && ins.code == BPF_LD | BPF_W | BPF_ABS {
                (format!("ld [{}]", ins.k), field_name(ins.k))
            } else if class == BPF_JMP && op == BPF_JA {
                (format!("ja {}", target(ins.k)), String::new())
            } else if class == BPF_JMP {
                let name = match op {
                    BPF_JEQ => "jeq",
                    BPF_JGT => "jgt",
                    BPF_JGE => "jge",
                    BPF_JSET => "jset",
                    _ => "j?",
                };
                let comment = match acc[pc] {
                    Some(OFF_NR) if op == BPF_JSET => "x32 bit".to_owned(),
                    Some(OFF_NR) => syscall_name(self.arch, ins.k).unwrap_or("").to_owned(),
                    Some(OFF_ARCH) => self.arch.name().to_owned(),
                    _ => String::new(),
                };
                (
                    format!(
                        "{name} #{:#x}, {}, {}",
                        ins.k,
                        target(u32::from(ins.jt)),
                        target(u32::from(ins.jf))
                    ),
                    comment,
                )
            } else if ins.code == BPF_RET | BPF_K {
                (format!("ret #{:#x}", ins.k), ret_name(ins.k))
            } else if ins.code == BPF_RET | BPF_A {
                ("ret a".to_owned(), String::new())
            } else if class == BPF_ALU {
                (format!("alu {:#x} #{:#x}", ins.code, ins.k), String::new())
            } else {
                (
                    format!("raw {:#06x} {} {} {:#x}", ins.code, ins.jt, ins.jf, ins.k),
                    String::new(),
                )
            };
            let bytes: String = ins.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
            let _ = if comment.is_empty() {
                writeln!(out, "{pc:04}  {bytes}  {text}")
            } else {
                writeln!(out, "{pc:04}  {bytes}  {text:<32} ; {comment}")
            };
        }
        out
    }
}

fn field_name(off: u32) -> String {
    match off {
        0 => "nr".to_owned(),
        4 => "arch".to_owned(),
        8 => "instruction_pointer low".to_owned(),
        12 => "instruction_pointer high".to_owned(),
        16..=63 => {
            let i = (off - 16) / 8;
            let half = if (off - 16).is_multiple_of(8) {
                "low"
            } else {
                "high"
            };
            format!("args[{i}] {half}")
        }
        _ => String::new(),
    }
}

/// For each instruction, the `seccomp_data` offset the accumulator holds on
/// every path reaching it, when that is one offset.
fn accumulator_sources(insns: &[SockFilter]) -> Vec<Option<u32>> {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Unreached,
        Known(Option<u32>),
    }
    let mut st = vec![S::Unreached; insns.len() + 1];
    if !insns.is_empty() {
        st[0] = S::Known(None);
    }
    let merge = |slot: &mut S, v: Option<u32>| {
        *slot = match *slot {
            S::Unreached => S::Known(v),
            S::Known(old) if old == v => S::Known(v),
            S::Known(_) => S::Known(None),
        }
    };
    for pc in 0..insns.len() {
        let S::Known(cur) = st[pc] else { continue };
        let ins = insns[pc];
        let class = ins.code & 0x07;
        let succ: Vec<(usize, Option<u32>)> = if ins.code == BPF_LD | BPF_W | BPF_ABS {
            vec![(pc + 1, Some(ins.k))]
        } else if class == BPF_JMP && ins.code & 0xf0 == BPF_JA {
            vec![(pc + 1 + ins.k as usize, cur)]
        } else if class == BPF_JMP {
            vec![
                (pc + 1 + usize::from(ins.jt), cur),
                (pc + 1 + usize::from(ins.jf), cur),
            ]
        } else if class == BPF_RET {
            vec![]
        } else {
            vec![(pc + 1, None)]
        };
        for (t, v) in succ {
            if let Some(slot) = st.get_mut(t) {
                merge(slot, v);
            }
        }
    }
    st.iter()
        .take(insns.len())
        .map(|s| match s {
            S::Known(v) => *v,
            S::Unreached => None,
        })
        .collect()
}

/// Longest path (in executed instructions) from the first instruction to a
/// `ret`. cBPF jumps only forward, so the program is a DAG.
pub(crate) fn longest_path(insns: &[SockFilter]) -> usize {
    let n = insns.len();
    let mut best = vec![0usize; n + 1];
    for pc in (0..n).rev() {
        let ins = insns[pc];
        let class = ins.code & 0x07;
        let at = |t: usize| best.get(t).copied().unwrap_or(0);
        best[pc] = 1 + if class == BPF_RET {
            0
        } else if class == BPF_JMP && ins.code & 0xf0 == BPF_JA {
            at(pc + 1 + ins.k as usize)
        } else if class == BPF_JMP {
            at(pc + 1 + usize::from(ins.jt)).max(at(pc + 1 + usize::from(ins.jf)))
        } else {
            at(pc + 1)
        };
    }
    best.first().copied().unwrap_or(0)
}
