//! The run-time data of a sandboxed evaluation: a step budget and a deadline that the
//! looping builtins consult, so that no expression can run unbounded.

use jaq_core::data::{DataT, HasLut};
use jaq_core::native::{Fun, bome, v};
use jaq_core::{Exn, Lut, Native};
use jaq_json::Val;
use std::cell::Cell;
use std::time::Instant;

/// Names no definition expression may use: they read the process environment or other input,
/// write outside the result, stop the process, define (possibly recursive) functions, or grow
/// without bound.
pub(crate) const FORBIDDEN_WORDS: &[(&str, &str)] = &[
    ("env", "reads the process environment"),
    ("halt", "stops the process"),
    ("halt_error", "stops the process"),
    ("debug", "writes to stderr"),
    ("stderr", "writes to stderr"),
    ("input", "reads other input"),
    ("inputs", "reads other input"),
    ("input_filename", "reads the input file name"),
    ("input_line_number", "reads other input"),
    ("get_search_list", "reads the module search path"),
    ("get_prog_origin", "reads the program location"),
    ("get_jq_origin", "reads the program location"),
    ("import", "loads modules"),
    ("include", "loads modules"),
    ("combinations", "grows exponentially"),
    ("input_stream", "reads other input"),
];

/// Variables no definition expression may read.
pub(crate) const FORBIDDEN_VARS: &[(&str, &str)] = &[
    ("$ENV", "reads the process environment"),
    ("$__prog_args", "reads the program arguments"),
    ("$__loc__", "reads the program location"),
];

/// Natives of jaq-std that are not registered at all (defence in depth behind the lexical check).
pub(crate) const REMOVED_NATIVES: &[&str] = &[
    "env",
    "halt",
    "stderr_empty",
    "debug_empty",
    "input",
    "inputs",
];

/// Budget of one evaluation.
pub(crate) struct Budget {
    steps_left: Cell<u64>,
    deadline: Option<Instant>,
    max_len: usize,
    exhausted: Cell<Option<&'static str>>,
}

impl Budget {
    pub(crate) fn new(steps: u64, deadline: Option<Instant>, max_len: usize) -> Self {
        Budget {
            steps_left: Cell::new(steps),
            deadline,
            max_len,
            exhausted: Cell::new(None),
        }
    }

    /// Spend one step on a value a loop carries: `Err` also when that value is longer than
    /// the size cap (string doubling inside `reduce`, `until`, `repeat`...).
    pub(crate) fn tick_with(&self, v: &Val) -> Result<(), &'static str> {
        self.tick()?;
        if !self.fits(v) {
            self.exhausted.set(Some("size cap"));
            return Err("size cap");
        }
        Ok(())
    }

    /// True when a value is within the size cap (shallow: the string's bytes or the number
    /// of entries; anything deeper was built one loop step or one output at a time).
    pub(crate) fn fits(&self, v: &Val) -> bool {
        shallow_len(v) <= self.max_len
    }

    /// Spend one step; `Err` once the step budget or the deadline is exhausted.
    fn tick(&self) -> Result<(), &'static str> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let left = self.steps_left.get();
        if left == 0 {
            self.exhausted.set(Some("step budget"));
            return Err("step budget");
        }
        self.steps_left.set(left - 1);
        if left.is_multiple_of(1024) && self.deadline.is_some_and(|d| Instant::now() > d) {
            self.exhausted.set(Some("time budget"));
            return Err("time budget");
        }
        Ok(())
    }

    /// Record that the size cap was hit outside a loop (an output too long).
    pub(crate) fn exceed_size(&self) {
        self.exhausted.set(Some("size cap"));
    }

    /// Which budget ran out, if any.
    pub(crate) fn exhausted(&self) -> Option<&'static str> {
        self.exhausted.get()
    }
}

/// The data kind of sandboxed filters: JSON values plus a budget.
///
/// ```
/// // Expressions compile for the sandbox only: nothing reaches the process.
/// assert!(wlmap_expr::Expr::compile("$ENV.HOME").is_err());
/// assert!(wlmap_expr::Expr::compile("input").is_err());
/// ```
pub struct Sandbox;

impl DataT for Sandbox {
    type V<'a> = Val;
    type Data<'a> = RunData<'a>;
}

/// What a running filter can reach: its lookup table and its budget. Nothing else.
///
/// ```
/// fn is_clone<T: Clone>() {}
/// is_clone::<<wlmap_expr::Sandbox as jaq_core::data::DataT>::Data<'static>>();
/// // Each evaluation gets its own budget through its run data.
/// let spin = wlmap_expr::Expr::compile("last(range(1e9))").unwrap();
/// let limits = wlmap_expr::Limits { max_steps: 100, ..Default::default() };
/// assert!(spin.eval(&wlmap_expr::Val::Null, &[], &limits).is_err());
/// ```
#[derive(Clone)]
pub struct RunData<'a> {
    pub(crate) lut: &'a Lut<Sandbox>,
    pub(crate) budget: &'a Budget,
}

impl<'a> HasLut<'a, Sandbox> for RunData<'a> {
    fn lut(&self) -> &'a Lut<Sandbox> {
        self.lut
    }
}

fn budget_error(why: &str) -> Exn<'static, Val> {
    Exn::from(jaq_core::Error::new(Val::from(format!(
        "evaluation exceeded its {why}"
    ))))
}

/// Natives that replace or extend the standard ones: `__tick` and a budgeted `range/3`.
pub(crate) fn natives() -> impl Iterator<Item = Fun<Sandbox>> {
    let tick: Fun<Sandbox> = (
        "__tick",
        v(0),
        Native::new(|cv| {
            let r =
                cv.0.data()
                    .budget
                    .tick_with(&cv.1)
                    .map(|()| cv.1.clone())
                    .map_err(budget_error);
            Box::new(std::iter::once(r))
        }),
    );
    let range: Fun<Sandbox> = (
        "range",
        v(3),
        Native::new(|mut cv| {
            let by = cv.0.pop_var();
            let to = cv.0.pop_var();
            let from = cv.0.pop_var();
            let budget = cv.0.data().budget;
            let num = |v: &Val| match v {
                Val::Num(n) => n.to_string().parse::<f64>().ok(),
                _ => None,
            };
            let (Some(f), Some(t), Some(b)) = (num(&from), num(&to), num(&by)) else {
                return bome(Err(jaq_core::Error::new(Val::from(
                    "range arguments must be numbers".to_string(),
                ))));
            };
            let ints = [&from, &by]
                .iter()
                .all(|v| matches!(v, Val::Num(jaq_json::Num::Int(_))));
            let mut x = f;
            Box::new(std::iter::from_fn(move || {
                let more = if b > 0.0 {
                    x < t
                } else if b < 0.0 {
                    x > t
                } else {
                    false
                };
                if !more {
                    return None;
                }
                if let Err(why) = budget.tick() {
                    x = t; // stop after this error
                    return Some(Err(budget_error(why)));
                }
                let integral = x.fract() == 0.0 && x.abs() < 9.0e15;
                let out = if ints || integral {
                    Val::from(x as isize)
                } else {
                    Val::from(x)
                };
                x += b;
                Some(Ok(out))
            }))
        }),
    );
    // The standard library's own definitions (`halt_error`, `debug`, ...) refer to these, so
    // they exist, but only as errors: nothing can reach the process through them.
    let refused = |name: &'static str, arity: usize| -> Fun<Sandbox> {
        (
            name,
            v(arity),
            Native::new(|_cv| {
                bome(Err(jaq_core::Error::new(Val::from(
                    "builtin not available in definition expressions".to_string(),
                ))))
            }),
        )
    };
    [
        tick,
        range,
        refused("env", 0),
        refused("halt", 1),
        refused("stderr_empty", 0),
        refused("debug_empty", 0),
    ]
    .into_iter()
}

/// Definitions that put a step on every iteration of the recursive builtins.
pub(crate) const PRELUDE: &str = r#"
def repeat(f): def rec: f, (__tick | rec); rec;
def recurse(f): def rec: ., (f | __tick | rec); rec;
def recurse: recurse(.[]?);
def recurse(f; cond): recurse(f | select(cond));
def while(cond; update): def rec: if cond then ., (update | __tick | rec) else empty end; rec;
def until(cond; update): def rec: if cond then . else update | __tick | rec end; rec;
def range(from; to): range(from; to; 1);
def range(to): range(0; to);
def IN(s): any(s == .; .);
def IN(src; s): any(src == s; .);
"#;

/// Bytes of a string, entries of an array or object, 0 for anything else.
pub(crate) fn shallow_len(v: &Val) -> usize {
    match v {
        Val::TStr(b) | Val::BStr(b) => b.len(),
        Val::Arr(a) => a.len(),
        Val::Obj(o) => o.len(),
        _ => 0,
    }
}

/// Put a size-checked step (`| __tick`) after the update of every `reduce` and `foreach`, so
/// that the accumulator cannot double without bound: the loop's source only ticks with its
/// own values, never with the accumulator. `None` when the text has no fold (the common case:
/// the text compiles as written). Positions before the first fold are unchanged, and compile
/// errors are reported on the original text.
pub(crate) fn guard_folds(text: &str) -> Option<String> {
    use jaq_core::load::lex::{StrPart, Tok, Token};
    let tokens = jaq_core::load::lex::Lexer::new(text).lex().ok()?;
    fn walk<'a>(text: &'a str, toks: &[Token<&'a str>], ends: &mut Vec<(usize, usize)>) {
        for (i, Token(s, tok)) in toks.iter().enumerate() {
            match tok {
                Tok::Word if *s == "reduce" || *s == "foreach" => {
                    // The arguments are the first `(...)` block after the word `as`.
                    let args = toks[i + 1..]
                        .iter()
                        .skip_while(|Token(w, t)| !(matches!(t, Tok::Word) && *w == "as"))
                        .find_map(|Token(b, t)| match t {
                            Tok::Block(inner) if b.starts_with('(') => Some(inner),
                            _ => None,
                        });
                    if let Some(inner) = args {
                        let semis: Vec<usize> = inner
                            .iter()
                            .filter(|Token(w, t)| matches!(t, Tok::Sym) && *w == ";")
                            .map(|Token(w, _)| jaq_core::load::span(text, w).start)
                            .collect();
                        // The update runs from the first `;` to the second `;` (foreach with
                        // an extractor) or to the closing `)`.
                        let close = inner
                            .last()
                            .map(|Token(w, _)| jaq_core::load::span(text, w));
                        if let (Some(&first), Some(close)) = (semis.first(), close) {
                            let end = semis.get(1).copied().unwrap_or(close.start);
                            if *s == "reduce" || semis.len() <= 2 {
                                ends.push((first + 1, end));
                            }
                        }
                    }
                }
                Tok::Block(inner) => walk(text, inner, ends),
                Tok::Str(parts) => {
                    for p in parts {
                        if let StrPart::Term(t) = p {
                            walk(text, std::slice::from_ref(t), ends);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut updates = Vec::new();
    walk(text, &tokens, &mut updates);
    if updates.is_empty() {
        return None;
    }
    // Insert from the back so earlier positions stay valid.
    let mut edits: Vec<(usize, &str)> = updates
        .iter()
        .flat_map(|&(start, end)| [(start, " ("), (end, ") | __tick ")])
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (at, what) in edits {
        out.insert_str(at, what);
    }
    Some(out)
}
