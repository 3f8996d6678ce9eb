use super::*;

#[test]
fn smoke() {
    let src = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/splash/bin/worker\"\n  runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n}\n";
    let out = check_source("p", src);
    assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
    assert!(out.policy.is_some());
}

#[test]
fn show_policies() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        let src = std::fs::read_to_string(&p).unwrap();
        let out = check_source("x", &src);
        eprintln!("== {} policy={}", p.display(), out.policy.is_some());
        eprint!("{}", out.render_human(&p.display().to_string(), &src));
    }
}
