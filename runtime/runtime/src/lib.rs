//! Host side of a launch: bind, pin, spawn, supervise.
