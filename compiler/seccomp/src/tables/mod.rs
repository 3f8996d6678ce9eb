//! Per-architecture syscall tables.
//!
//! Each table is a static array of `(name, number)` pairs sorted by name, so a
//! name lookup is a binary search. Numbers are the native 64-bit ABI numbers
//! (`seccomp_data.nr`) for that architecture.

use crate::Arch;

mod aarch64;
mod riscv64;
mod x86_64;

/// The table for `arch`.
pub(crate) fn table(arch: Arch) -> &'static [(&'static str, u32)] {
    match arch {
        Arch::X86_64 => x86_64::TABLE,
        Arch::Aarch64 => aarch64::TABLE,
        Arch::Riscv64 => riscv64::TABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn tables_are_sorted_by_name_and_numbers_are_unique() {
        for arch in Arch::ALL {
            let t = table(arch);
            for pair in t.windows(2) {
                assert!(
                    pair[0].0 < pair[1].0,
                    "{}: {:?} before {:?}",
                    arch.name(),
                    pair[0],
                    pair[1]
                );
            }
            let numbers: BTreeSet<u32> = t.iter().map(|&(_, nr)| nr).collect();
            assert_eq!(numbers.len(), t.len(), "{}: duplicate numbers", arch.name());
        }
    }

    #[test]
    fn aarch64_and_riscv64_share_the_generic_table() {
        let a: BTreeSet<_> = table(Arch::Aarch64).iter().copied().collect();
        let r: BTreeSet<_> = table(Arch::Riscv64).iter().copied().collect();
        let only_a: Vec<_> = a.difference(&r).collect();
        let only_r: Vec<_> = r.difference(&a).collect();
        assert_eq!(only_a, vec![&("renameat", 38)]);
        assert_eq!(
            only_r,
            vec![&("riscv_flush_icache", 259), &("riscv_hwprobe", 258)]
        );
    }
}
