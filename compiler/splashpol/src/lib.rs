//! The `.splashpol` policy language.
//!
//! Phases (data flows one way, each with its own error type):
//!
//! 1. `parse` — pest grammar (`grammar/splashpol.pest`) to an AST with spans
//!    (internal to this crate: [`syntax`] answers what tools ask of a
//!    source's text);
//! 2. `check` — names, units, paths, conflicts: AST to a typed [`model::Policy`],
//!    reporting every diagnostic at once;
//! 3. `activate` — bind a [`model::Policy`] to a capability manifest;
//! 4. `lower` — pure, deterministic lowering to a [`plan::LaunchPlan`];
//! 5. `emit` — render the launch plan (argv, JSON, cBPF).
//!
//! An `expect` block is checked against the policy ([`expect`]) but takes no
//! part in activation, lowering or the plan.
//!
//! Nothing in this crate touches the host filesystem or starts a process.

#![warn(missing_docs)]

pub mod activate;
pub mod artifact;
mod ast;
mod check;
mod diag;
pub mod diff;
pub mod emit;
pub mod expect;
pub mod explain;
pub mod format;
pub mod learn;
pub mod lower;
pub mod model;
mod parse;
pub mod plan;
mod span;
pub mod syntax;
pub mod text;
mod units;

pub use check::{check_bytes, check_source};
pub use diag::{CheckOutcome, Code, Diagnostic, RenderOptions, Severity, UnknownCode};
pub use span::Span;
