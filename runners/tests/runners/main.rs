//! Runner tests against the real kernel: the runners run as real child
//! processes and their effect is observed in the programs they execute.
//!
//! Host-dependent tests skip loudly (`SKIP:` on stderr) when the host lacks
//! Landlock, seccomp or `setpriv`, and fail instead under
//! `SPLASH_REQUIRE_HOST=1`. Every denial has a control that shows the same
//! probe succeeding without that layer.

mod cgroup;
mod common;
mod fds;
mod landlock;
mod limits;
mod one_hop;
mod seccomp;
mod usage;
