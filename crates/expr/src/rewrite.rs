//! Rewrites of parsed jq terms that put the sandbox's checks where jaq has no hook of its own.
//!
//! jaq evaluates `*`, `+`, `[...]` and `"\(...)"` inside its interpreter, so a single operation
//! such as `"x" * 10000000000` or `"\(deeply shared value)"` could allocate without bound before
//! any loop step is checked. These operations are rewritten, once, at compile time, into calls
//! of checked natives (see `sandbox.rs`); the standard library's definitions get the same
//! rewrite, so `add`, `join`, `tostring` and `map` are checked too. Fold updates get a
//! size-checked step (user expressions only: the standard library's folds are not paths).
//!
//! The module also finds which standard definitions an expression can reach, so that a
//! compile includes only those ("tree shaking"): compiling all of jaq's standard library
//! took most of a definition's compile time.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::ops::Math;
use jaq_core::path::{Part, Path};
use std::collections::HashSet;

/// What to rewrite.
#[derive(Clone, Copy)]
pub(crate) struct Rewrite {
    /// Put `| __tick` after the update of every `reduce` and `foreach` (value mode only:
    /// a fold whose update is piped is no longer a path expression).
    pub(crate) tick_folds: bool,
}

/// `t | __tick`: every value `t` produces spends a step. Put after the terms that multiply
/// values (`,`, `.[]`, `..`): without it, `(a, b) | (c, d) | ...` or `.[] as $x | .[] | ...`
/// could do exponential or polynomial work between two outputs with nothing counting it, when
/// a `select`, `//`, `empty` or `?` swallows what it makes (found by fuzzing). `__tick` passes
/// paths and updates through, so this holds in path mode too.
fn ticked(t: Term<&str>) -> Term<&str> {
    pipe(t, call("__tick", vec![]))
}

/// True for a path that iterates (`.[]`, `.a[]?`): it makes as many values as it visits.
fn iterates<F>(path: &Path<F>) -> bool {
    path.0
        .iter()
        .any(|(p, _)| matches!(p, Part::Range(None, None)))
}

fn call<'s>(name: &'s str, args: Vec<Term<&'s str>>) -> Term<&'s str> {
    Term::Call(name, args)
}

fn pipe<'s>(l: Term<&'s str>, r: Term<&'s str>) -> Term<&'s str> {
    Term::BinOp(Box::new(l), BinaryOp::Pipe(None), Box::new(r))
}

/// True for a number literal: `x + 1` or `2 * 3` cannot grow a string, array or object.
fn is_num(t: &Term<&str>) -> bool {
    matches!(t, Term::Num(_))
}

/// True when `l op r` becomes a checked call: `+` and `*` unless a number literal makes
/// growth impossible (`x + 1`, `2 * 3`).
pub(crate) fn is_checked(l: &Term<&str>, op: Math, r: &Term<&str>) -> bool {
    match op {
        Math::Mul => !(is_num(l) && is_num(r)),
        Math::Add => !(is_num(l) || is_num(r)),
        _ => false,
    }
}

impl Rewrite {
    /// Rewrite a term (and everything inside it).
    ///
    /// One arm per kind of jq term (a tree walk over jaq's syntax): the arms are small and
    /// belong together, as in any interpreter of the syntax.
    pub(crate) fn term<'s>(self, t: Term<&'s str>) -> Term<&'s str> {
        let b = |t: Box<Term<&'s str>>| Box::new(self.term(*t));
        match t {
            Term::BinOp(l, BinaryOp::Math(op @ (Math::Mul | Math::Add)), r) => {
                let keep = !is_checked(&l, op, &r);
                let (l, r) = (self.term(*l), self.term(*r));
                if keep {
                    Term::BinOp(Box::new(l), BinaryOp::Math(op), Box::new(r))
                } else {
                    let name = if matches!(op, Math::Mul) {
                        "__mul"
                    } else {
                        "__add"
                    };
                    call(name, vec![l, r])
                }
            }
            // `l *= r` is `r as $x | l |= . * $x` (jaq's own definition of it).
            Term::BinOp(l, BinaryOp::UpdateMath(op @ (Math::Mul | Math::Add)), r)
                if !is_num(&r) || matches!(op, Math::Mul) =>
            {
                let name = if matches!(op, Math::Mul) {
                    "__mulv"
                } else {
                    "__addv"
                };
                let update = Term::BinOp(
                    b(l),
                    BinaryOp::Update,
                    Box::new(call(name, vec![Term::Id, Term::Var("$__wlmap_u")])),
                );
                let bound = Term::BinOp(
                    b(r),
                    BinaryOp::Pipe(Some(Pattern::Var("$__wlmap_u"))),
                    Box::new(update),
                );
                pipe(bound, call("__tree", vec![]))
            }
            // Updates can nest a value deeper or share it (`(.a, .b) = .`): the result is checked.
            Term::BinOp(
                l,
                op @ (BinaryOp::Assign
                | BinaryOp::Update
                | BinaryOp::UpdateMath(_)
                | BinaryOp::UpdateAlt),
                r,
            ) => pipe(Term::BinOp(b(l), op, b(r)), call("__tree", vec![])),
            Term::BinOp(l, BinaryOp::Comma, r) => ticked(self.comma_chain(*l, *r)),
            Term::Recurse => ticked(Term::Recurse),
            Term::BinOp(l, op, r) => {
                let op = match op {
                    BinaryOp::Pipe(Some(p)) => BinaryOp::Pipe(Some(self.pattern(p))),
                    op => op,
                };
                Term::BinOp(b(l), op, b(r))
            }
            // Every collected item is a step, is checked as a tree and counts as built:
            // `[.[] as $a | .[] | ...]` cannot collect without bound, nor can 50,000 copies a
            // builtin made. The array is checked as a tree (`[., .]` nested).
            Term::Arr(Some(f)) => {
                // `[a, b, c]`: `__item` already counts what the commas make.
                let f = match *f {
                    Term::BinOp(l, BinaryOp::Comma, r) => self.comma_chain(*l, *r),
                    f => self.term(f),
                };
                pipe(
                    Term::Arr(Some(Box::new(pipe(f, call("__item", vec![]))))),
                    call("__tree", vec![]),
                )
            }
            Term::Str(fmt, parts) => {
                let plain = fmt.is_none();
                let parts = parts
                    .into_iter()
                    .map(|p| match p {
                        StrPart::Term(f) if plain => {
                            StrPart::Term(pipe(self.term(f), call("__tostr", vec![])))
                        }
                        StrPart::Term(f) => StrPart::Term(self.term(f)),
                        other => other,
                    })
                    .collect();
                Term::Str(fmt, parts)
            }
            // `{a: ., b: .}` nested 40 times is 2^40 leaves: objects are checked as trees.
            Term::Obj(kvs) if !kvs.is_empty() => pipe(
                Term::Obj(
                    kvs.into_iter()
                        .map(|(k, v)| (self.term(k), v.map(|v| self.term(v))))
                        .collect(),
                ),
                call("__tree", vec![]),
            ),
            Term::Neg(t) => Term::Neg(b(t)),
            Term::Label(l, t) => Term::Label(l, b(t)),
            Term::Fold(name, xs, pat, args) => {
                let args = args
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let a = self.term(a);
                        if i == 1 && self.tick_folds {
                            pipe(a, call("__tick", vec![]))
                        } else {
                            a
                        }
                    })
                    .collect();
                Term::Fold(name, b(xs), self.pattern(pat), args)
            }
            Term::TryCatch(t, c) => Term::TryCatch(b(t), c.map(b)),
            Term::IfThenElse(branches, e) => Term::IfThenElse(
                branches
                    .into_iter()
                    .map(|(c, t)| (self.term(c), self.term(t)))
                    .collect(),
                e.map(b),
            ),
            Term::Def(defs, body) => {
                Term::Def(defs.into_iter().map(|d| self.def(d)).collect(), b(body))
            }
            Term::Call(name, args) => {
                Term::Call(name, args.into_iter().map(|a| self.term(a)).collect())
            }
            Term::Path(t, path) => {
                let iterating = iterates(&path);
                let path = Term::Path(
                    b(t),
                    Path(
                        path.0
                            .into_iter()
                            .map(|(part, opt)| {
                                let part = match part {
                                    Part::Index(i) => Part::Index(self.index(i, true)),
                                    Part::Range(x, y) => Part::Range(
                                        x.map(|x| self.index(x, false)),
                                        y.map(|y| self.index(y, false)),
                                    ),
                                };
                                (part, opt)
                            })
                            .collect(),
                    ),
                );
                if iterating { ticked(path) } else { path }
            }
            other => other,
        }
    }

    /// An index or slice bound of a path, rewritten. jaq builds every index term of a path
    /// once to see whether it has a single value, then again for each combination of the
    /// path's indices; nested in each other's indices, those builds multiply with the depth
    /// (`.a[.a[.a, .b:.c, .d], .b:.c, .d]` nested 12 deep did 9 ms of work before its first
    /// step, 20 deep would do minutes: found by fuzzing). A computed one spends a
    /// step each time it is built (`__tick |`), and a key is checked (`| __key`, `costed.rs`).
    /// Literals and variables build nothing.
    fn index(self, i: Term<&str>, key: bool) -> Term<&str> {
        if matches!(i, Term::Num(_) | Term::Str(..) | Term::Var(_)) {
            if key && matches!(i, Term::Var(_)) {
                return pipe(i, call("__key", vec![]));
            }
            return self.term(i);
        }
        let i = pipe(call("__tick", vec![]), self.term(i));
        if key {
            pipe(i, call("__key", vec![]))
        } else {
            i
        }
    }

    /// `l, r` with its operands rewritten, commas among them unticked: a chain `a, b, c` is
    /// ticked once, where its values leave it.
    fn comma_chain<'s>(self, l: Term<&'s str>, r: Term<&'s str>) -> Term<&'s str> {
        let side = |t: Term<&'s str>| match t {
            Term::BinOp(l, BinaryOp::Comma, r) => self.comma_chain(*l, *r),
            t => self.term(t),
        };
        Term::BinOp(Box::new(side(l)), BinaryOp::Comma, Box::new(side(r)))
    }

    /// Rewrite a definition's body.
    pub(crate) fn def(self, d: Def<&str>) -> Def<&str> {
        Def {
            name: d.name,
            args: d.args,
            body: self.term(d.body),
        }
    }

    fn pattern(self, p: Pattern<&str>) -> Pattern<&str> {
        match p {
            Pattern::Var(v) => Pattern::Var(v),
            Pattern::Arr(ps) => Pattern::Arr(ps.into_iter().map(|p| self.pattern(p)).collect()),
            Pattern::Obj(kvs) => Pattern::Obj(
                kvs.into_iter()
                    .map(|(k, p)| (self.term(k), self.pattern(p)))
                    .collect(),
            ),
        }
    }
}

/// The names a term uses: filters it calls or defines (including string formats such as
/// `@base64`) and variables and labels it reads or binds (with their `$`). Locally defined
/// names count too: for the standard library, over-approximating only keeps more of it.
#[derive(Default)]
pub(crate) struct Names<'s> {
    /// Filters called or defined.
    pub(crate) calls: HashSet<&'s str>,
    /// Variables and labels.
    pub(crate) vars: HashSet<&'s str>,
}

impl<'s> Names<'s> {
    /// Add the names of a term.
    pub(crate) fn term(&mut self, t: &Term<&'s str>) {
        match t {
            Term::Var(v) | Term::Break(v) | Term::Label(v, _) => {
                self.vars.insert(v);
            }
            Term::Call(name, _) => {
                self.calls.insert(name);
            }
            Term::Str(Some(fmt), _) => {
                self.calls.insert(fmt);
            }
            Term::BinOp(_, BinaryOp::Pipe(Some(p)), _) | Term::Fold(_, _, p, _) => {
                crate::walk::pattern_vars(p, &mut |v| {
                    self.vars.insert(v);
                });
            }
            Term::Def(defs, _) => {
                for d in defs {
                    self.calls.insert(d.name);
                    for a in &d.args {
                        if a.starts_with('$') {
                            self.vars.insert(a);
                        } else {
                            self.calls.insert(a);
                        }
                    }
                }
            }
            _ => {}
        }
        crate::walk::subterms(t, &mut |s| self.term(s));
    }
}

/// The standard definitions reachable from `roots`, in their original order (later
/// definitions may shadow earlier ones of the same name, so order matters).
pub(crate) fn reachable<'a>(
    prelude: &'a [(Def<&'static str>, Vec<&'static str>)],
    roots: &HashSet<&str>,
) -> Vec<&'a Def<&'static str>> {
    let mut wanted: HashSet<&str> = roots.clone();
    let mut todo: Vec<&str> = wanted.iter().copied().collect();
    while let Some(name) = todo.pop() {
        for (d, deps) in prelude {
            if d.name == name {
                for dep in deps {
                    if wanted.insert(dep) {
                        todo.push(dep);
                    }
                }
            }
        }
    }
    prelude
        .iter()
        .filter(|(d, _)| wanted.contains(d.name))
        .map(|(d, _)| d)
        .collect()
}
