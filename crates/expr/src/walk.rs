//! The one walk over jaq's syntax: which terms stand directly inside a term. The recursion
//! check (`syntax`) and the rewrite's collection of names (`rewrite`) build on it, so a term
//! variant is taken apart in one place.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::path::Part;

/// Call `f` on each term directly inside `t`, in source order: arguments, string
/// interpolations, array and object parts, both sides of an operator and the terms of its
/// destructuring pattern, a fold's input, pattern and arguments, `try`/`catch`, every branch,
/// definition bodies, and a path's indices.
///
/// Every variant is named (no `_` arm): a new one in jaq fails to compile here. Inlined into
/// each walk, so that a walk costs what its own `match` over the variants would.
#[inline(always)]
pub(crate) fn subterms<'a, S>(t: &'a Term<S>, f: &mut impl FnMut(&'a Term<S>)) {
    match t {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Break(_) | Term::Var(_) => {}
        Term::Str(_, parts) => {
            for p in parts {
                if let StrPart::Term(t) = p {
                    f(t);
                }
            }
        }
        Term::Arr(a) => {
            if let Some(a) = a {
                f(a);
            }
        }
        Term::Obj(kvs) => {
            for (k, v) in kvs {
                f(k);
                if let Some(v) = v {
                    f(v);
                }
            }
        }
        Term::Neg(a) | Term::Label(_, a) => f(a),
        Term::BinOp(l, op, r) => {
            f(l);
            if let BinaryOp::Pipe(Some(p)) = op {
                pattern_terms(p, f);
            }
            f(r);
        }
        Term::Fold(_, xs, pat, args) => {
            f(xs);
            pattern_terms(pat, f);
            for a in args {
                f(a);
            }
        }
        Term::TryCatch(a, b) => {
            f(a);
            if let Some(b) = b {
                f(b);
            }
        }
        Term::IfThenElse(branches, e) => {
            for (c, t) in branches {
                f(c);
                f(t);
            }
            if let Some(e) = e {
                f(e);
            }
        }
        Term::Def(defs, body) => {
            defs.iter().for_each(|d| f(&d.body));
            f(body);
        }
        Term::Call(_, args) => {
            for a in args {
                f(a);
            }
        }
        Term::Path(t, path) => {
            f(t);
            for (part, _) in &path.0 {
                match part {
                    Part::Index(i) => f(i),
                    Part::Range(a, b) => {
                        if let Some(a) = a {
                            f(a);
                        }
                        if let Some(b) = b {
                            f(b);
                        }
                    }
                }
            }
        }
    }
}

/// The terms in a destructuring pattern (the keys of its object patterns), in source order.
pub(crate) fn pattern_terms<'a, S>(p: &'a Pattern<S>, f: &mut impl FnMut(&'a Term<S>)) {
    match p {
        Pattern::Var(_) => {}
        Pattern::Arr(ps) => ps.iter().for_each(|p| pattern_terms(p, f)),
        Pattern::Obj(kvs) => {
            for (k, p) in kvs {
                f(k);
                pattern_terms(p, f);
            }
        }
    }
}

/// The variables a destructuring pattern binds.
pub(crate) fn pattern_vars<'a, S>(p: &'a Pattern<S>, f: &mut impl FnMut(&'a S)) {
    match p {
        Pattern::Var(v) => f(v),
        Pattern::Arr(ps) => ps.iter().for_each(|p| pattern_vars(p, f)),
        Pattern::Obj(kvs) => kvs.iter().for_each(|(_, p)| pattern_vars(p, f)),
    }
}

/// True when `pred` holds for `t` or for a term anywhere inside it.
pub(crate) fn any_term<S>(t: &Term<S>, pred: &impl Fn(&Term<S>) -> bool) -> bool {
    if pred(t) {
        return true;
    }
    let mut found = false;
    subterms(t, &mut |s| found = found || any_term(s, pred));
    found
}
