//! The `.splashpol` policy language for [tree-sitter]: the parser generated
//! from `grammar.js` (a transcription of `grammar/splashpol.pest`) and its
//! highlight query.
//!
//! ```
//! let mut parser = tree_sitter::Parser::new();
//! parser
//!     .set_language(&tree_sitter_splashpol::LANGUAGE.into())
//!     .expect("the generated ABI is one the runtime loads");
//! let tree = parser
//!     .parse("splashpol 1\npolicy \"p\" {\n  writes bounded\n}\n", None)
//!     .expect("a tree");
//! assert!(!tree.root_node().has_error());
//! ```
//!
//! [tree-sitter]: https://tree-sitter.github.io/

#![warn(missing_docs)]
mod sys;

/// The tree-sitter language of `.splashpol` files.
pub const LANGUAGE: tree_sitter_language::LanguageFn = sys::LANGUAGE;

/// The node types of the grammar (`src/node-types.json`).
pub const NODE_TYPES: &str = include_str!("../../src/node-types.json");

/// The highlight query (`queries/highlights.scm`).
pub const HIGHLIGHTS_QUERY: &str = include_str!("../../queries/highlights.scm");
