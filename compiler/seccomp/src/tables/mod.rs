//! Per-architecture syscall tables.
//!
//! Each table is a static array of `(name, number)` pairs sorted by name, so a
//! name lookup is a binary search. Numbers are the native 64-bit ABI numbers
//! (`seccomp_data.nr`) for that architecture.

use std::sync::LazyLock;

use crate::Arch;

mod aarch64;
mod generic;
mod riscv64;
mod x86_64;

type Table = Vec<(&'static str, u32)>;

/// The generic table merged with one architecture's extra entries, sorted by
/// name.
fn merged(extra: &[(&'static str, u32)]) -> Table {
    let mut t: Table = generic::GENERIC.iter().chain(extra).copied().collect();
    t.sort_unstable_by_key(|&(name, _)| name);
    t
}

static AARCH64: LazyLock<Table> = LazyLock::new(|| merged(aarch64::EXTRA));
static RISCV64: LazyLock<Table> = LazyLock::new(|| merged(riscv64::EXTRA));

/// The table for `arch`.
pub(crate) fn table(arch: Arch) -> &'static [(&'static str, u32)] {
    match arch {
        Arch::X86_64 => x86_64::TABLE,
        Arch::Aarch64 => &AARCH64,
        Arch::Riscv64 => &RISCV64,
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
