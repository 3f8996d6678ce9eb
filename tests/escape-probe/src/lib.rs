//! What the escape probe's result lines mean, shared by every host-side
//! reader of them: the suite's battery and `splashc test --battery`.
//!
//! The probe itself (`src/main.rs`) is a separate, dependency-free program;
//! this library only interprets what it prints.

pub mod verdict;
