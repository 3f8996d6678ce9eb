//! `docs/seccomp.md` publishes the deny table generated from the guard
//! tables; this test fails when the document is stale. Regenerate with
//! `SPLASH_BLESS=1 cargo test -p splash-seccomp --test doc`.

use std::path::PathBuf;

use splash_require_host::bless_command;
use splash_require_host::snapshot::check_snapshot_between;

const BEGIN: &str = "<!-- BEGIN GENERATED TABLE: cargo test -p splash-seccomp --test doc -->\n";
const END: &str = "<!-- END GENERATED TABLE -->";

#[test]
fn published_table_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/seccomp.md");
    let wanted = splash_seccomp::doc::reviewed_tables_markdown();
    if let Err(message) = check_snapshot_between(&path, BEGIN, END, &wanted, bless_command!()) {
        panic!("{message}");
    }
}
