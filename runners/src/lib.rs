//! Shared pieces of the fixed pre-exec runners.
