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
    bounded_distance(&a, &b, usize::MAX).unwrap_or(usize::MAX)
}

/// [`edit_distance`] of two character strings when it is at most `limit`,
/// else `None`, without finishing the table: the distance is at least the
/// difference of the lengths, and once two consecutive rows exceed the limit
/// every later row does too (a cell draws on its own row, the row above and
/// the row two above plus one).
fn bounded_distance(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit || bag_distance(a, b) > limit {
        return None;
    }
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    let mut previous_row_over = false;
    for i in 1..=a.len() {
        let mut row_min = d[i * w];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
            row_min = row_min.min(v);
        }
        let row_over = row_min > limit;
        if row_over && previous_row_over {
            return None;
        }
        previous_row_over = row_over;
    }
    let distance = d[a.len() * w + b.len()];
    (distance <= limit).then_some(distance)
}

/// A lower bound of [`edit_distance`] computed in linear time: the larger
/// count of ASCII characters one string has more of than the other (an edit
/// adds or removes at most one of each side; a transposition neither).
/// Characters beyond ASCII are not counted, which only lowers the bound.
fn bag_distance(a: &[char], b: &[char]) -> usize {
    let mut counts = [0i32; 128];
    for &c in a {
        if let Some(slot) = counts.get_mut(c as usize) {
            *slot += 1;
        }
    }
    for &c in b {
        if let Some(slot) = counts.get_mut(c as usize) {
            *slot -= 1;
        }
    }
    let (mut more, mut fewer) = (0usize, 0usize);
    for &n in &counts {
        match n.cmp(&0) {
            std::cmp::Ordering::Greater => more += n.unsigned_abs() as usize,
            std::cmp::Ordering::Less => fewer += n.unsigned_abs() as usize,
            std::cmp::Ordering::Equal => {}
        }
    }
    more.max(fewer)
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
    let lower: Vec<char> = word.chars().map(|c| c.to_ascii_lowercase()).collect();
    let limit = (lower.len() / 3).clamp(1, 3);
    let prefix_counts = word.len() >= 4;
    let mut best: Option<(usize, &'a str)> = None;
    let mut candidate = Vec::new();
    for c in candidates {
        // Only a strictly closer candidate replaces the best one.
        let bound = match best {
            None => limit,
            Some((0, _)) => break,
            Some((bd, _)) => bd - 1,
        };
        candidate.clear();
        candidate.extend(c.chars().map(|ch| ch.to_ascii_lowercase()));
        let d = if prefix_counts && candidate.starts_with(&lower) {
            Some(limit).filter(|&l| l <= bound)
        } else {
            bounded_distance(&lower, &candidate, bound)
        };
        if let Some(d) = d {
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

    /// The full table, as a reference for the bounded one.
    fn reference(a: &[char], b: &[char]) -> usize {
        let w = b.len() + 1;
        let mut d = vec![0usize; (a.len() + 1) * w];
        for i in 0..=a.len() {
            for j in 0..=b.len() {
                d[i * w + j] = if i == 0 || j == 0 {
                    i + j
                } else {
                    let cost = usize::from(a[i - 1] != b[j - 1]);
                    let mut v = (d[(i - 1) * w + j] + 1)
                        .min(d[i * w + j - 1] + 1)
                        .min(d[(i - 1) * w + j - 1] + cost);
                    if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                        v = v.min(d[(i - 2) * w + j - 2] + 1);
                    }
                    v
                };
            }
        }
        d[a.len() * w + b.len()]
    }

    #[test]
    fn the_bound_changes_no_answer() {
        let words = [
            "", "a", "ab", "ba", "abc", "acb", "open", "opne", "openat", "openat2", "pone",
            "xxxxxx", "unshare", "unshar", "nushare", "setns", "stens", "é", "e",
        ];
        for a in words {
            for b in words {
                let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                let full = reference(&a, &b);
                for limit in 0..6 {
                    let expected = (full <= limit).then_some(full);
                    assert_eq!(
                        bounded_distance(&a, &b, limit),
                        expected,
                        "{a:?} {b:?} {limit}"
                    );
                }
            }
        }
    }

    /// What `suggest` answered before it bounded its work: the closest
    /// candidate within the limit, the earliest on a tie.
    fn reference_suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
        let lower: Vec<char> = word.chars().map(|c| c.to_ascii_lowercase()).collect();
        let limit = (lower.len() / 3).clamp(1, 3);
        let mut best: Option<(usize, &'a str)> = None;
        for &c in candidates {
            let cl: Vec<char> = c.chars().map(|ch| ch.to_ascii_lowercase()).collect();
            let d = if word.len() >= 4 && cl.starts_with(&lower) {
                limit
            } else {
                reference(&lower, &cl)
            };
            if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, c));
            }
        }
        best.map(|(_, c)| c)
    }

    #[test]
    fn suggestions_match_the_unbounded_search() {
        let names: Vec<&str> = crate::Arch::ALL
            .iter()
            .flat_map(|&a| crate::tables::table(a).iter().map(|&(n, _)| n))
            .collect();
        let tries = [
            "opne",
            "unshar",
            "UNSHARE",
            "clone",
            "clon3",
            "bpff",
            "x",
            "io_uring",
            "mmap2",
            "rt_sigreturnn",
            "fork",
            "statx2",
            "keyctll",
            "",
            "zz",
            "pidfd_getf",
            "a",
        ];
        for word in tries {
            assert_eq!(
                suggest(word, names.iter().copied()),
                reference_suggest(word, &names),
                "{word}"
            );
        }
    }
}
