//! The stable diagnostic codes.
//!
//! Every [`Diagnostic`](super::Diagnostic) carries one [`Code`]. The string
//! form ([`Code::as_str`]) is a public contract: it is what `splashc check`
//! prints, what its JSON output and the language server report, and what
//! `docs/diagnostics.md` and the corpus (`tests/corpus`) name. A code never
//! changes meaning; a new check gets a new code, and a retired code is never
//! reused.

use std::fmt;
use std::str::FromStr;

/// Declares [`Code`], its string forms and [`Code::ALL`] from one list, so a
/// variant cannot be added without its string or left out of `ALL`.
macro_rules! codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $text:literal,)*) => {
        /// A stable diagnostic code (see `docs/diagnostics.md`). Each variant
        /// says when it is reported; [`Code::as_str`] gives its string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Code {
            /// Every code, in the order of `docs/diagnostics.md`.
            pub const ALL: &[Code] = &[$(Code::$variant,)*];

            /// The stable string, e.g. `splash::check::overlapping-mount`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }
        }
    };
}

codes! {
    /// The text does not follow the grammar at the marked place (the message says what was
    /// expected there); only that statement or block entry is skipped.
    Syntax = "splash::parse::syntax",
    /// A statement, or an entry of a `limits`, `landlock`, `cgroup` or `io` block, starts with
    /// a word that is not a keyword there.
    UnknownKeyword = "splash::parse::unknown-keyword",
    /// A word in `seccomp strict-allowlist { ... }` is not a syscall name (letters, digits and
    /// `_`).
    InvalidSyscallName = "splash::parse::invalid-syscall-name",
    /// The file does not start with the `splashpol 1` header.
    MissingVersion = "splash::parse::missing-version",
    /// The file is not UTF-8; reported at its first invalid byte sequence, and the file is not
    /// checked further.
    InvalidUtf8 = "splash::parse::invalid-utf8",
    /// A string contains a control character or a bidirectional formatting character.
    ControlCharacter = "splash::parse::control-character",
    /// The header names a language version other than `1`.
    UnsupportedVersion = "splash::parse::unsupported-version",
    /// Text after the policy's closing `}`: a `}` that closed the policy early (the
    /// statements after it are still checked), an extra `}`, or anything else.
    TrailingText = "splash::parse::trailing-text",
    /// A second `policy` block: a file holds one policy.
    SecondPolicy = "splash::parse::second-policy",
    /// The parse tree does not have the shape the grammar promises: a bug in the parse-tree
    /// builder, never in the policy.
    ParseInternal = "splash::parse::internal",
    /// The policy the checker accepted breaks a `Policy` invariant: a bug in the checker, never
    /// in the policy.
    CheckInternal = "splash::check::internal",
    /// A bare number where a unit belongs (`memory 512`).
    MissingUnit = "splash::check::missing-unit",
    /// The word after a number is not a unit (`MB`, `sec`).
    UnknownUnit = "splash::check::unknown-unit",
    /// A unit of the wrong kind, e.g. a byte size for a duration.
    WrongUnit = "splash::check::wrong-unit",
    /// A unit on a plain count (`processes 64 files`).
    UnexpectedUnit = "splash::check::unexpected-unit",
    /// A number with a fraction; numbers are whole.
    FractionalNumber = "splash::check::fractional-number",
    /// The number, or the number times its unit, does not fit its type.
    NumberOverflow = "splash::check::number-overflow",
    /// `unlimited`, or 2^64 - 1, where a finite bound is required.
    InfiniteLimit = "splash::check::infinite-limit",
    /// A limit, ceiling or deadline of zero where zero has no useful meaning.
    ZeroValue = "splash::check::zero-value",
    /// The `limits` `cpu` value is not a whole number of seconds.
    InexactDuration = "splash::check::inexact-duration",
    /// A private `/tmp` or tmpfs root size outside 1 byte to 2^63 - 1 bytes.
    TmpfsSizeOutOfRange = "splash::check::tmpfs-size-out-of-range",
    /// `args []` or `network-broker ... ids []`.
    EmptyList = "splash::check::empty-list",
    /// A path that is not absolute and normalized.
    InvalidPath = "splash::check::invalid-path",
    /// A root id or network-origin id that breaks the token rule.
    InvalidSelectorId = "splash::check::invalid-selector-id",
    /// Two roots (host-backed or tmpfs) with the same id.
    DuplicateRootId = "splash::check::duplicate-root-id",
    /// The policy has no `bubblewrap` or no `worker` statement.
    MissingStatement = "splash::check::missing-statement",
    /// A statement that may appear once appears again.
    DuplicateStatement = "splash::check::duplicate-statement",
    /// The same entry twice inside one statement or block.
    DuplicateEntry = "splash::check::duplicate-entry",
    /// Two worker-visible destinations overlap, or one lies in `/proc`, `/dev` or a private
    /// `/tmp`.
    OverlappingMount = "splash::check::overlapping-mount",
    /// The worker, a runner or an `allow-exec` target does not lie inside a read-only `runtime`
    /// mount.
    ExecutableOutsideRuntime = "splash::check::executable-outside-runtime",
    /// The worker and the limit, Landlock and combined runners are not distinct paths.
    RunnerPathConflict = "splash::check::runner-path-conflict",
    /// A `limits` or `landlock` block with neither its own runner nor `runner combined`.
    MissingRunner = "splash::check::missing-runner",
    /// A `limits` or `landlock` block names its own runner while `runner combined` is set.
    RunnerConflict = "splash::check::runner-conflict",
    /// Warning: `runner combined` is set but there is nothing for it to apply.
    IdleCombinedRunner = "splash::check::idle-combined-runner",
    /// A `limits` block without any limit.
    EmptyLimits = "splash::check::empty-limits",
    /// More than 32 `allow-exec` targets.
    TooManyLandlockTargets = "splash::check::too-many-landlock-targets",
    /// The same `allow-exec` path twice.
    DuplicateLandlockTarget = "splash::check::duplicate-landlock-target",
    /// Warning: an `allow-exec` target that is the worker or a runner, which never needs
    /// listing.
    RedundantLandlockTarget = "splash::check::redundant-landlock-target",
    /// A `quota` on a `read-only` root.
    QuotaOnReadOnly = "splash::check::quota-on-read-only",
    /// A quota with project id 0.
    ZeroProjectId = "splash::check::zero-project-id",
    /// A quota root without `pin mounts`.
    QuotaRequiresPinnedMounts = "splash::check::quota-requires-pinned-mounts",
    /// A quota root without `user-namespaces none`.
    QuotaRequiresNoUserNamespaces = "splash::check::quota-requires-no-user-namespaces",
    /// A quota root without `quota aggregate`.
    QuotaRequiresAggregate = "splash::check::quota-requires-aggregate",
    /// The per-project quota ceilings add up to more than `quota aggregate` allows.
    AggregateQuotaExceeded = "splash::check::aggregate-quota-exceeded",
    /// Warning: two roots with the same project id give different ceilings.
    InconsistentProjectQuota = "splash::check::inconsistent-project-quota",
    /// A `read-write` host root without a quota and without `host-writes unbounded`.
    UnverifiedWriteRoot = "splash::check::unverified-write-root",
    /// A `read-write` host root without a quota while `quota aggregate` is set.
    UnverifiedRootWithAggregate = "splash::check::unverified-root-with-aggregate",
    /// `writes bounded` with a `read-write` host root without a quota.
    BoundedWritesUnverifiedRoot = "splash::check::bounded-writes-unverified-root",
    /// Warning: `host-writes unbounded` together with `writes bounded`, where it has no effect.
    EscapeHatchOverridden = "splash::check::escape-hatch-overridden",
    /// Warning: `host-writes unbounded` but no `read-write` root lacks a quota.
    UnusedEscapeHatch = "splash::check::unused-escape-hatch",
    /// No active selection fits `tmpfs aggregate`: the bounded private `/tmp` alone, or one
    /// tmpfs root with it, exceeds the bound (such a root can never be activated).
    AggregateTmpfsExceeded = "splash::check::aggregate-tmpfs-exceeded",
    /// Warning: the tmpfs roots a manifest may activate together, with a bounded private
    /// `/tmp`, can exceed `tmpfs aggregate`; activation refuses such a selection.
    AggregateTmpfsOvercommitted = "splash::check::aggregate-tmpfs-overcommitted",
    /// `tmpfs aggregate` with a private `/tmp` without a size.
    AggregateTmpfsUnboundedTmp = "splash::check::aggregate-tmpfs-unbounded-tmp",
    /// `active-roots max` above 256.
    ActiveRootsTooLarge = "splash::check::active-roots-too-large",
    /// Warning: `active-roots max 0` while roots are registered.
    NoActiveRoots = "splash::check::no-active-roots",
    /// `pin executables` without `pin mounts`.
    PinExecutablesWithoutMounts = "splash::check::pin-executables-without-mounts",
    /// `writes bounded` without `user-namespaces none`.
    BoundedWritesRequiresNoUserNamespaces = "splash::check::bounded-writes-requires-no-user-namespaces",
    /// `writes bounded` with a private `/tmp` without a size.
    BoundedWritesUnboundedTmp = "splash::check::bounded-writes-unbounded-tmp",
    /// `seccomp strict-allowlist { }` with no names.
    EmptyAllowlist = "splash::check::empty-allowlist",
    /// A strict allowlist of more than 512 names.
    AllowlistTooLong = "splash::check::allowlist-too-long",
    /// A syscall listed twice in the strict allowlist.
    DuplicateSyscall = "splash::check::duplicate-syscall",
    /// A strict allowlist without `execve`, which the launch chain needs to exec the worker.
    AllowlistMissingExecve = "splash::check::allowlist-missing-execve",
    /// A strict allowlist names `clone3`, which is never allowed.
    AllowlistClone3 = "splash::check::allowlist-clone3",
    /// A strict allowlist names a syscall of the specification's fixed deny set, which the
    /// strict filter answers with `EPERM` before the list.
    AllowlistDeniedSyscall = "splash::check::allowlist-denied-syscall",
    /// Warning: a strict allowlist names one of the reviewed additions to the fixed deny set,
    /// which lifts its guard (unlisted, it answers `EPERM`).
    AllowlistGuardedSyscall = "splash::check::allowlist-guarded-syscall",
    /// A name that is a syscall on none of the supported architectures.
    UnknownSyscall = "splash::check::unknown-syscall",
    /// Warning: a syscall that exists on some supported architectures but not all.
    SyscallMissingOnArch = "splash::check::syscall-missing-on-arch",
    /// A `cgroup` block without any controller limit.
    CgroupWithoutLimit = "splash::check::cgroup-without-limit",
    /// An `io MAJOR:MINOR { }` entry without a rate.
    EmptyIo = "splash::check::empty-io",
    /// Two `io` entries for the same device.
    DuplicateIoDevice = "splash::check::duplicate-io-device",
    /// Warning: the `call` deadline is longer than the `session` deadline.
    CallDeadlineExceedsSession = "splash::check::call-deadline-exceeds-session",
    /// `network-broker` without `pin mounts`.
    BrokerRequiresPinnedMounts = "splash::check::broker-requires-pinned-mounts",
    /// The worker-visible broker socket path, the `network-broker` destination and
    /// `/broker.sock`, is longer than the 107 bytes a Unix socket address holds.
    BrokerSocketPathTooLong = "splash::check::broker-socket-path-too-long",
    /// An `expect` entry the policy can never meet: `writable` on a read-only mount,
    /// `exec allowed` outside the Landlock list, `syscall denied` of a syscall the filter
    /// allows, a bound the policy does not set.
    ImpossibleExpectation = "splash::check::impossible-expectation",
    /// An `identity user` or `group` id of 0 (root) or above 4294967294.
    IdentityIdOutOfRange = "splash::check::identity-id-out-of-range",
    /// `identity dynamic` with a read-write host root: a later session may get the same uid
    /// and own what this one wrote.
    DynamicIdentityWritableRoot = "splash::check::dynamic-identity-writable-root",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Codes order by their string, so diagnostics at the same place sort the
/// same way whatever the order of the variants.
impl Ord for Code {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A string that is not the string form of any [`Code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a splashc diagnostic code")]
pub struct UnknownCode(String);

impl FromStr for Code {
    type Err = UnknownCode;

    /// The code whose [`Code::as_str`] is `text` exactly.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| UnknownCode(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn codes_are_distinct_and_round_trip() {
        let strings: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(strings.len(), Code::ALL.len(), "two codes share a string");
        for &code in Code::ALL {
            assert_eq!(code.as_str().parse::<Code>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
            let name = code
                .as_str()
                .strip_prefix("splash::parse::")
                .or_else(|| code.as_str().strip_prefix("splash::check::"))
                .unwrap_or_else(|| panic!("{code} is neither a parse nor a check code"));
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{code}: names are lowercase kebab-case"
            );
        }
        assert_eq!(
            "splash::check::no-such-code".parse::<Code>(),
            Err(UnknownCode("splash::check::no-such-code".to_string()))
        );
    }

    #[test]
    fn order_is_the_order_of_the_strings() {
        let mut by_enum = Code::ALL.to_vec();
        by_enum.sort();
        let mut by_string = Code::ALL.to_vec();
        by_string.sort_by_key(|c| c.as_str());
        assert_eq!(by_enum, by_string);
    }

    /// `docs/diagnostics.md` has one `### `CODE` (severity)` heading for
    /// exactly the codes of [`Code::ALL`], and names no other code anywhere.
    #[test]
    fn the_docs_list_exactly_the_codes() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/diagnostics.md");
        let doc = std::fs::read_to_string(path).expect("docs/diagnostics.md");
        let all: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        let headings: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("### `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        let headed: BTreeSet<&str> = headings.iter().copied().collect();
        assert_eq!(headed.len(), headings.len(), "a code has two headings");
        let extra: Vec<_> = headed.difference(&all).collect();
        assert!(
            extra.is_empty(),
            "documented codes not in Code::ALL: {extra:?}"
        );
        let missing: Vec<_> = all.difference(&headed).collect();
        assert!(
            missing.is_empty(),
            "codes without a heading in docs/diagnostics.md: {missing:?}"
        );
        for (i, _) in doc.match_indices("splash::") {
            let word: String = doc[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-'))
                .collect();
            // `splash::parse::*` and `splash::check::*` name a family.
            if word.ends_with("::") {
                continue;
            }
            assert!(
                all.contains(word.as_str()),
                "docs/diagnostics.md names `{word}`"
            );
        }
    }
}
