//! The run-time data of a sandboxed evaluation: a step budget and a deadline that the
//! looping builtins consult, so that no expression can run unbounded.

use crate::Exhausted;
use crate::budget::{Budget, MAX_DEPTH, budget_value_error};
use crate::costed;
use jaq_core::data::{DataT, HasLut};
use jaq_core::native::{Fun, bome, v};
use jaq_core::{Exn, Lut, Native};
use jaq_json::Val;

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

/// Names that start with this are wlmap's own (`__tick`, `$__which`, ...): refused in
/// definition expressions, so no expression can shadow or call them.
pub(crate) const RESERVED_PREFIX: &str = "__";

/// Natives of jaq-std that are not registered at all (defence in depth behind the lexical check).
pub(crate) const REMOVED_NATIVES: &[&str] = &[
    "env",
    "halt",
    "stderr_empty",
    "debug_empty",
    "input",
    "inputs",
];

/// The data kind of sandboxed filters: JSON values plus a budget. Expressions compile for the
/// sandbox only, so nothing reaches the process (`$ENV`, `input` are refused at compile time).
pub(crate) struct Sandbox;

impl DataT for Sandbox {
    type V<'a> = Val;
    type Data<'a> = RunData<'a>;
}

/// What a running filter can reach: its lookup table and its budget. Nothing else.
///
/// Each evaluation gets its own budget through its run data (`Clone`, as jaq requires).
#[derive(Clone)]
pub(crate) struct RunData<'a> {
    pub(crate) lut: &'a Lut<Sandbox>,
    pub(crate) budget: &'a Budget,
}

impl<'a> HasLut<'a, Sandbox> for RunData<'a> {
    fn lut(&self) -> &'a Lut<Sandbox> {
        self.lut
    }
}

/// The exception of a spent budget (which one is in [`Budget::exhausted`], `_why` only names
/// it at the call site): a halt, which jaq's `try` and `?` pass on, so the evaluation ends at
/// once. An error would be caught where the expression catches errors, and the catch handler
/// and everything after it would still run, each later step failing, until the evaluation got
/// to its end. The evaluation loop reads the budget first and reports it.
fn budget_error(_why: Exhausted) -> Exn<'static, Val> {
    Exn::halt(BUDGET_HALT)
}

/// The exit code of [`budget_error`]'s halt (never seen: no halt reaches the process).
const BUDGET_HALT: i32 = 5;

/// A native's answer: its error becomes [`budget_error`]'s halt once a budget is spent.
fn answer<'a>(r: jaq_json::ValR, budget: &Budget) -> jaq_core::ValXs<'a, Val> {
    match r {
        Err(_) if budget.exhausted().is_some() => {
            Box::new(std::iter::once(Err(Exn::halt(BUDGET_HALT))))
        }
        r => bome(r),
    }
}

/// Compact JSON of a value, built at most `budget`'s size cap long (a value that shares
/// structure, `{a: ., b: .}` nested 40 times, is small in memory but huge as text).
fn bounded_json(v: &Val, budget: &Budget) -> Result<Vec<u8>, Exhausted> {
    struct Capped(Vec<u8>, usize);
    impl std::io::Write for Capped {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + b.len() > self.1 {
                return Err(std::io::Error::other("size cap"));
            }
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Capped(Vec::new(), budget.max_len());
    match jaq_json::write::write(&mut w, &jaq_json::write::Pp::default(), 0, v) {
        Ok(()) => budget.build(w.0.len()).map(|()| w.0),
        Err(_) => budget
            .build(budget.max_len().saturating_add(1))
            .map(|()| w.0),
    }
}

/// The positive repeat count of `string * number`, when jaq would repeat the string.
fn repeat_count(n: &Val) -> Option<usize> {
    match n {
        Val::Num(jaq_json::Num::Int(i)) if *i > 0 => Some(*i as usize),
        Val::Num(jaq_json::Num::BigInt(b)) if !b.to_string().starts_with('-') => Some(usize::MAX),
        _ => None,
    }
}

/// Bits a product of integers may have. `. * .` doubles a big integer's length each time,
/// and multiplying and printing big integers grow faster than their length: thirty squarings
/// of a 20-digit number ran for more than 30 s in one step (found by reading for single calls
/// that outrun the budget). 65,536 bits are about 19,700 decimal digits.
pub(crate) const MAX_INT_BITS: u64 = 1 << 16;

/// The length in bits of an integer's magnitude.
fn int_bits(v: &Val) -> Option<u64> {
    match v {
        Val::Num(jaq_json::Num::Int(i)) => {
            Some(u64::from(isize::BITS - i.unsigned_abs().leading_zeros()))
        }
        Val::Num(jaq_json::Num::BigInt(b)) => Some(b.bits()),
        _ => None,
    }
}

/// `l * r`, refused before allocating when it would repeat a string past the size cap or
/// make an integer longer than [`MAX_INT_BITS`].
pub(crate) fn checked_mul(l: Val, r: Val, budget: &Budget) -> jaq_json::ValR {
    if let (Some(a), Some(b)) = (int_bits(&l), int_bits(&r))
        && a + b > MAX_INT_BITS
    {
        return Err(budget_value_error(budget.refuse(Exhausted::NumberSize)));
    }
    let grown = match (&l, &r) {
        (Val::TStr(s) | Val::BStr(s), n) | (n, Val::TStr(s) | Val::BStr(s)) => {
            repeat_count(n).map(|k| s.len().saturating_mul(k))
        }
        (Val::Obj(a), Val::Obj(b)) => Some(a.len() + b.len()),
        _ => None,
    };
    if let Some(len) = grown {
        budget.build(len).map_err(budget_value_error)?;
    }
    built(l * r, budget)
}

/// A result of `*` or `+`, with its shape checked when it is an array or object.
fn built(r: jaq_json::ValR, budget: &Budget) -> jaq_json::ValR {
    let v = r?;
    if matches!(v, Val::Arr(_) | Val::Obj(_)) {
        budget.check_shape(&v).map_err(budget_value_error)?;
    }
    Ok(v)
}

/// `l + r`, refused before allocating when the result would pass the size cap.
pub(crate) fn checked_add(l: Val, r: Val, budget: &Budget) -> jaq_json::ValR {
    let grown = match (&l, &r) {
        (Val::TStr(a) | Val::BStr(a), Val::TStr(b) | Val::BStr(b)) => Some(a.len() + b.len()),
        (Val::Arr(a), Val::Arr(b)) => Some(a.len() + b.len()),
        (Val::Obj(a), Val::Obj(b)) => Some(a.len() + b.len()),
        _ => None,
    };
    if let Some(len) = grown {
        budget.build(len).map_err(budget_value_error)?;
    }
    built(l + r, budget)
}

/// Natives that replace or extend the standard ones: `__tick`, a budgeted `range/3`, checked
/// `*`, `+` and conversions to strings.
///
/// A registration table: one `(name, arity, body)` entry per native, each short; they stay in
/// one function so that the whole set the sandbox adds is read in one place.
pub(crate) fn natives() -> impl Iterator<Item = Fun<Sandbox>> {
    let mul: Fun<Sandbox> = (
        "__mulv",
        v(2),
        Native::new(|mut cv| {
            let r = cv.0.pop_var();
            let l = cv.0.pop_var();
            let budget = cv.0.data().budget;
            answer(checked_mul(l, r, budget), budget)
        }),
    );
    let add: Fun<Sandbox> = (
        "__addv",
        v(2),
        Native::new(|mut cv| {
            let r = cv.0.pop_var();
            let l = cv.0.pop_var();
            let budget = cv.0.data().budget;
            answer(checked_add(l, r, budget), budget)
        }),
    );
    let tostr: Fun<Sandbox> = (
        "__tostr",
        v(0),
        Native::new(|cv| {
            let budget = cv.0.data().budget;
            let r = match cv.1 {
                Val::TStr(s) | Val::BStr(s) => Ok(Val::TStr(s)),
                other => bounded_json(&other, budget)
                    .map(Val::utf8_str)
                    .map_err(budget_value_error),
            };
            answer(r, budget)
        }),
    );
    let jsondepth: Fun<Sandbox> = (
        "__jsondepth",
        v(0),
        Native::new(|cv| {
            let r = match &cv.1 {
                Val::TStr(b) | Val::BStr(b) if json_depth(b) > MAX_DEPTH => {
                    Err(jaq_core::Error::new(Val::from(format!(
                        "JSON text nested deeper than {MAX_DEPTH} levels"
                    ))))
                }
                _ => Ok(cv.1),
            };
            bome(r)
        }),
    );
    let item: Fun<Sandbox> = (
        "__item",
        v(0),
        Native::new(|cv| {
            let budget = cv.0.data().budget;
            let r = budget
                .tick()
                .and_then(|()| budget.keep(&cv.1))
                .map(|()| cv.1);
            answer(r.map_err(budget_value_error), budget)
        }),
    );
    let tree: Fun<Sandbox> = (
        "__tree",
        v(0),
        Native::new(|cv| {
            let budget = cv.0.data().budget;
            let r = budget.check_shape(&cv.1).map(|()| cv.1);
            answer(r.map_err(budget_value_error), budget)
        }),
    );
    let tojson: Fun<Sandbox> = (
        "tojson",
        v(0),
        Native::new(|cv| {
            let budget = cv.0.data().budget;
            let r = bounded_json(&cv.1, budget).map(Val::utf8_str);
            answer(r.map_err(budget_value_error), budget)
        }),
    );
    // jaq's `fromjson` reads a stream of values, and on text it cannot read it answers the
    // same error again and again without moving on (`"1x"`: 1, then errors forever). Where
    // errors are swallowed (`fromjson - empty`) that never ended and spent no step (found by
    // the `expression` fuzz target). This one ends at the first error, as every consumer that
    // sees the error does, and each value spends a step, as those of `.[]` do.
    let fromjson: Fun<Sandbox> = (
        "__fromjson",
        v(0),
        Native::new(|cv| {
            let budget = cv.0.data().budget;
            let text = match cv.1.try_as_utf8_bytes_owned() {
                Ok(text) => text,
                Err(e) => return bome(Err(e)),
            };
            let input = cv.1;
            let values = jaq_json::bytes_valrs(text, move |s| {
                Box::new(jaq_json::read::parse_many(s).map(move |r| {
                    r.map_err(|e| {
                        jaq_core::Error::str(format_args!("cannot parse {input} as JSON: {e}"))
                    })
                }))
            });
            let mut failed = false;
            Box::new(values.map_while(move |r| {
                if failed {
                    return None;
                }
                let r = r
                    .map_err(Exn::from)
                    .and_then(|v| budget.tick().map(|()| v).map_err(budget_error));
                failed = r.is_err();
                Some(r)
            }))
        }),
    );
    // Builtins whose one call could do unbounded work (`costed.rs`).
    let indices: Fun<Sandbox> = (
        "indices",
        v(1),
        Native::new(|mut cv| {
            let y = cv.0.pop_var();
            let budget = cv.0.data().budget;
            answer(costed::indices(&cv.1, &y, budget), budget)
        }),
    );
    let contains: Fun<Sandbox> = (
        "contains",
        v(1),
        Native::new(|mut cv| {
            let y = cv.0.pop_var();
            let budget = cv.0.data().budget;
            let r = costed::contains(&cv.1, &y, budget);
            answer(r.map(Val::from).map_err(budget_value_error), budget)
        }),
    );
    let key: Fun<Sandbox> = ("__key", v(0), Native::new(|cv| bome(costed::key(cv.1))));
    let regex_cost: Fun<Sandbox> = (
        "__regex_cost",
        v(2),
        Native::new(|mut cv| {
            let flags = cv.0.pop_var();
            let re = cv.0.pop_var();
            let budget = cv.0.data().budget;
            let steps = match (&cv.1, &re, &flags) {
                (
                    Val::TStr(t) | Val::BStr(t),
                    Val::TStr(re) | Val::BStr(re),
                    Val::TStr(f) | Val::BStr(f),
                ) => Some(costed::regex_steps(t, re, f)),
                // Not strings: jaq's own regex builtin says what is wrong.
                _ => None,
            };
            let r = match steps {
                Some(n) => budget.spend(n).map(|()| cv.1).map_err(budget_value_error),
                None => Ok(cv.1),
            };
            answer(r, budget)
        }),
    );
    // A step; in path mode and in updates it is `.` (the rewrite puts it inside paths).
    let tick: Fun<Sandbox> = (
        "__tick",
        v(0),
        Native::<Sandbox>::new(|cv| {
            let r =
                cv.0.data()
                    .budget
                    .tick_with(&cv.1)
                    .map(|()| cv.1.clone())
                    .map_err(budget_error);
            Box::new(std::iter::once(r))
        })
        .with_paths(|cvp| {
            let r = cvp
                .0
                .data()
                .budget
                .tick()
                .map(|()| cvp.1)
                .map_err(budget_error);
            Box::new(std::iter::once(r))
        })
        .with_update(|cv, f| match cv.0.data().budget.tick() {
            Ok(()) => f(cv.1),
            Err(why) => Box::new(std::iter::once(Err(budget_error(why)))),
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
        mul,
        add,
        tostr,
        tojson,
        jsondepth,
        item,
        tree,
        fromjson,
        indices,
        contains,
        key,
        regex_cost,
        refused("env", 0),
        refused("halt", 1),
        refused("stderr_empty", 0),
        refused("debug_empty", 0),
    ]
    .into_iter()
}

/// The checked `*` and `+` that the rewrite (`rewrite.rs`) calls, `l` before `r` as jaq's own
/// operators. First of all definitions: the standard library's use them too.
pub(crate) const CHECKED_OPS: &str = r#"
def __mul(l; r): l as $__l | r as $__r | __mulv($__l; $__r);
def __add(l; r): l as $__l | r as $__r | __addv($__l; $__r);
def fromjson: __jsondepth | __fromjson;
def has($k): __has($k | __key);
def matches($re; $flags): __regex_cost($re; $flags) | __matches($re; $flags);
def split_matches($re; $flags): __regex_cost($re; $flags) | __split_matches($re; $flags);
def split_($re; $flags): __regex_cost($re; $flags) | __split_($re; $flags);
"#;

/// jaq's natives that run as they are, but only behind wlmap's definitions of the same name
/// in [`CHECKED_OPS`], which check what they are given: (jaq's name, the name it gets).
/// `has` with an array key searches like `.[[a, b]]`; a regular expression spends its work
/// first (`costed.rs`).
pub(crate) const WRAPPED_NATIVES: &[(&str, &str)] = &[
    ("has", "__has"),
    ("matches", "__matches"),
    ("split_matches", "__split_matches"),
    ("split_", "__split_"),
];

/// Replaces jaq's own `getpath` (which `setpath`, `delpaths` and `fromstream` use): a path of
/// 100,000 keys would build a value nested as deep in one update.
pub(crate) const GETPATH: &str = r#"
def getpath($path):
  if ($path | length) > 512 then error("path deeper than 512 levels")
  else reduce $path[] as $p (.; .[$p]) end;
"#;

/// jaq's natives that wlmap's own replace (`natives`): a budgeted `range/3`, a `tojson` built
/// at most the size cap long, a `fromjson` that ends at its first error, an `indices` in
/// linear work and a `contains` that spends a step per pair of elements compared.
pub(crate) const REPLACED_NATIVES: &[&str] =
    &["range", "tojson", "fromjson", "indices", "contains"];

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

/// Deepest nesting of `[` and `{` in a JSON text, outside strings.
fn json_depth(text: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for &c in text {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
