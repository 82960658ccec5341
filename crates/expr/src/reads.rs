//! Which paths of its input an expression reads: every path that starts at the input itself
//! (`.spec.replicas`, `.status.conditions[].type`), found in the parsed expression. Tools that
//! check a definition against its kind's schema use it (`wlmap check`, `wlmap scaffold`).

use crate::CompileError;
use crate::program::parse_term;
use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Term};
use jaq_core::path::{Part, Path};

/// One step of a path read: a constant key (`.spec`, `["a b"]`) or every element (`[]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// `.key` or `["key"]`.
    Field(String),
    /// `[]`: every element of an array, or every value of a map.
    Each,
}

/// Builtins whose arguments are evaluated on the builtin's own input (`select(.x)`,
/// `has("a")`), so a path in them starts at the same place. The arguments of any other call
/// (`map(.x)`, `sort_by(.x)`) run on something else and are not followed.
const SAME_INPUT: &[&str] = &[
    "select",
    "first",
    "last",
    "limit",
    "isempty",
    "error",
    "has",
    "contains",
    "inside",
    "test",
    "match",
    "capture",
    "startswith",
    "endswith",
    "ltrimstr",
    "rtrimstr",
    "split",
    "join",
    "index",
    "rindex",
    "indices",
    "in",
    "getpath",
    "not",
    "tostring",
    "tojson",
    "length",
    "path",
    "del",
    "range",
    "splits",
];

/// Builtins whose first argument runs on their input and whose others do not
/// (`any(.items[]; .ready)`, `sub("a"; .x)`), when called with two arguments.
const FIRST_ON_INPUT: &[&str] = &["any", "all", "sub", "gsub"];

/// The paths the expression reads from its input, in the order they appear: each as far as it
/// goes by constant keys and `[]` (`.spec.a[].b`, `.spec.x[0]` gives `spec, x`). Paths after a
/// pipe, in a `reduce` update or in the argument of a function that maps other values are
/// relative to something else and left out; `E as $x | body` keeps the input for `body`.
///
/// ```
/// use wlmap_expr::{Key, paths_read};
/// let f = |s: &str| Key::Field(s.into());
/// assert_eq!(
///     paths_read("(.status.ready // 0) < (.spec.replicas // 1)").unwrap(),
///     vec![vec![f("status"), f("ready")], vec![f("spec"), f("replicas")]]
/// );
/// assert_eq!(paths_read(".spec.jobs[]?.template | .x").unwrap(), vec![vec![f("spec"), f("jobs"), Key::Each, f("template")]]);
/// assert_eq!(paths_read("[.spec.a[] | select(.b)] | length").unwrap(), vec![vec![f("spec"), f("a"), Key::Each]]);
/// assert!(paths_read("1 + 2").unwrap().is_empty());
/// assert!(paths_read(".a |").is_err());
/// ```
pub fn paths_read(text: &str) -> Result<Vec<Vec<Key>>, CompileError> {
    Ok(footprint(text)?.paths)
}

/// Everything of its input an expression may read: the paths it reads ([`paths_read`]), and
/// whether it may also read the input in a way no path names (`whole`): `.` used as a value,
/// `..`, a function applied to the input (`keys`, `tojson`, `select(...)`, a definition of its
/// own), a dynamic key (`.[$k]`), an object shorthand (`{name}`), a format (`@json`). When
/// `whole` is false, two inputs that agree at every path read give the same result: what
/// lets a caller skip evaluating an expression again on an input that changed elsewhere.
///
/// ```
/// use wlmap_expr::{Key, footprint};
/// let f = footprint(r#".metadata.labels["app"] // "none""#).unwrap();
/// let key = |s: &str| Key::Field(s.into());
/// assert_eq!(f.paths, vec![vec![key("metadata"), key("labels"), key("app")]]);
/// assert!(!f.whole);
/// assert!(!footprint(".metadata | keys").unwrap().whole); // keys of what `.metadata` gives
/// assert!(footprint("keys").unwrap().whole);
/// assert!(footprint(". as $p | $p.x").unwrap().whole);
/// assert!(footprint(".[$__loc__.file]").unwrap().whole);
/// ```
pub fn footprint(text: &str) -> Result<Footprint, CompileError> {
    crate::syntax::check_depth(text)?;
    let term = parse_term(text)?;
    let mut out = Footprint::default();
    reads(&term, true, &mut out);
    Ok(out)
}

/// What an expression may read of its input: see [`footprint`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The paths read, each as far as it goes by constant keys and `[]`; what lies below the
    /// end of a path may be read too.
    pub paths: Vec<Vec<Key>>,
    /// The input may be read beyond those paths.
    pub whole: bool,
}

/// Builtins that do not read their input: constants, and `error(msg)`.
fn input_free(name: &str, arity: usize) -> bool {
    matches!(
        (name, arity),
        ("empty" | "null" | "true" | "false", 0) | ("error", 1)
    )
}

/// Collect what `t` reads of its input into `out`; `at_input` is false where `.` is something
/// else than that input.
fn reads(t: &Term<&str>, at_input: bool, out: &mut Footprint) {
    match t {
        Term::Path(base, path) => path_reads(base, path, at_input, out),
        Term::BinOp(l, BinaryOp::Pipe(binding), r) => {
            reads(l, at_input, out);
            // `E as $x | body`: body's input is still E's.
            reads(r, at_input && binding.is_some(), out);
        }
        Term::BinOp(l, _, r) => {
            reads(l, at_input, out);
            reads(r, at_input, out);
        }
        Term::Str(format, parts) => {
            out.whole |= at_input && format.is_some();
            for p in parts {
                if let StrPart::Term(t) = p {
                    reads(t, at_input, out);
                }
            }
        }
        Term::Arr(Some(t)) | Term::Neg(t) | Term::Label(_, t) => reads(t, at_input, out),
        Term::Obj(entries) => {
            for (k, v) in entries {
                reads(k, at_input, out);
                match v {
                    Some(v) => reads(v, at_input, out),
                    // `{name}` reads `.name`; `{$x}` reads nothing.
                    None => out.whole |= at_input && !matches!(k, Term::Var(_)),
                }
            }
        }
        Term::TryCatch(body, catch) => {
            reads(body, at_input, out);
            if let Some(c) = catch {
                reads(c, false, out); // the error, not the input
            }
        }
        Term::IfThenElse(branches, otherwise) => {
            for (cond, then) in branches {
                reads(cond, at_input, out);
                reads(then, at_input, out);
            }
            if let Some(e) = otherwise {
                reads(e, at_input, out);
            }
        }
        Term::Fold(_, source, _, args) => {
            reads(source, at_input, out);
            if let Some((init, updates)) = args.split_first() {
                reads(init, at_input, out);
                for u in updates {
                    reads(u, false, out); // the accumulator
                }
            }
        }
        Term::Def(defs, body) => {
            // A definition's body runs on whatever input its caller has.
            out.whole |= at_input;
            for d in defs {
                reads(&d.body, false, out);
            }
            reads(body, at_input, out);
        }
        Term::Call(name, args) => {
            out.whole |= at_input && !input_free(name, args.len());
            let same = SAME_INPUT.contains(name);
            let first_only = args.len() == 2 && FIRST_ON_INPUT.contains(name);
            for (i, a) in args.iter().enumerate() {
                reads(a, at_input && (same || (first_only && i == 0)), out);
            }
        }
        Term::Id | Term::Recurse => out.whole |= at_input,
        Term::Num(_) | Term::Arr(None) | Term::Break(_) | Term::Var(_) => {}
    }
}

/// What a path term reads: the path itself when it starts at the input (as far as its keys are
/// constant), and what its base and its indices read.
fn path_reads(base: &Term<&str>, path: &Path<Term<&str>>, at_input: bool, out: &mut Footprint) {
    if at_input && matches!(base, Term::Id) {
        let keys: Vec<Key> = path
            .0
            .iter()
            .map_while(|(part, _)| match part {
                Part::Index(i) => constant(i).map(Key::Field),
                Part::Range(None, None) => Some(Key::Each),
                Part::Range(..) => None,
            })
            .collect();
        if keys.is_empty() {
            out.whole = true; // `.[$k]`, `.[1:]`: no constant first key
        } else {
            out.paths.push(keys);
        }
    } else {
        reads(base, at_input, out);
    }
    for (part, _) in &path.0 {
        match part {
            Part::Index(i) => reads(i, at_input, out),
            Part::Range(from, to) => {
                for b in from.iter().chain(to.iter()) {
                    reads(b, at_input, out);
                }
            }
        }
    }
}

/// A constant string term (`"spec"`, as `.spec` parses), without interpolation.
#[inline]
pub(crate) fn constant(t: &Term<&str>) -> Option<String> {
    let Term::Str(None, parts) = t else {
        return None;
    };
    let mut s = String::new();
    for p in parts {
        match p {
            StrPart::Str(x) => s.push_str(x),
            StrPart::Char(c) => s.push(*c),
            StrPart::Term(_) => return None,
        }
    }
    Some(s)
}
