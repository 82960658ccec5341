//! Builtins whose one call could do far more work than its input is long, made to count it.
//!
//! The step budget and the deadline are consulted between values, so a single builtin call
//! that runs for minutes is not stopped by them. jaq's `indices`, `contains`, an array used as
//! an index (`.[[1, 2]]`) and its regular expressions were such calls: on a 1 MB string,
//! `indices("a" * 500000)` ran for 14 s, `.[.[:500000]]` for minutes, `test("[a-z]{100}[0-9]")`
//! for 29 s and `[match(""; "g")]` took 1 GB, all under a 200 ms deadline. Here `indices` and
//! `contains` give jaq's answers in linear work or with a step per comparison, an array index
//! of two or more elements is refused, and a regular expression spends, before it runs, steps
//! for the work it may do and the matches it may make.

use crate::Exhausted;
use crate::budget::{Budget, budget_value_error};
use bstr::ByteSlice;
use jaq_json::Val;

/// The error of an array of two or more elements used as an index.
pub(crate) const ARRAY_INDEX: &str = "an array as an index (`.[[a, b]]`, where a subarray \
     occurs) is not available in definition expressions: use indices";

/// `.[k]`'s key, checked (the rewrite puts `__key` after every computed key): an array of two
/// or more elements would compare every window of the indexed array with it, work that grows
/// with the product of the two lengths in one call. Shorter keys are left to jaq.
pub(crate) fn key(k: Val) -> Result<Val, jaq_core::Error<Val>> {
    match &k {
        Val::Arr(a) if a.len() > 1 => Err(jaq_core::Error::str(ARRAY_INDEX)),
        _ => Ok(k),
    }
}

/// Where `needle` starts in `hay`, overlapping occurrences included, in `hay.len() +
/// needle.len()` comparisons (Knuth-Morris-Pratt). `found` may stop the search with an error.
fn occurrences<T: PartialEq, E>(
    hay: &[T],
    needle: &[T],
    mut found: impl FnMut(usize) -> Result<(), E>,
) -> Result<(), E> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Ok(());
    }
    // fail[i]: the length of the longest proper prefix of needle[..=i] that is also its suffix.
    let mut fail = vec![0usize; needle.len()];
    let mut k = 0;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = fail[k - 1];
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let mut k = 0;
    for (i, x) in hay.iter().enumerate() {
        while k > 0 && *x != needle[k] {
            k = fail[k - 1];
        }
        if *x == needle[k] {
            k += 1;
        }
        if k == needle.len() {
            found(i + 1 - k)?;
            k = fail[k - 1];
        }
    }
    Ok(())
}

/// True when `needle` occurs in `hay` (linear, like the substring search jaq uses).
fn occurs<T: PartialEq>(hay: &[T], needle: &[T]) -> bool {
    needle.is_empty() || occurrences(hay, needle, |_| Err(())).is_err()
}

/// jaq's `indices($y)`: the positions where `y` occurs in `x` (character positions in a text
/// string, byte positions in a byte string, element positions in an array; overlapping
/// occurrences included), found in linear work, one step per position.
pub(crate) fn indices(x: &Val, y: &Val, budget: &Budget) -> Result<Val, jaq_core::Error<Val>> {
    let mut out = Vec::new();
    let mut push = |i: usize| {
        budget.tick().map_err(budget_value_error)?;
        out.push(Val::from(i as isize));
        Ok::<(), jaq_core::Error<Val>>(())
    };
    match (x, y) {
        (Val::TStr(x), Val::TStr(y)) => {
            // jaq counts a match only where a character starts, and says the character's
            // position: both from the same character walk.
            let mut starts = x
                .char_indices()
                .map(|(start, _, _)| start)
                .enumerate()
                .peekable();
            occurrences(x, y, |byte| {
                while starts.next_if(|&(_, start)| start < byte).is_some() {}
                match starts.peek() {
                    Some(&(char_i, start)) if start == byte => push(char_i),
                    _ => Ok(()),
                }
            })?;
        }
        (Val::BStr(x), Val::BStr(y)) => occurrences(x, y, &mut push)?,
        (Val::Arr(x), Val::Arr(y)) => occurrences(x, y, &mut push)?,
        (Val::Arr(x), y) => {
            for (i, v) in x.iter().enumerate() {
                if v == y {
                    push(i)?;
                }
            }
        }
        (x, y) => return Err(jaq_core::Error::index(x.clone(), y.clone())),
    }
    Ok(out.into_iter().collect())
}

/// jaq's `contains`: a substring for strings, every element of `r` contained in some element
/// of `l` for arrays, every key's value contained for objects, equality otherwise. One step
/// per pair of array elements compared: two arrays of 300,000 elements are 9 * 10^10 pairs.
pub(crate) fn contains(l: &Val, r: &Val, budget: &Budget) -> Result<bool, Exhausted> {
    Ok(match (l, r) {
        (Val::BStr(l), Val::BStr(r)) | (Val::TStr(l), Val::TStr(r)) => occurs(l, r),
        (Val::Arr(l), Val::Arr(r)) => {
            for r in r.iter() {
                let mut found = false;
                for l in l.iter() {
                    budget.tick()?;
                    if contains(l, r, budget)? {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Ok(false);
                }
            }
            true
        }
        (Val::Obj(l), Val::Obj(r)) => {
            for (k, r) in r.iter() {
                match l.get(k) {
                    Some(l) if contains(l, r, budget)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        _ => l == r,
    })
}

/// An upper bound of the size of the program a regular expression compiles to, in units of
/// its text: its length times every repetition count in it (`{n}`, `{n,m}`, `{n,}`), since
/// `x{100}` compiles to 100 copies of `x`, and nested counts multiply.
pub(crate) fn regex_weight(re: &[u8]) -> u64 {
    let mut w = re.len().max(1) as u64;
    let mut i = 0;
    while i < re.len() {
        if re[i] == b'{' {
            let digits = |from: usize| {
                let n = re[from..].iter().take_while(|b| b.is_ascii_digit()).count();
                let v = std::str::from_utf8(&re[from..from + n]).ok();
                (n, v.and_then(|v| v.parse::<u64>().ok()))
            };
            let (n1, lo) = digits(i + 1);
            let mut j = i + 1 + n1;
            let mut hi = lo;
            if n1 > 0 && re.get(j) == Some(&b',') {
                let (n2, h) = digits(j + 1);
                j += 1 + n2;
                hi = if n2 > 0 { h } else { lo };
            }
            if n1 > 0 && re.get(j) == Some(&b'}') {
                let count = lo.max(hi).unwrap_or(u64::MAX).max(1);
                w = w.saturating_mul(count);
                i = j;
            }
        }
        i += 1;
    }
    w
}

/// Work units (a text byte against a unit of the compiled program) worth one step: about
/// 10 µs here, the time a step is given by the default limits (100,000 steps, 1 s).
const REGEX_UNITS_PER_STEP: u64 = 1000;

/// What a regular expression run on `text` spends before it runs: its work (the text's
/// length times [`regex_weight`], the bound of a run of the matching automaton) and, when it
/// matches globally (`g`), a step per match it may make (one per position: `match(""; "g")`
/// makes a match object for every character).
pub(crate) fn regex_steps(text: &[u8], re: &[u8], flags: &[u8]) -> u64 {
    let len = text.len() as u64;
    let work = len.saturating_add(1).saturating_mul(regex_weight(re)) / REGEX_UNITS_PER_STEP;
    let matches = if flags.contains(&b'g') { len + 1 } else { 1 };
    work.saturating_add(matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut v = Vec::new();
        occurrences(hay, needle, |i| {
            v.push(i);
            Ok::<(), ()>(())
        })
        .unwrap();
        v
    }

    proptest::proptest! {
        /// Knuth-Morris-Pratt finds what comparing every window finds.
        #[test]
        fn occurrences_are_every_matching_window(
            hay in proptest::collection::vec(0u8..3, 0..40),
            needle in proptest::collection::vec(0u8..3, 0..5),
        ) {
            let naive: Vec<usize> = if needle.is_empty() {
                Vec::new()
            } else {
                hay.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect()
            };
            proptest::prop_assert_eq!(all(&hay, &needle), naive);
        }
    }

    #[test]
    fn occurrences_overlap() {
        assert_eq!(all(b"aaaa", b"aa"), [0, 1, 2]);
        assert_eq!(all(b"abababa", b"aba"), [0, 2, 4]);
        assert_eq!(all(b"ab", b"abc"), Vec::<usize>::new());
    }

    /// Repetition counts multiply the pattern's length; text without counts is its length.
    #[test]
    fn regex_weight_multiplies_counts() {
        assert_eq!(regex_weight(b"abc"), 3);
        assert_eq!(regex_weight(b""), 1);
        assert_eq!(regex_weight(b"a{3}"), 12);
        assert_eq!(regex_weight(b"x{2,5}"), 30);
        assert_eq!(regex_weight(b"x{3,}"), 15);
        assert_eq!(regex_weight(b"(a{10}){10}"), 1100);
        assert_eq!(regex_weight(b"a{}b{,3}c{x}"), 12);
        assert_eq!(regex_weight(b"a{99999999999999999999}"), u64::MAX);
    }

    /// A label-sized regex costs a step or two; a global match a step per possible match.
    #[test]
    fn regex_steps_follow_work_and_matches() {
        let label = [b'a'; 63];
        let dns = b"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
        assert_eq!(regex_steps(&label, dns, b""), 2);
        assert_eq!(regex_steps(&label, dns, b"g"), 65);
        assert_eq!(
            regex_steps(&[b'a'; 1_000_000], b"[a-z]{100}[0-9]", b""),
            1_500_002
        );
    }
}
