//! Helpers shared by the integration tests.
//!
//! Host-dependent tests call [`require_host`]: when the host lacks what the
//! test needs, the test is skipped *loudly* (a `SKIP:` line on stderr), and
//! when `SPLASH_REQUIRE_HOST=1` is set (CI sets it) the skip becomes a
//! failure, so a CI run can never pass by skipping.

use std::path::{Path, PathBuf};

pub use splash_require_host::{REQUIRE_HOST_VAR, require_host};

/// The system Bubblewrap, if installed.
pub fn bwrap_path() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// The workspace root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
