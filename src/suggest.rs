//! "Did you mean …?": the known name nearest to one a person got wrong.
//!
//! A name is near another when one can be made from the other by at most two edits
//! (inserting, deleting or replacing a character, or swapping two neighbours), compared
//! without regard to case: `devtols` and `DevTools` are both near `devtools`. Names of
//! one or two characters get no suggestion, since every short name is near every other.
//! Where a mistake is a different word rather than a typo (`date` for `created`), the
//! caller keeps its own table of such words and asks here only for typos.

/// The most edits between a name and the one suggested for it.
pub const MAX_EDITS: usize = 2;

/// The candidate nearest to `name` (at most [`MAX_EDITS`] edits away; the first of equals),
/// unless `name` is itself one of them.
pub fn closest<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let wanted = name.to_lowercase();
    if wanted.chars().count() < 3 {
        return None;
    }
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            return None;
        }
        let d = edit_distance(&wanted, &c.to_lowercase());
        if d <= MAX_EDITS && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The optimal string alignment distance between `a` and `b`, in characters: the edits
/// of Levenshtein plus a swap of two neighbouring characters as one edit.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows are enough: the one before the previous is where a swap looks back to.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_inserts_deletes_replacements_and_swaps() {
        let cases = [
            ("", "", 0),
            ("abc", "", 3),
            ("", "abc", 3),
            ("devtools", "devtools", 0),
            ("devtols", "devtools", 1),
            ("devtoolz", "devtools", 1),
            ("dveools", "devtools", 2),
            ("dvetools", "devtools", 1),
            ("created", "crated", 1),
            ("date", "created", 4),
            ("日本語", "日本", 1),
        ];
        for (a, b, want) in cases {
            assert_eq!(edit_distance(a, b), want, "{a} -> {b}");
            assert_eq!(edit_distance(b, a), want, "{b} -> {a}");
        }
    }

    #[test]
    fn the_nearest_known_name_is_suggested_within_two_edits() {
        let known = ["devtools", "nihongo", "description", "descriptor"];
        let near = |name: &str| closest(name, known.iter().copied());
        assert_eq!(near("devtols"), Some("devtools"));
        assert_eq!(near("DevTools"), Some("devtools"));
        assert_eq!(near("nihngo"), Some("nihongo"));
        assert_eq!(near("descripton"), Some("description"), "the first of two as near");
        assert_eq!(near("payments"), None, "nothing near");
        assert_eq!(near("devtools"), None, "a known name needs no suggestion");
        assert_eq!(closest("ab", ["abc"]), None, "too short to guess");
        assert_eq!(closest("x", Vec::<&str>::new()), None);
    }
}
