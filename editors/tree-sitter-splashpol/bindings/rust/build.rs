//! Compiles the generated parser (`src/parser.c`, committed; regenerate it
//! with the `generate` script beside `grammar.js` after editing it).

fn main() {
    let src = std::path::Path::new("src");
    cc::Build::new()
        .std("c11")
        .include(src)
        .file(src.join("parser.c"))
        .compile("tree-sitter-splashpol");
    for file in ["parser.c", "tree_sitter/parser.h"] {
        println!("cargo:rerun-if-changed=src/{file}");
    }
}
