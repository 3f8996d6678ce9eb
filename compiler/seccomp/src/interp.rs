//! A userspace cBPF interpreter with the kernel's seccomp semantics, used to
//! validate generated programs against [`crate::RuleSet::decide`] and to
//! count executed instructions in benchmarks.

use thiserror::Error;

use crate::bpf::{
    BPF_A, BPF_ABS, BPF_ADD, BPF_ALU, BPF_AND, BPF_DIV, BPF_IMM, BPF_JA, BPF_JEQ, BPF_JGE, BPF_JGT,
    BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_LDX, BPF_LEN, BPF_LSH, BPF_MAXINSNS, BPF_MEM,
    BPF_MEMWORDS, BPF_MISC, BPF_MOD, BPF_MUL, BPF_NEG, BPF_OR, BPF_RET, BPF_RSH, BPF_ST, BPF_STX,
    BPF_SUB, BPF_TAX, BPF_TXA, BPF_W, BPF_X, BPF_XOR, OFF_ARCH, OFF_NR, SECCOMP_DATA_LEN,
    SECCOMP_RET_ALLOW, SeccompData, SockFilter,
};

/// Why a program cannot run (the kernel would refuse to load it).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InterpError {
    /// Empty, or longer than the kernel's limit (the length).
    #[error("program length {0} is outside 1..=4096")]
    BadLength(usize),
    /// An opcode seccomp does not accept.
    #[error("instruction {pc}: unsupported opcode {code:#06x}")]
    BadOpcode {
        /// The instruction index.
        pc: usize,
        /// The opcode.
        code: u16,
    },
    /// A load outside `struct seccomp_data` or not word aligned.
    #[error("instruction {pc}: load from offset {k} outside seccomp_data")]
    BadLoad {
        /// The instruction index.
        pc: usize,
        /// The offset.
        k: u32,
    },
    /// A jump beyond the last instruction.
    #[error("instruction {pc}: jump past the end of the program")]
    JumpOutOfRange {
        /// The instruction index.
        pc: usize,
    },
    /// A scratch-memory slot beyond [`crate::bpf::BPF_MEMWORDS`].
    #[error("instruction {pc}: scratch slot {k} out of range")]
    BadScratch {
        /// The instruction index.
        pc: usize,
        /// The slot.
        k: u32,
    },
    /// A division or modulo by the constant 0.
    #[error("instruction {pc}: division by zero")]
    DivideByZero {
        /// The instruction index.
        pc: usize,
    },
    /// The last instruction is not a return.
    #[error("the program runs off its end")]
    NoReturn,
}

/// The result of running a program on one `seccomp_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Execution {
    /// The `SECCOMP_RET_*` value returned.
    pub ret: u32,
    /// Instructions executed, including the `ret`.
    pub executed: usize,
    /// Whether anything other than `nr` and `arch` was loaded.
    pub loaded_other_fields: bool,
}

/// Run `insns` on `data`.
pub fn execute(insns: &[SockFilter], data: &SeccompData) -> Result<Execution, InterpError> {
    if insns.is_empty() || insns.len() > BPF_MAXINSNS {
        return Err(InterpError::BadLength(insns.len()));
    }
    let mut a: u32 = 0;
    let mut x: u32 = 0;
    let mut mem = [0u32; BPF_MEMWORDS];
    let mut pc = 0usize;
    let mut executed = 0usize;
    let mut loaded_other_fields = false;
    loop {
        let Some(&ins) = insns.get(pc) else {
            return Err(InterpError::NoReturn);
        };
        executed += 1;
        let class = ins.code & 0x07;
        let mut next = pc + 1;
        match class {
            BPF_LD | BPF_LDX => {
                let v = match ins.code & 0xe0 {
                    BPF_ABS if ins.code & 0x18 == BPF_W && class == BPF_LD => {
                        if ins.k != OFF_NR && ins.k != OFF_ARCH {
                            loaded_other_fields = true;
                        }
                        data.word(ins.k)
                            .ok_or(InterpError::BadLoad { pc, k: ins.k })?
                    }
                    BPF_IMM => ins.k,
                    BPF_LEN => SECCOMP_DATA_LEN,
                    BPF_MEM => *mem
                        .get(ins.k as usize)
                        .ok_or(InterpError::BadScratch { pc, k: ins.k })?,
                    _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
                };
                if class == BPF_LD {
                    a = v;
                } else {
                    x = v;
                }
            }
            BPF_ST | BPF_STX => {
                let slot = mem
                    .get_mut(ins.k as usize)
                    .ok_or(InterpError::BadScratch { pc, k: ins.k })?;
                *slot = if class == BPF_ST { a } else { x };
            }
            BPF_ALU => {
                let src = if ins.code & BPF_X != 0 { x } else { ins.k };
                a = match ins.code & 0xf0 {
                    BPF_ADD => a.wrapping_add(src),
                    BPF_SUB => a.wrapping_sub(src),
                    BPF_MUL => a.wrapping_mul(src),
                    BPF_DIV => a.checked_div(src).ok_or(InterpError::DivideByZero { pc })?,
                    BPF_MOD => a.checked_rem(src).ok_or(InterpError::DivideByZero { pc })?,
                    BPF_OR => a | src,
                    BPF_AND => a & src,
                    BPF_XOR => a ^ src,
                    BPF_LSH => a.checked_shl(src).unwrap_or(0),
                    BPF_RSH => a.checked_shr(src).unwrap_or(0),
                    BPF_NEG => a.wrapping_neg(),
                    _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
                };
            }
            BPF_JMP => {
                let op = ins.code & 0xf0;
                if op == BPF_JA {
                    next = pc + 1 + ins.k as usize;
                } else {
                    let src = if ins.code & BPF_X != 0 { x } else { ins.k };
                    let taken = match op {
                        BPF_JEQ => a == src,
                        BPF_JGT => a > src,
                        BPF_JGE => a >= src,
                        BPF_JSET => a & src != 0,
                        _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
                    };
                    next = pc + 1 + usize::from(if taken { ins.jt } else { ins.jf });
                }
                if next >= insns.len() {
                    return Err(InterpError::JumpOutOfRange { pc });
                }
            }
            BPF_RET => {
                let ret = match ins.code & 0x18 {
                    BPF_K => ins.k,
                    BPF_A => a,
                    _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
                };
                return Ok(Execution {
                    ret,
                    executed,
                    loaded_other_fields,
                });
            }
            BPF_MISC => match ins.code & 0xf8 {
                BPF_TAX => x = a,
                BPF_TXA => a = x,
                _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
            },
            _ => return Err(InterpError::BadOpcode { pc, code: ins.code }),
        }
        pc = next;
    }
}

/// The kernel's seccomp action-cache rule: emulate the program knowing only
/// `arch` and `nr`; if every instruction on the path is one the emulator
/// understands (loads of `nr` or `arch`, `ja`, `jeq`/`jge`/`jgt`/`jset` with a
/// constant, `and` with a constant, `ret` with a constant) and the path
/// returns `ALLOW`, the kernel serves that syscall from its bitmap without
/// running the filter.
pub fn is_constant_allow(insns: &[SockFilter], arch: u32, nr: u32) -> bool {
    let mut a: u32 = 0;
    let mut pc = 0usize;
    while let Some(&ins) = insns.get(pc) {
        let code = ins.code;
        pc += 1;
        if code == BPF_LD | BPF_W | BPF_ABS {
            a = match ins.k {
                OFF_NR => nr,
                OFF_ARCH => arch,
                _ => return false,
            };
        } else if code == BPF_JMP | BPF_JA {
            pc += ins.k as usize;
        } else if code == BPF_JMP | BPF_JEQ | BPF_K
            || code == BPF_JMP | BPF_JGE | BPF_K
            || code == BPF_JMP | BPF_JGT | BPF_K
            || code == BPF_JMP | BPF_JSET | BPF_K
        {
            let taken = match code & 0xf0 {
                BPF_JEQ => a == ins.k,
                BPF_JGE => a >= ins.k,
                BPF_JGT => a > ins.k,
                _ => a & ins.k != 0,
            };
            pc += usize::from(if taken { ins.jt } else { ins.jf });
        } else if code == BPF_ALU | BPF_AND | BPF_K {
            a &= ins.k;
        } else if code == BPF_RET | BPF_K {
            return ins.k == SECCOMP_RET_ALLOW;
        } else {
            return false;
        }
    }
    false
}

/// The static checks the kernel applies when a seccomp filter is attached
/// (classic-BPF validation plus seccomp's opcode and offset restrictions):
/// length 1..=4096, only seccomp-permitted opcodes, aligned in-range loads,
/// in-range scratch slots, no constant division by zero or oversized shift,
/// every jump inside the program, and a `ret` as the last instruction.
/// (The kernel's check that scratch memory is written before it is read is
/// not repeated here.)
pub fn verify(insns: &[SockFilter]) -> Result<(), InterpError> {
    let n = insns.len();
    if n == 0 || n > BPF_MAXINSNS {
        return Err(InterpError::BadLength(n));
    }
    for (pc, ins) in insns.iter().enumerate() {
        let code = ins.code;
        let bad = || InterpError::BadOpcode { pc, code };
        let remaining = n - pc - 1;
        match code & 0x07 {
            BPF_LD | BPF_LDX => match code {
                c if c == BPF_LD | BPF_W | BPF_ABS => {
                    if ins.k % 4 != 0 || ins.k >= SECCOMP_DATA_LEN {
                        return Err(InterpError::BadLoad { pc, k: ins.k });
                    }
                }
                c if c == BPF_LD | BPF_W | BPF_LEN
                    || c == BPF_LDX | BPF_W | BPF_LEN
                    || c == BPF_LD | BPF_IMM
                    || c == BPF_LDX | BPF_IMM => {}
                c if c == BPF_LD | BPF_MEM || c == BPF_LDX | BPF_MEM => {
                    if ins.k as usize >= BPF_MEMWORDS {
                        return Err(InterpError::BadScratch { pc, k: ins.k });
                    }
                }
                _ => return Err(bad()),
            },
            BPF_ST | BPF_STX => {
                if code & !0x07 != 0 {
                    return Err(bad());
                }
                if ins.k as usize >= BPF_MEMWORDS {
                    return Err(InterpError::BadScratch { pc, k: ins.k });
                }
            }
            BPF_ALU => {
                let op = code & 0xf0;
                let src = code & 0x08;
                if code & !0xf8 != BPF_ALU
                    || !matches!(
                        op,
                        BPF_ADD
                            | BPF_SUB
                            | BPF_MUL
                            | BPF_DIV
                            | BPF_AND
                            | BPF_OR
                            | BPF_XOR
                            | BPF_LSH
                            | BPF_RSH
                            | BPF_NEG
                    )
                {
                    return Err(bad());
                }
                if src == BPF_K && op == BPF_DIV && ins.k == 0 {
                    return Err(InterpError::DivideByZero { pc });
                }
                if src == BPF_K && matches!(op, BPF_LSH | BPF_RSH) && ins.k >= 32 {
                    return Err(bad());
                }
            }
            BPF_JMP => {
                let op = code & 0xf0;
                if op == BPF_JA {
                    if code != BPF_JMP | BPF_JA {
                        return Err(bad());
                    }
                    if ins.k as usize >= remaining {
                        return Err(InterpError::JumpOutOfRange { pc });
                    }
                } else {
                    if code & !0xf8 != BPF_JMP
                        || !matches!(op, BPF_JEQ | BPF_JGT | BPF_JGE | BPF_JSET)
                    {
                        return Err(bad());
                    }
                    if usize::from(ins.jt) >= remaining || usize::from(ins.jf) >= remaining {
                        return Err(InterpError::JumpOutOfRange { pc });
                    }
                }
            }
            BPF_RET => {
                if code != BPF_RET | BPF_K && code != BPF_RET | BPF_A {
                    return Err(bad());
                }
            }
            BPF_MISC => {
                if code != BPF_MISC | BPF_TAX && code != BPF_MISC | BPF_TXA {
                    return Err(bad());
                }
            }
            _ => return Err(bad()),
        }
    }
    if insns[n - 1].code & 0x07 != BPF_RET {
        return Err(InterpError::NoReturn);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arch;
    use crate::bpf::{SECCOMP_RET_ERRNO, off_arg_hi, off_arg_lo};

    fn st(code: u16, k: u32) -> SockFilter {
        SockFilter::stmt(code, k)
    }

    #[test]
    fn sock_filter_has_the_kernel_layout() {
        assert_eq!(
            std::mem::size_of::<SockFilter>(),
            std::mem::size_of::<libc::sock_filter>()
        );
        assert_eq!(
            std::mem::align_of::<SockFilter>(),
            std::mem::align_of::<libc::sock_filter>()
        );
        let f = SockFilter::jump(0x15, 0x1234_5678, 7, 9);
        assert_eq!(f.to_bytes(), [0x15, 0, 7, 9, 0x78, 0x56, 0x34, 0x12]);
        assert_eq!(SockFilter::from_bytes(f.to_bytes()), f);
    }

    #[test]
    fn loads_read_little_endian_halves() {
        let d = SeccompData::new(Arch::X86_64, 7).with_arg(2, 0x1111_2222_3333_4444);
        assert_eq!(d.word(off_arg_lo(2)), Some(0x3333_4444));
        assert_eq!(d.word(off_arg_hi(2)), Some(0x1111_2222));
        assert_eq!(d.word(2), None);
        assert_eq!(d.word(64), None);
    }

    #[test]
    fn alu_scratch_and_index_register() {
        // A = nr; A = A * 3 + 1; M[0] = A; X = 5; A = A - X; ret A.
        let p = [
            st(BPF_LD | BPF_W | BPF_ABS, 0),
            st(BPF_ALU | BPF_MUL | BPF_K, 3),
            st(BPF_ALU | BPF_ADD | BPF_K, 1),
            st(BPF_ST, 0),
            st(BPF_LDX | BPF_IMM, 5),
            st(BPF_ALU | BPF_SUB | BPF_X, 0),
            st(BPF_MISC | BPF_TAX, 0),
            st(BPF_LD | BPF_MEM, 0),
            st(BPF_ALU | BPF_XOR | BPF_X, 0),
            st(BPF_RET | BPF_A, 0),
        ];
        verify(&p).expect("valid");
        let e = execute(&p, &SeccompData::new(Arch::X86_64, 10)).expect("runs");
        assert_eq!(e.ret, 31 ^ 26);
        assert_eq!(e.executed, p.len());
        assert!(!e.loaded_other_fields);
    }

    #[test]
    fn verify_rejects_what_the_kernel_rejects() {
        let ret = st(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        assert_eq!(verify(&[]), Err(InterpError::BadLength(0)));
        assert!(verify(&[st(BPF_LD | BPF_W | BPF_ABS, 2), ret]).is_err());
        assert!(verify(&[st(BPF_LD | BPF_W | BPF_ABS, 64), ret]).is_err());
        assert!(verify(&[SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), ret]).is_err());
        assert!(verify(&[st(BPF_JMP | BPF_JA, 1), ret]).is_err());
        assert!(verify(&[st(BPF_ALU | BPF_DIV | BPF_K, 0), ret]).is_err());
        assert!(verify(&[st(BPF_LD | BPF_W | BPF_ABS, 0)]).is_err());
        assert!(verify(&[st(BPF_ALU | BPF_MOD | BPF_K, 3), ret]).is_err());
        assert!(verify(&[st(BPF_LD | BPF_W | BPF_ABS, 0), ret]).is_ok());
    }

    #[test]
    fn cache_emulation_follows_the_kernel_rule() {
        let allow = st(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        let errno = st(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1);
        let a = Arch::X86_64.audit_arch();
        // nr == 5 → errno, else allow.
        let p = [
            st(BPF_LD | BPF_W | BPF_ABS, 0),
            SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, 1),
            errno,
            allow,
        ];
        assert!(is_constant_allow(&p, a, 4));
        assert!(!is_constant_allow(&p, a, 5));
        // Loading an argument on the path makes it ineligible.
        let q = [st(BPF_LD | BPF_W | BPF_ABS, 16), allow];
        assert!(!is_constant_allow(&q, a, 4));
        // So does an instruction the emulator does not know.
        let r = [st(BPF_LDX | BPF_IMM, 1), allow];
        assert!(!is_constant_allow(&r, a, 4));
    }
}
