//! [`SyscallName`]: a syscall name one of the supported architectures has.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{Arch, suggest_syscall, syscall_number, tables};

/// A syscall name known on at least one supported architecture (the names
/// of [`Arch::syscalls`]); the name a strict allowlist lists.
///
/// Built only by [`SyscallName::new`], which refuses any other name (the
/// policy checker reports that refusal with its span), and serialized as the
/// plain name.
///
/// ```
/// use splash_seccomp::{Arch, SyscallName};
/// let execve = SyscallName::new("execve").expect("known");
/// assert_eq!(execve.number(Arch::X86_64), Some(59));
/// assert!(SyscallName::new("exceve").is_err());
/// ```
///
/// There is no other way to build one:
///
/// ```compile_fail
/// let name = splash_seccomp::SyscallName("exceve");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SyscallName(&'static str);

/// Why a name is not a [`SyscallName`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown syscall `{name}`{}", .suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
pub struct UnknownSyscall {
    /// The name as written.
    pub name: String,
    /// The closest known name, if one is close enough.
    pub suggestion: Option<&'static str>,
}

impl SyscallName {
    /// The syscall called `name` on at least one of [`Arch::ALL`].
    pub fn new(name: &str) -> Result<Self, UnknownSyscall> {
        Arch::ALL
            .iter()
            .find_map(|&arch| {
                let table = tables::table(arch);
                table
                    .binary_search_by(|&(n, _)| n.cmp(name))
                    .ok()
                    .map(|i| SyscallName(table[i].0))
            })
            .ok_or_else(|| UnknownSyscall {
                name: name.to_owned(),
                suggestion: suggest_syscall(name),
            })
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The syscall's number on `arch`, if the architecture has it.
    pub fn number(self, arch: Arch) -> Option<u32> {
        syscall_number(arch, self.0)
    }
}

impl Borrow<str> for SyscallName {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl fmt::Debug for SyscallName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for SyscallName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for SyscallName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for SyscallName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::new(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn only_names_of_a_supported_architecture_are_syscall_names() {
        for name in [
            "execve",
            "read",
            "riscv_flush_icache",
            "open",
            "clone3",
            "mount",
        ] {
            assert_eq!(SyscallName::new(name).map(SyscallName::as_str), Ok(name));
        }
        assert_eq!(
            SyscallName::new("exceve"),
            Err(UnknownSyscall {
                name: "exceve".to_owned(),
                suggestion: Some("execve"),
            })
        );
        for bad in ["", "EXECVE", "execve ", "exec\0ve", "x32_read"] {
            assert!(SyscallName::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            SyscallName::new("exceve").expect_err("unknown").to_string(),
            "unknown syscall `exceve` (did you mean `execve`?)"
        );
        let open = SyscallName::new("open").expect("open");
        assert_eq!(open.number(Arch::X86_64), Some(2));
        assert_eq!(open.number(Arch::Aarch64), None);
    }

    #[test]
    fn names_serialize_as_plain_strings_in_name_order() {
        let set: BTreeSet<SyscallName> = ["write", "execve", "read"]
            .iter()
            .map(|n| SyscallName::new(n).expect("known"))
            .collect();
        let json = serde_json::to_string(&set).expect("serialize");
        assert_eq!(json, r#"["execve","read","write"]"#);
        let strings: BTreeSet<String> = serde_json::from_str(&json).expect("strings");
        assert_eq!(serde_json::to_string(&strings).expect("serialize"), json);
        let back: BTreeSet<SyscallName> = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, set);
        assert!(set.contains("read"));
        let e = serde_json::from_str::<SyscallName>(r#""exceve""#).expect_err("unknown");
        assert!(e.to_string().contains("unknown syscall `exceve`"), "{e}");
    }
}
