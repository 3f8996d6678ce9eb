//! Classic BPF instructions as seccomp uses them, and `struct seccomp_data`.

use serde::{Deserialize, Serialize};

/// One `struct sock_filter` instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(C)]
pub struct SockFilter {
    /// The operation: class, size or operation, and source bits.
    pub code: u16,
    /// The jump offset when the condition holds.
    pub jt: u8,
    /// The jump offset when it does not.
    pub jf: u8,
    /// The constant operand.
    pub k: u32,
}

impl SockFilter {
    /// A non-jump instruction.
    pub const fn stmt(code: u16, k: u32) -> SockFilter {
        SockFilter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// A conditional jump.
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> SockFilter {
        SockFilter { code, jt, jf, k }
    }

    /// The 8-byte native encoding: `u16 code, u8 jt, u8 jf, u32 k`, little
    /// endian (all supported architectures are little endian).
    pub fn to_bytes(self) -> [u8; 8] {
        let c = self.code.to_le_bytes();
        let k = self.k.to_le_bytes();
        [c[0], c[1], self.jt, self.jf, k[0], k[1], k[2], k[3]]
    }

    /// Decode one instruction from its 8-byte encoding.
    pub fn from_bytes(b: [u8; 8]) -> SockFilter {
        SockFilter {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

// Instruction classes.
/// Load into the accumulator.
pub const BPF_LD: u16 = 0x00;
/// Load into the index register.
pub const BPF_LDX: u16 = 0x01;
/// Store the accumulator to scratch memory.
pub const BPF_ST: u16 = 0x02;
/// Store the index register to scratch memory.
pub const BPF_STX: u16 = 0x03;
/// Arithmetic and logic on the accumulator.
pub const BPF_ALU: u16 = 0x04;
/// Jump.
pub const BPF_JMP: u16 = 0x05;
/// Return a seccomp action.
pub const BPF_RET: u16 = 0x06;
/// Register transfer between accumulator and index.
pub const BPF_MISC: u16 = 0x07;
// Sizes and modes.
/// Operand size: a 32-bit word.
pub const BPF_W: u16 = 0x00;
/// Mode: immediate constant.
pub const BPF_IMM: u16 = 0x00;
/// Mode: absolute offset into `seccomp_data`.
pub const BPF_ABS: u16 = 0x20;
/// Mode: scratch memory slot.
pub const BPF_MEM: u16 = 0x60;
/// Mode: packet length (`seccomp_data` size).
pub const BPF_LEN: u16 = 0x80;
// ALU and jump operations.
/// ALU operation: add.
pub const BPF_ADD: u16 = 0x00;
/// ALU operation: subtract.
pub const BPF_SUB: u16 = 0x10;
/// ALU operation: multiply.
pub const BPF_MUL: u16 = 0x20;
/// ALU operation: divide.
pub const BPF_DIV: u16 = 0x30;
/// ALU operation: or.
pub const BPF_OR: u16 = 0x40;
/// ALU operation: and.
pub const BPF_AND: u16 = 0x50;
/// ALU operation: shift left.
pub const BPF_LSH: u16 = 0x60;
/// ALU operation: shift right.
pub const BPF_RSH: u16 = 0x70;
/// ALU operation: negate.
pub const BPF_NEG: u16 = 0x80;
/// ALU operation: modulo.
pub const BPF_MOD: u16 = 0x90;
/// ALU operation: exclusive or.
pub const BPF_XOR: u16 = 0xa0;
/// Jump operation: always.
pub const BPF_JA: u16 = 0x00;
/// Jump operation: equal.
pub const BPF_JEQ: u16 = 0x10;
/// Jump operation: greater than (unsigned).
pub const BPF_JGT: u16 = 0x20;
/// Jump operation: greater than or equal (unsigned).
pub const BPF_JGE: u16 = 0x30;
/// Jump operation: any of the bits set.
pub const BPF_JSET: u16 = 0x40;
/// Source: the constant `k`.
pub const BPF_K: u16 = 0x00;
/// Source: the index register.
pub const BPF_X: u16 = 0x08;
/// Return source: the accumulator.
pub const BPF_A: u16 = 0x10;
/// Misc operation: copy the accumulator to the index register.
pub const BPF_TAX: u16 = 0x00;
/// Misc operation: copy the index register to the accumulator.
pub const BPF_TXA: u16 = 0x80;

/// Scratch memory words.
pub const BPF_MEMWORDS: usize = 16;
/// The kernel's limit on filter length (`BPF_MAXINSNS`).
pub const BPF_MAXINSNS: usize = 4096;

// Seccomp return values.
/// Kill the whole process (`SIGSYS`).
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
/// Kill the calling thread.
pub const SECCOMP_RET_KILL_THREAD: u32 = 0x0000_0000;
/// Send `SIGSYS` to the thread.
pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;
/// Fail the call with the errno in the low 16 bits.
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// Ask a user-space supervisor.
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// Hand the call to a tracer.
pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
/// Allow and log.
pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
/// Allow the call.
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// Mask of the action bits of a return value.
pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
/// Mask of the data bits of a return value.
pub const SECCOMP_RET_DATA: u32 = 0x0000_ffff;

/// `EPERM` (the same number on every supported architecture).
pub const EPERM: u16 = 1;
/// `ENOSYS` (the same number on every supported architecture).
pub const ENOSYS: u16 = 38;
/// `EACCES` (the same number on every supported architecture).
pub const EACCES: u16 = 13;

/// Offset of `nr` in `struct seccomp_data` (the other offsets follow).
pub const OFF_NR: u32 = 0;
/// Offset of `arch`.
pub const OFF_ARCH: u32 = 4;
/// Offset of the low 32 bits of `instruction_pointer`.
pub const OFF_IP_LO: u32 = 8;
/// Size of `struct seccomp_data` in bytes.
pub const SECCOMP_DATA_LEN: u32 = 64;

/// Offset of the low 32 bits of syscall argument `i` (little endian).
pub const fn off_arg_lo(i: u8) -> u32 {
    16 + 8 * i as u32
}

/// Offset of the high 32 bits of syscall argument `i` (little endian).
pub const fn off_arg_hi(i: u8) -> u32 {
    20 + 8 * i as u32
}

/// `struct seccomp_data`: what a filter sees of a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeccompData {
    /// The syscall number.
    pub nr: u32,
    /// The `AUDIT_ARCH_*` value of the calling ABI.
    pub arch: u32,
    /// The instruction pointer at the call.
    pub instruction_pointer: u64,
    /// The six syscall arguments.
    pub args: [u64; 6],
}

impl SeccompData {
    /// A syscall `nr` on `arch` with all arguments zero.
    pub fn new(arch: crate::Arch, nr: u32) -> SeccompData {
        SeccompData {
            nr,
            arch: arch.audit_arch(),
            ..SeccompData::default()
        }
    }

    /// The same syscall with argument `i` set to `v`.
    #[must_use]
    pub fn with_arg(mut self, i: usize, v: u64) -> SeccompData {
        if let Some(slot) = self.args.get_mut(i) {
            *slot = v;
        }
        self
    }

    /// The 32-bit word at byte offset `off`, as `BPF_LD|BPF_W|BPF_ABS` reads
    /// it, or `None` for an offset the kernel rejects (unaligned or out of
    /// range).
    pub fn word(&self, off: u32) -> Option<u32> {
        if !off.is_multiple_of(4) || off >= SECCOMP_DATA_LEN {
            return None;
        }
        let lo = |v: u64| v as u32;
        let hi = |v: u64| (v >> 32) as u32;
        Some(match off {
            0 => self.nr,
            4 => self.arch,
            8 => lo(self.instruction_pointer),
            12 => hi(self.instruction_pointer),
            _ => {
                let i = ((off - 16) / 8) as usize;
                let v = self.args[i];
                if (off - 16).is_multiple_of(8) {
                    lo(v)
                } else {
                    hi(v)
                }
            }
        })
    }
}

/// A readable name for a seccomp return value.
pub fn ret_name(k: u32) -> String {
    match k & SECCOMP_RET_ACTION_FULL {
        SECCOMP_RET_KILL_PROCESS => "KILL_PROCESS".to_owned(),
        SECCOMP_RET_KILL_THREAD => "KILL_THREAD".to_owned(),
        SECCOMP_RET_TRAP => "TRAP".to_owned(),
        SECCOMP_RET_ERRNO => match (k & SECCOMP_RET_DATA) as u16 {
            EPERM => "ERRNO(EPERM)".to_owned(),
            ENOSYS => "ERRNO(ENOSYS)".to_owned(),
            EACCES => "ERRNO(EACCES)".to_owned(),
            e => format!("ERRNO({e})"),
        },
        SECCOMP_RET_USER_NOTIF => "USER_NOTIF".to_owned(),
        SECCOMP_RET_TRACE => "TRACE".to_owned(),
        SECCOMP_RET_LOG => "LOG".to_owned(),
        SECCOMP_RET_ALLOW => "ALLOW".to_owned(),
        _ => format!("{k:#x}"),
    }
}
