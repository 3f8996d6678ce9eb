//! `docs/seccomp.md` publishes the deny table generated from the guard
//! tables; this test fails when the document is stale. Regenerate with
//! `SPLASH_BLESS=1 cargo test -p splash-seccomp --test doc`.

use std::path::PathBuf;

const BEGIN: &str = "<!-- BEGIN GENERATED TABLE: cargo test -p splash-seccomp --test doc -->\n";
const END: &str = "<!-- END GENERATED TABLE -->";

#[test]
fn published_table_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/seccomp.md");
    let text = std::fs::read_to_string(&path).expect("docs/seccomp.md is readable");
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        panic!("docs/seccomp.md lacks the generated-table markers");
    };
    let start = b + BEGIN.len();
    let current = &text[start..e];
    let wanted = splash_seccomp::doc::reviewed_tables_markdown();
    if current == wanted {
        return;
    }
    if std::env::var("SPLASH_BLESS").as_deref() == Ok("1") {
        let updated = format!("{}{}{}", &text[..start], wanted, &text[e..]);
        std::fs::write(&path, updated).expect("docs/seccomp.md is writable");
        return;
    }
    panic!(
        "docs/seccomp.md is stale; regenerate with `SPLASH_BLESS=1 cargo test -p splash-seccomp --test doc`"
    );
}
