//! "Did you mean": the closest of some names to what was typed.

/// The candidate closest to `typed`, when it is close enough to be what
/// was meant: an edit distance of at most a third of the longer name (at
/// least 1). Ties go to the first.
pub(crate) fn closest<'a>(
    typed: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == typed {
            continue;
        }
        let distance = strsim::damerau_levenshtein(typed, candidate);
        let allowed = (typed.chars().count().max(candidate.chars().count()) / 3).max(1);
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_a_near_name_and_nothing_for_a_far_one() {
        let names = ["everything/echo", "everything/add", "github/search"];
        assert_eq!(
            closest("everything/ecoh", names.into_iter()),
            Some("everything/echo")
        );
        assert_eq!(
            closest("evrything/add", names.into_iter()),
            Some("everything/add")
        );
        assert_eq!(closest("weather/today", names.into_iter()), None);
        assert_eq!(closest("x", ["y"].into_iter()), Some("y"));
        assert_eq!(closest("echo", ["echo"].into_iter()), None);
    }
}
