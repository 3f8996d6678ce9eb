//! The workspace's one "did you mean" helper: the closest of a list of known
//! words to a word that is not one of them. It lives in this crate, the
//! lowest one that needs it (for syscall names); the policy compiler uses it
//! for keywords, units and syscalls through its (private) `diag::suggest`.

/// Optimal string alignment distance by characters: insertions, deletions,
/// substitutions and transpositions of two adjacent characters cost 1 each.
/// O(len(a) * len(b)) time.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

/// The candidate closest to `word`, if it is close enough to be a plausible
/// misspelling: at most a third of the word's characters apart (at least 1,
/// at most 3), ignoring ASCII case. A candidate that starts with the word (a
/// truncated keyword such as `deny-known-escape`, at least four characters)
/// counts as exactly that far. Ties go to the earliest candidate, so results
/// are deterministic; words longer than 64 bytes get no suggestion.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.len() > 64 {
        return None;
    }
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let lower = word.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let c_lower = c.to_ascii_lowercase();
        let d = if lower.len() >= 4 && c_lower.starts_with(&lower) {
            limit
        } else {
            edit_distance(&lower, &c_lower)
        };
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(
            edit_distance("opne", "open"),
            1,
            "a transposition is one edit"
        );
        assert_eq!(edit_distance("é", "e"), 1, "by characters, not bytes");
    }

    #[test]
    fn suggestions() {
        let words = ["bubblewrap", "worker", "runtime"];
        assert_eq!(suggest("wroker", words), Some("worker"));
        assert_eq!(suggest("runtim", words), Some("runtime"));
        assert_eq!(suggest("WORKER", words), Some("worker"));
        assert_eq!(suggest("bubble", words), Some("bubblewrap"), "a prefix");
        assert_eq!(suggest("zzz", words), None);
        assert_eq!(
            suggest("ab", ["ba", "ab"]),
            Some("ab"),
            "closest, then earliest"
        );
        assert_eq!(
            suggest("ab", ["ax", "ay"]),
            Some("ax"),
            "ties go to the earliest"
        );
        assert_eq!(suggest(&"w".repeat(65), words), None);
    }
}
