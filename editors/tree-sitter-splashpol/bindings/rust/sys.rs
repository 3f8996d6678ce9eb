//! The generated parser's C entry point.

#![expect(
    unsafe_code,
    reason = "the one declaration of the generated C parser's entry point"
)]

use tree_sitter_language::LanguageFn;

// SAFETY: `src/parser.c`, compiled and linked by `build.rs`, defines
// `const TSLanguage *tree_sitter_splashpol(void)` with this signature.
unsafe extern "C" {
    fn tree_sitter_splashpol() -> *const ();
}

// SAFETY: `tree_sitter_splashpol` takes no arguments and returns a pointer to
// the parser's static `TSLanguage`, valid for the whole program, which is what
// `LanguageFn::from_raw` requires.
pub const LANGUAGE: LanguageFn = unsafe { LanguageFn::from_raw(tree_sitter_splashpol) };
