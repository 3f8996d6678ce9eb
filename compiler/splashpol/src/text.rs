//! Which characters the text of a policy may hold, and how text that did
//! not come from a checked policy is shown.
//!
//! One character class is forbidden in every string of the language (paths,
//! ids, the policy name, worker arguments): control characters (C0, DEL,
//! C1) and the bidirectional formatting characters, which make a path or id
//! read differently from what it is. The parser reports each one in source
//! ([`is_forbidden`] is what it asks), [`crate::model::AbsPath::new`]
//! refuses a path holding one, and [`crate::model::Policy`]'s language
//! rules refuse them in the name and the arguments, so a policy from source
//! and one from a compiled artifact are held to the same class.
//!
//! Text shown to people that may hold such a character (an error quoting a
//! file, `explain` and `diff` output) goes through [`escaped`], which
//! writes each forbidden character as `\u{…}`. For text of a checked policy
//! it changes nothing.

use std::fmt;

/// True for a character no string of the language may contain: a control
/// character (C0, DEL, C1) or a bidirectional formatting character
/// (U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069).
pub fn is_forbidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first forbidden character of `s` ([`is_forbidden`]) and its byte
/// offset, if any.
pub fn first_forbidden(s: &str) -> Option<(usize, char)> {
    s.char_indices().find(|&(_, c)| is_forbidden(c))
}

/// `text` for showing: [`Display`](fmt::Display) writes it with every
/// forbidden character ([`is_forbidden`]) as `\u{hex}` and every other
/// character as it is.
///
/// ```
/// use splashpol::text::escaped;
/// assert_eq!(escaped("/srv/a\tb\u{202e}").to_string(), "/srv/a\\u{9}b\\u{202e}");
/// assert_eq!(escaped("/srv/ü").to_string(), "/srv/ü");
/// ```
pub fn escaped(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// Text shown with its forbidden characters escaped; see [`escaped`].
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some((at, c)) = first_forbidden(rest) {
            f.write_str(&rest[..at])?;
            write!(f, "\\u{{{:x}}}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_is_controls_and_bidi_formatting() {
        for c in [
            '\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}',
        ] {
            assert!(is_forbidden(c), "{c:?}");
        }
        for c in [
            '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            assert!(is_forbidden(c), "{c:?}");
        }
        for c in ['a', '/', ' ', 'ü', '\u{a0}', '\u{200d}', '\u{2070}'] {
            assert!(!is_forbidden(c), "{c:?}");
        }
        assert_eq!(first_forbidden("ab\ncd\t"), Some((2, '\n')));
        assert_eq!(first_forbidden("abc"), None);
    }

    #[test]
    fn escaping_changes_only_forbidden_characters() {
        assert_eq!(escaped("a\u{1b}[2Jb").to_string(), "a\\u{1b}[2Jb");
        assert_eq!(escaped("\n\u{202e}").to_string(), "\\u{a}\\u{202e}");
        assert_eq!(escaped("/a \"b\" \\c").to_string(), "/a \"b\" \\c");
        assert_eq!(escaped("").to_string(), "");
    }
}
