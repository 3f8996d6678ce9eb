//! Policy source bytes through the front end `splashc check` runs:
//! `splashpol::check_bytes`, then its JSON report and, for inputs of at most
//! 256 bytes, its human rendering.
//!
//! Invariants, besides not panicking:
//! - every span (and related span) lies inside the text the spans point
//!   into, on character boundaries;
//! - a policy is produced exactly when there is no error;
//! - the formatter never reports an internal error (it checks that its
//!   output parses and keeps every word and comment), and what it lays out
//!   checks to the same policy and the same diagnostic codes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use splashpol::format::{FormatError, format_source};
use splashpol::{CheckOutcome, RenderOptions, Severity, Span, check_bytes, check_source};

/// Inputs up to this size are also rendered for humans.
const RENDER_MAX_BYTES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let (source, outcome) = check_bytes("fuzz.splashpol", data);
    check_spans(&source, &outcome);
    assert_eq!(
        outcome.policy.is_some(),
        !outcome.has_errors(),
        "a policy must come exactly when there is no error"
    );
    if !outcome.diagnostics.is_empty() {
        let json = outcome.to_json_with_positions(&source);
        assert!(json.is_object(), "the JSON report is an object");
        // The human rendering costs more than the check itself: only for
        // short inputs, so the check runs more often.
        if data.len() <= RENDER_MAX_BYTES {
            let options = RenderOptions {
                color: false,
                ..RenderOptions::default()
            };
            let _ = outcome.render_human_with("fuzz.splashpol", &source, options);
        }
    }
    if std::str::from_utf8(data).is_ok() {
        check_format(&source, &outcome);
    }
});

fn check_spans(source: &str, outcome: &CheckOutcome) {
    let inside = |span: Span| {
        span.start <= span.end
            && span.end <= source.len()
            && source.is_char_boundary(span.start)
            && source.is_char_boundary(span.end)
    };
    for d in &outcome.diagnostics {
        assert!(inside(d.span), "span {:?} of {}", d.span, d.code.as_str());
        for (span, _) in &d.related {
            assert!(
                inside(*span),
                "related span {span:?} of {}",
                d.code.as_str()
            );
        }
        assert!(
            !d.message.is_empty(),
            "{} has an empty message",
            d.code.as_str()
        );
    }
}

/// The (severity, code) of each diagnostic, sorted: what must survive
/// formatting (spans move).
fn codes(outcome: &CheckOutcome) -> Vec<(Severity, &'static str)> {
    let mut v: Vec<_> = outcome
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.code.as_str()))
        .collect();
    v.sort();
    v
}

fn check_format(source: &str, outcome: &CheckOutcome) {
    let formatted = match format_source(source) {
        Ok(text) => text,
        Err(FormatError::Syntax(_)) => return,
        Err(e) => panic!("the formatter failed on its own: {e}"),
    };
    if formatted == source {
        return;
    }
    let after = check_source("fuzz.splashpol", &formatted);
    assert_eq!(
        after.policy, outcome.policy,
        "formatting changed the checked policy"
    );
    assert_eq!(
        codes(&after),
        codes(outcome),
        "formatting changed the diagnostics"
    );
}
