//! Test support shared by every test crate: the one host-skip rule (below)
//! and the one snapshot mechanism ([`snapshot`]).
//!
//! Host-dependent tests call [`require_host`]: when the host lacks what the
//! test needs, the test is skipped *loudly* (a `SKIP:` line on stderr), and
//! when `SPLASH_REQUIRE_HOST=1` is set (`.ci/run` sets it) the skip becomes a
//! failure, so a CI run can never pass by skipping. The crate has no
//! dependencies so that any crate, however low in the graph, can use it as a
//! dev-dependency.

#![warn(missing_docs)]
pub mod snapshot;

/// Environment variable that turns a host skip into a failure.
pub const REQUIRE_HOST_VAR: &str = "SPLASH_REQUIRE_HOST";

/// Returns `true` when `available`; otherwise skips loudly (returns `false`)
/// or panics when host tests are required.
pub fn require_host(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    if std::env::var(REQUIRE_HOST_VAR).as_deref() == Ok("1") {
        panic!("{REQUIRE_HOST_VAR}=1 but this host lacks {what}");
    }
    eprintln!("SKIP: this host lacks {what} (set {REQUIRE_HOST_VAR}=1 to make this a failure)");
    false
}
