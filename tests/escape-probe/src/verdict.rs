//! From one probe result line to a verdict: an attempt that worked although
//! one of its layers is in the sandbox is an escape.

/// Layers every plan has, whatever the policy says.
pub const ALWAYS_ON: [&str; 7] = [
    "namespaces",
    "no-new-privs",
    "cap-drop",
    "read-only-proc",
    "pid1-is-worker",
    "launcher-hygiene",
    "private-device-nodes",
];

/// What an attempt did, reduced to what a report shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// It worked (`ok`, or `reached (ERRNO)`: past the permission checks).
    Worked(String),
    /// It was refused: the errno, signal or reason.
    Refused(String),
    /// Nothing to try here, with the reason.
    NotApplicable(String),
}

/// The fields of one result line (`{"attempt", "result", "errno"?,
/// "signal"?, "code"?, "detail"?}`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Line<'a> {
    pub result: &'a str,
    pub errno: Option<&'a str>,
    pub signal: Option<&'a str>,
    pub code: Option<i64>,
    pub detail: Option<&'a str>,
}

impl Seen {
    /// What a result line says.
    pub fn from_line(l: &Line<'_>) -> Self {
        match l.result {
            "ok" => Seen::Worked("ok".into()),
            "reached" => Seen::Worked(format!("reached ({})", l.errno.unwrap_or("?"))),
            "n/a" => Seen::NotApplicable(l.detail.unwrap_or_default().into()),
            "denied" => Seen::Refused(l.errno.unwrap_or("denied").into()),
            "killed" => Seen::Refused(l.signal.unwrap_or("killed").into()),
            "timeout" => Seen::Refused("timeout".into()),
            "exit" => Seen::Refused(format!(
                "exit {}",
                l.code.map_or_else(|| "null".to_owned(), |c| c.to_string())
            )),
            "sent" => Seen::Refused("sent".into()),
            other => Seen::Refused(format!("unknown result {other}")),
        }
    }

    /// The signal attempt as the host saw it: whether its canary survived.
    pub fn of_canary(alive: bool) -> Self {
        if alive {
            Seen::Refused("canary survived".into())
        } else {
            Seen::Worked("canary killed".into())
        }
    }
}

/// The verdict on one attempt in one sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Refused.
    Held,
    /// It worked although one of its layers is present.
    Escaped,
    /// It worked and none of its layers is present: allowed by design.
    Allowed,
    /// Nothing to try.
    NotApplicable,
}

/// Whether any of `attempt_layers` is among `present`.
pub fn layer_present<A: AsRef<str>, P: AsRef<str>>(attempt_layers: &[A], present: &[P]) -> bool {
    attempt_layers
        .iter()
        .any(|l| present.iter().any(|p| p.as_ref() == l.as_ref()))
}

/// The verdict on an attempt with `attempt_layers` that did `seen` in a
/// sandbox with the layers `present`.
pub fn verdict<A: AsRef<str>, P: AsRef<str>>(
    attempt_layers: &[A],
    present: &[P],
    seen: &Seen,
) -> Verdict {
    match seen {
        Seen::Worked(_) if layer_present(attempt_layers, present) => Verdict::Escaped,
        Seen::Worked(_) => Verdict::Allowed,
        Seen::Refused(_) => Verdict::Held,
        Seen::NotApplicable(_) => Verdict::NotApplicable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_with_a_present_layer_is_an_escape() {
        let ok = Seen::from_line(&Line {
            result: "ok",
            ..Line::default()
        });
        assert_eq!(verdict(&["seccomp"], &["seccomp"], &ok), Verdict::Escaped);
        assert_eq!(verdict(&["seccomp"], &["landlock"], &ok), Verdict::Allowed);
        let refused = Seen::from_line(&Line {
            result: "denied",
            errno: Some("EPERM"),
            ..Line::default()
        });
        assert_eq!(refused, Seen::Refused("EPERM".into()));
        assert_eq!(verdict(&["seccomp"], &["seccomp"], &refused), Verdict::Held);
        let reached = Seen::from_line(&Line {
            result: "reached",
            errno: Some("EBUSY"),
            ..Line::default()
        });
        assert_eq!(reached, Seen::Worked("reached (EBUSY)".into()));
    }
}
