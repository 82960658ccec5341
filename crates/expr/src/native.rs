//! Native evaluation of the jq subset that definitions are written in: paths, `//`,
//! comparisons, `and`/`or`, `if`, `as $x |`, array and object construction, arithmetic and a
//! few builtins (`select`, `any`, `all`, `length`, `to_entries`, `map`, `min`, `max`, ...).
//!
//! Why: an interpreted jaq run costs a context, boxed iterators and a lookup table walk per
//! term; most of a resolve was spent there on expressions like `(.spec.replicas // 0) > 0`.
//! This evaluator walks the parsed term directly, pushes outputs to a callback (so `first`,
//! `any` and `//` stop early, like jaq's lazy iterators) and uses jaq's own value operations
//! (`index`, `+`, `<`, ...), so answers and error messages are jaq's. Where jaq's semantics
//! are subtle (the order of outputs of `.[a, b][c, d]`, errors paired in a cartesian product,
//! errors carried along a stream) this module follows jaq's `filter.rs` step by step.
//!
//! Anything outside the subset is `None` from [`convert`] and runs in jaq; a value this
//! evaluator does not handle the way jaq would (the length of a number, the type of a byte
//! string) makes it bail out at run time and the expression runs in jaq. The sandbox's checks
//! are the same as in jaq (`rewrite.rs`): checked `+` and `*`, collected items spend a step and
//! count as kept, built arrays and objects are measured as trees. Differential tests and a
//! fuzz target compare it with jaq.

use crate::sandbox::{Budget, budget_value_error, checked_add, checked_mul};
use jaq_core::ValT as _;
use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::ops::{Cmp, Math};
use jaq_core::path::{Opt, Part};
use jaq_json::Val;
use std::cell::Cell;
use std::ops::ControlFlow;

/// A term of the subset.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Id,
    Const(Val),
    Empty,
    /// `f` followed by path parts; `bool` = optional (`?`).
    Path(Box<Node>, Vec<(PathPart, bool)>),
    Pipe(Box<Node>, Box<Node>),
    /// `l as $x | r`: `r` sees `l`'s output as local 0.
    Bind(Box<Node>, Box<Node>),
    Comma(Box<Node>, Box<Node>),
    Alt(Box<Node>, Box<Node>),
    /// `l and r` (stop = false), `l or r` (stop = true).
    Logic(Box<Node>, bool, Box<Node>),
    /// `l op r`; `bool` = bound: `rewrite.rs` turns `l + r` and `l * r` into
    /// `l as $l | r as $r | checked($l; $r)`, so an error of `l` is yielded once, before `r`
    /// runs (jaq's own operators pair it with every output of `r`).
    Math(Box<Node>, Math, Box<Node>, bool),
    Cmp(Box<Node>, Cmp, Box<Node>),
    Neg(Box<Node>),
    Ite(Box<Node>, Box<Node>, Box<Node>),
    Arr(Option<Box<Node>>),
    Obj(Vec<(Node, Node)>),
    /// A variable bound by `as`, counted from the innermost.
    Local(usize),
    /// A declared variable (`$parentInstance`), by declaration order.
    Global(usize),
    Length,
    /// `any(g; c)` (true) and `all(g; c)` (false).
    AnyAll(Box<Node>, Box<Node>, bool),
    ToEntries,
    /// `min` (false) and `max` (true).
    MinMax(bool),
    /// `ascii_downcase` (false) and `ascii_upcase` (true).
    Ascii(bool),
    First(Box<Node>),
    Type,
}

#[derive(Debug, Clone)]
pub(crate) enum PathPart {
    Index(Node),
    Iter,
}

/// Convert a parsed term, or `None` when it is outside the subset. `globals` are the declared
/// variables (without `$`).
pub(crate) fn convert(t: &Term<&str>, globals: &[String]) -> Option<Node> {
    Conv {
        globals,
        locals: Vec::new(),
    }
    .term(t)
}

struct Conv<'g, 's> {
    globals: &'g [String],
    locals: Vec<&'s str>,
}

fn b(n: Node) -> Box<Node> {
    Box::new(n)
}

fn iter_input() -> Node {
    Node::Path(b(Node::Id), vec![(PathPart::Iter, false)])
}

impl<'s> Conv<'_, 's> {
    fn term(&mut self, t: &Term<&'s str>) -> Option<Node> {
        Some(match t {
            Term::Id => Node::Id,
            Term::Num(n) => Node::Const(match n.parse::<isize>() {
                Ok(i) => Val::from(i),
                Err(_) => Val::from_num(n).ok()?,
            }),
            Term::Str(None, parts) => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        StrPart::Str(x) => s.push_str(x),
                        StrPart::Char(c) => s.push(*c),
                        StrPart::Term(_) => return None,
                    }
                }
                Node::Const(Val::from(s))
            }
            Term::Arr(None) => Node::Arr(None),
            Term::Arr(Some(f)) => Node::Arr(Some(b(self.term(f)?))),
            Term::Obj(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    out.push(match (k, v) {
                        (Term::Var(x), None) => {
                            (Node::Const(Val::from(x[1..].to_string())), self.var(x)?)
                        }
                        (k, None) => {
                            let key = self.term(k)?;
                            let path = Node::Path(
                                b(Node::Id),
                                vec![(PathPart::Index(key.clone()), false)],
                            );
                            (key, path)
                        }
                        (k, Some(v)) => (self.term(k)?, self.term(v)?),
                    });
                }
                Node::Obj(out)
            }
            Term::Neg(f) => Node::Neg(b(self.term(f)?)),
            Term::BinOp(l, op, r) => {
                if let BinaryOp::Pipe(Some(pat)) = op {
                    let Pattern::Var(x) = pat else { return None };
                    let l = self.term(l)?;
                    self.locals.push(x);
                    let r = self.term(r);
                    self.locals.pop();
                    return Some(Node::Bind(b(l), b(r?)));
                }
                let (l_term, r_term) = (&**l, &**r);
                let (l, r) = (b(self.term(l)?), b(self.term(r)?));
                match op {
                    BinaryOp::Pipe(_) => Node::Pipe(l, r),
                    BinaryOp::Comma => Node::Comma(l, r),
                    BinaryOp::Alt => Node::Alt(l, r),
                    BinaryOp::Or => Node::Logic(l, true, r),
                    BinaryOp::And => Node::Logic(l, false, r),
                    BinaryOp::Math(m) => {
                        let bound = crate::rewrite::is_checked(l_term, *m, r_term);
                        Node::Math(l, *m, r, bound)
                    }
                    BinaryOp::Cmp(c) => Node::Cmp(l, *c, r),
                    _ => return None,
                }
            }
            Term::IfThenElse(if_thens, else_) => {
                let mut acc = match else_ {
                    Some(e) => self.term(e)?,
                    None => Node::Id,
                };
                for (i, t) in if_thens.iter().rev() {
                    acc = Node::Ite(b(self.term(i)?), b(self.term(t)?), b(acc));
                }
                acc
            }
            Term::Var(x) => self.var(x)?,
            Term::Path(f, path) => {
                let f = self.term(f)?;
                let mut parts = Vec::with_capacity(path.0.len());
                for (part, opt) in &path.0 {
                    let part = match part {
                        Part::Index(i) => PathPart::Index(self.term(i)?),
                        Part::Range(None, None) => PathPart::Iter,
                        Part::Range(..) => return None,
                    };
                    parts.push((part, matches!(opt, Opt::Optional)));
                }
                Node::Path(b(f), parts)
            }
            Term::Call(name, args) => self.call(name, args)?,
            _ => return None,
        })
    }

    fn var(&self, x: &str) -> Option<Node> {
        if let Some(i) = self.locals.iter().rev().position(|l| *l == x) {
            return Some(Node::Local(i));
        }
        let name = x.strip_prefix('$')?;
        self.globals
            .iter()
            .position(|g| g == name)
            .map(Node::Global)
    }

    fn call(&mut self, name: &str, args: &[Term<&'s str>]) -> Option<Node> {
        let mut a = Vec::with_capacity(args.len());
        for t in args {
            a.push(self.term(t)?);
        }
        let mut a = a.into_iter();
        let mut arg = || a.next().map(b);
        Some(match (name, args.len()) {
            ("true", 0) => Node::Const(Val::from(true)),
            ("false", 0) => Node::Const(Val::from(false)),
            ("null", 0) => Node::Const(Val::Null),
            ("empty", 0) => Node::Empty,
            // `def not: if . then false else true end;`
            ("not", 0) => Node::Ite(
                b(Node::Id),
                b(Node::Const(Val::from(false))),
                b(Node::Const(Val::from(true))),
            ),
            // `def select(f): if f then . else empty end;`
            ("select", 1) => Node::Ite(arg()?, b(Node::Id), b(Node::Empty)),
            ("length", 0) => Node::Length,
            ("any", 1) => Node::AnyAll(b(iter_input()), arg()?, true),
            ("all", 1) => Node::AnyAll(b(iter_input()), arg()?, false),
            ("any", 2) => Node::AnyAll(arg()?, arg()?, true),
            ("all", 2) => Node::AnyAll(arg()?, arg()?, false),
            ("any", 0) => Node::AnyAll(b(iter_input()), b(Node::Id), true),
            ("all", 0) => Node::AnyAll(b(iter_input()), b(Node::Id), false),
            ("to_entries", 0) => Node::ToEntries,
            // `def map(f): [.[] | f];`
            ("map", 1) => Node::Arr(Some(b(Node::Pipe(b(iter_input()), arg()?)))),
            ("min", 0) => Node::MinMax(false),
            ("max", 0) => Node::MinMax(true),
            ("ascii_downcase", 0) => Node::Ascii(false),
            ("ascii_upcase", 0) => Node::Ascii(true),
            // `def first: .[0];`
            ("first", 0) => Node::Path(
                b(Node::Id),
                vec![(PathPart::Index(Node::Const(Val::from(0isize))), false)],
            ),
            ("first", 1) => Node::First(arg()?),
            ("type", 0) => Node::Type,
            _ => return None,
        })
    }
}

type R = Result<Val, jaq_json::Error>;
type Flow = ControlFlow<()>;
const GO: Flow = ControlFlow::Continue(());
const STOP: Flow = ControlFlow::Break(());

/// Variables bound by `as`, innermost first.
pub(crate) struct Env<'a> {
    head: Val,
    tail: Option<&'a Env<'a>>,
}

/// One evaluation.
pub(crate) struct Run<'r> {
    pub(crate) globals: &'r [Val],
    pub(crate) budget: &'r Budget,
    /// Set when a value needs jaq (the run stops; the caller evaluates with jaq).
    pub(crate) bail: Cell<bool>,
    iterations: Cell<u32>,
}

fn truthy(v: &Val) -> bool {
    !matches!(v, Val::Null | Val::Bool(false))
}

/// The first error of a row of results, else their values.
fn first_err<'a>(xs: impl Iterator<Item = &'a R>) -> Result<Vec<&'a Val>, jaq_json::Error> {
    let mut out = Vec::new();
    for x in xs {
        match x {
            Ok(v) => out.push(v),
            Err(e) => return Err(e.clone()),
        }
    }
    Ok(out)
}

impl<'r> Run<'r> {
    pub(crate) fn new(globals: &'r [Val], budget: &'r Budget) -> Self {
        Run {
            globals,
            budget,
            bail: Cell::new(false),
            iterations: Cell::new(0),
        }
    }

    fn bail(&self) -> Flow {
        self.bail.set(true);
        STOP
    }

    /// Count an iteration; stop at the deadline (jaq checks it in its loop builtins; here
    /// nested iterations over the input are the only way to spend time).
    fn iterated(&self) -> Flow {
        let n = self.iterations.get().wrapping_add(1);
        self.iterations.set(n);
        if n.is_multiple_of(1024) && self.budget.past_deadline() {
            return STOP;
        }
        GO
    }

    /// Run `n` on `v`, pushing each output (or error) to `k` until it says stop.
    pub(crate) fn run(
        &self,
        n: &Node,
        v: &Val,
        env: Option<&Env>,
        k: &mut dyn FnMut(R) -> Flow,
    ) -> Flow {
        match n {
            Node::Id => k(Ok(v.clone())),
            Node::Const(c) => k(Ok(c.clone())),
            Node::Empty => GO,
            Node::Comma(l, r) => {
                self.run(l, v, env, k)?;
                self.run(r, v, env, k)
            }
            Node::Pipe(l, r) => self.run(l, v, env, &mut |x| match x {
                Ok(y) => self.run(r, &y, env, k),
                Err(e) => k(Err(e)),
            }),
            Node::Bind(l, r) => self.run(l, v, env, &mut |x| match x {
                Ok(y) => {
                    let inner = Env { head: y, tail: env };
                    self.run(r, v, Some(&inner), k)
                }
                Err(e) => k(Err(e)),
            }),
            // jaq: the left outputs that are errors or true, else the right's outputs.
            Node::Alt(l, r) => {
                let mut any = false;
                self.run(l, v, env, &mut |x| {
                    if x.as_ref().map_or(true, truthy) {
                        any = true;
                        k(x)
                    } else {
                        GO
                    }
                })?;
                if any { GO } else { self.run(r, v, env, k) }
            }
            Node::Logic(l, stop, r) => self.run(l, v, env, &mut |x| match x {
                Ok(a) if truthy(&a) == *stop => k(Ok(Val::from(*stop))),
                Ok(_) => self.run(r, v, env, &mut |y| k(y.map(|y| Val::from(truthy(&y))))),
                Err(e) => k(Err(e)),
            }),
            // jaq's `cartesian`: each left output (even an error) with each right output.
            Node::Math(l, op, r, true) => self.run(l, v, env, &mut |x| match x {
                Ok(a) => self.run(r, v, env, &mut |y| {
                    k(y.and_then(|c| self.math(a.clone(), *op, c)))
                }),
                Err(e) => k(Err(e)),
            }),
            Node::Math(l, op, r, false) => self.run(l, v, env, &mut |x| {
                self.run(r, v, env, &mut |y| {
                    let out = match (&x, y) {
                        (Err(e), _) => Err(e.clone()),
                        (_, Err(e)) => Err(e),
                        (Ok(a), Ok(c)) => self.math(a.clone(), *op, c),
                    };
                    k(out)
                })
            }),
            Node::Cmp(l, op, r) => self.run(l, v, env, &mut |x| {
                self.run(r, v, env, &mut |y| {
                    let out = match (&x, y) {
                        (Err(e), _) => Err(e.clone()),
                        (_, Err(e)) => Err(e),
                        (Ok(a), Ok(c)) => Ok(Val::from(op.run(a, &c))),
                    };
                    k(out)
                })
            }),
            Node::Neg(f) => self.run(f, v, env, &mut |x| k(x.and_then(|x| -x))),
            Node::Ite(c, t, e) => self.run(c, v, env, &mut |x| match x {
                Ok(a) => self.run(if truthy(&a) { t } else { e }, v, env, k),
                Err(e) => k(Err(e)),
            }),
            Node::Arr(None) => k(Ok(Val::Arr(Default::default()))),
            Node::Arr(Some(f)) => {
                let r = self.collect(f, v, env)?;
                k(r.and_then(|a| self.tree(a)))
            }
            Node::Obj(entries) => {
                let mut row = Vec::with_capacity(entries.len());
                self.obj(entries, v, env, &mut row, k)
            }
            Node::Local(i) => {
                let mut e = env;
                for _ in 0..*i {
                    e = e.and_then(|e| e.tail);
                }
                match e {
                    Some(e) => k(Ok(e.head.clone())),
                    None => self.bail(),
                }
            }
            Node::Global(i) => k(Ok(self.globals.get(*i).cloned().unwrap_or(Val::Null))),
            Node::Path(f, parts) => self.path(f, parts, v, env, k),
            Node::Length => match v {
                Val::Null => k(Ok(Val::from(0usize))),
                Val::Arr(a) => k(Ok(Val::from(a.len()))),
                Val::Obj(o) => k(Ok(Val::from(o.len()))),
                Val::BStr(s) => k(Ok(Val::from(s.len()))),
                Val::TStr(s) => match std::str::from_utf8(s) {
                    Ok(s) => k(Ok(Val::from(s.chars().count()))),
                    Err(_) => self.bail(),
                },
                Val::Bool(_) => k(Err(jaq_json::Error::str(format_args!("{v} has no length")))),
                Val::Num(_) => self.bail(),
            },
            // jaq: `def any(g; c): isempty(g | c or empty) | not;` and
            // `def all(g; c): isempty(g | c and empty);`: the first error or decisive value.
            Node::AnyAll(g, c, any) => {
                let mut found: Option<R> = None;
                let flow = self.run(g, v, env, &mut |x| match x {
                    Ok(y) => self.run(c, &y, env, &mut |z| match z {
                        Ok(a) if truthy(&a) == *any => {
                            found = Some(Ok(Val::from(*any)));
                            STOP
                        }
                        Ok(_) => GO,
                        Err(e) => {
                            found = Some(Err(e));
                            STOP
                        }
                    }),
                    Err(e) => {
                        found = Some(Err(e));
                        STOP
                    }
                });
                if flow.is_break() && found.is_none() {
                    return STOP; // a bail-out or the deadline
                }
                k(found.unwrap_or_else(|| Ok(Val::from(!*any))))
            }
            // jaq: `def to_entries: [key_values[] as [$key, $value] | {$key, $value}];`
            Node::ToEntries => {
                let pairs: Vec<(Val, Val)> = match v {
                    Val::Obj(o) => o.iter().map(|(a, c)| (a.clone(), c.clone())).collect(),
                    Val::Arr(a) => a
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (Val::from(i as isize), c.clone()))
                        .collect(),
                    _ => {
                        let err = v.clone().key_values().find_map(Result::err);
                        return match err {
                            Some(e) => k(Err(e)),
                            None => self.bail(),
                        };
                    }
                };
                let (key, value) = (Val::from("key".to_string()), Val::from("value".to_string()));
                let mut items = Vec::with_capacity(pairs.len());
                for (a, c) in pairs {
                    let entry =
                        Val::obj([(key.clone(), a), (value.clone(), c)].into_iter().collect());
                    match self.tree(entry).and_then(|e| self.item(e)) {
                        Ok(e) => items.push(e),
                        Err(e) => return k(Err(e)),
                    }
                }
                k(self.tree(Val::from_iter(items)))
            }
            // jaq: `min_by_or_empty(.)` keeps the first least, `max_by_or_empty(.)` the last
            // greatest; an empty array gives null.
            Node::MinMax(max) => match v {
                Val::Arr(a) => {
                    let mut best: Option<&Val> = None;
                    for y in a.iter() {
                        best = match best {
                            None => Some(y),
                            Some(m) if (*max && y >= m) || (!*max && y < m) => Some(y),
                            keep => keep,
                        };
                    }
                    k(Ok(best.cloned().unwrap_or(Val::Null)))
                }
                _ => k(Err(jaq_json::Error::typ(v.clone(), "array"))),
            },
            Node::Ascii(upper) => {
                // jaq-std: `map_utf8_str`, which fails on anything but a text string.
                let r = match v {
                    Val::TStr(s) if *upper => Ok(Val::utf8_str(s.to_ascii_uppercase())),
                    Val::TStr(s) => Ok(Val::utf8_str(s.to_ascii_lowercase())),
                    _ => Err(jaq_json::Error::typ(v.clone(), "string")),
                };
                k(r)
            }
            Node::First(f) => {
                let mut got = None;
                let flow = self.run(f, v, env, &mut |x| {
                    got = Some(x);
                    STOP
                });
                match got {
                    Some(x) => k(x),
                    None if flow.is_break() => STOP,
                    None => GO,
                }
            }
            Node::Type => {
                let t = match v {
                    Val::Null => "null",
                    Val::Bool(_) => "boolean",
                    Val::Num(_) => "number",
                    Val::TStr(_) => "string",
                    Val::Arr(_) => "array",
                    Val::Obj(_) => "object",
                    Val::BStr(_) => return self.bail(),
                };
                k(Ok(Val::from(t.to_string())))
            }
        }
    }

    fn math(&self, a: Val, op: Math, c: Val) -> R {
        match op {
            Math::Add => checked_add(a, c, self.budget),
            Math::Mul => checked_mul(a, c, self.budget),
            _ => op.run(a, c),
        }
    }

    /// `__tree`: a built array or object measured as a tree.
    fn tree(&self, v: Val) -> R {
        self.budget.check_shape(&v).map_err(budget_value_error)?;
        Ok(v)
    }

    /// `__item`: a collected item spends a step and counts as kept.
    fn item(&self, v: Val) -> R {
        self.budget
            .tick()
            .and_then(|()| self.budget.keep(&v))
            .map_err(budget_value_error)?;
        Ok(v)
    }

    /// `[f]`: the items, or the first error. `Break` when the run must stop.
    fn collect(&self, f: &Node, v: &Val, env: Option<&Env>) -> ControlFlow<(), R> {
        let mut items = Vec::new();
        let mut err = None;
        let flow = self.run(f, v, env, &mut |x| match x.and_then(|y| self.item(y)) {
            Ok(y) => {
                items.push(y);
                GO
            }
            Err(e) => {
                err = Some(e);
                STOP
            }
        });
        match err {
            Some(e) => ControlFlow::Continue(Err(e)),
            None if flow.is_break() => ControlFlow::Break(()),
            None => ControlFlow::Continue(Ok(Val::from_iter(items))),
        }
    }

    /// An object: jaq sums one-entry objects, so the outputs are the cartesian product of the
    /// entries' outputs (first entry outermost, key before value) and a combination that holds
    /// an error yields its first error.
    fn obj(
        &self,
        entries: &[(Node, Node)],
        v: &Val,
        env: Option<&Env>,
        row: &mut Vec<Result<(Val, Val), jaq_json::Error>>,
        k: &mut dyn FnMut(R) -> Flow,
    ) -> Flow {
        let Some(((kn, vn), rest)) = entries.split_first() else {
            let mut map = jaq_json::Map::default();
            for e in row.iter() {
                match e {
                    Ok((a, c)) => {
                        map.insert(a.clone(), c.clone());
                    }
                    Err(e) => return k(Err(e.clone())),
                }
            }
            return k(self.tree(Val::obj(map)));
        };
        self.run(kn, v, env, &mut |key| {
            self.run(vn, v, env, &mut |val| {
                let pair = match (&key, val) {
                    (Err(e), _) => Err(e.clone()),
                    (_, Err(e)) => Err(e),
                    (Ok(a), Ok(c)) => Ok((a.clone(), c)),
                };
                row.push(pair);
                let flow = self.obj(rest, v, env, row, k);
                row.pop();
                flow
            })
        })
    }

    /// `f | path`: jaq evaluates the index expressions on the input once, then runs every
    /// combination of their outputs (first part outermost) on every output of `f`.
    fn path(
        &self,
        f: &Node,
        parts: &[(PathPart, bool)],
        v: &Val,
        env: Option<&Env>,
        k: &mut dyn FnMut(R) -> Flow,
    ) -> Flow {
        // Most paths are constant keys: no allocation for them.
        let mut indices: Vec<Vec<R>> = Vec::new();
        for (part, _) in parts {
            if let PathPart::Index(i) = part
                && !matches!(i, Node::Const(_))
            {
                let mut outs = Vec::new();
                self.run(i, v, env, &mut |x| {
                    outs.push(x);
                    GO
                })?;
                indices.push(outs);
            }
        }
        self.run(f, v, env, &mut |y| match y {
            Ok(y) => {
                let mut chosen = Vec::with_capacity(indices.len());
                self.combos(parts, &indices, &mut chosen, &y, k)
            }
            Err(e) => k(Err(e)),
        })
    }

    fn combos<'i>(
        &self,
        parts: &[(PathPart, bool)],
        indices: &'i [Vec<R>],
        chosen: &mut Vec<&'i R>,
        y: &Val,
        k: &mut dyn FnMut(R) -> Flow,
    ) -> Flow {
        if let Some((first, rest)) = indices.split_first() {
            for x in first {
                chosen.push(x);
                let flow = self.combos(parts, rest, chosen, y, k);
                chosen.pop();
                flow?;
            }
            return GO;
        }
        match first_err(chosen.iter().copied()) {
            Ok(vals) => self.walk(parts, &vals, y, k),
            Err(e) => k(Err(e)),
        }
    }

    /// Run one concrete path on `y`; `vals` are the non-constant indices in order.
    fn walk(
        &self,
        parts: &[(PathPart, bool)],
        vals: &[&Val],
        y: &Val,
        k: &mut dyn FnMut(R) -> Flow,
    ) -> Flow {
        let Some(((part, optional), rest)) = parts.split_first() else {
            return k(Ok(y.clone()));
        };
        match part {
            PathPart::Index(i) => {
                let (idx, vals) = match i {
                    Node::Const(c) => (c, vals),
                    _ => match vals.split_first() {
                        Some((x, more)) => (*x, more),
                        None => return self.bail(),
                    },
                };
                match (y, idx) {
                    (Val::Null, _) => self.walk(rest, vals, &Val::Null, k),
                    (Val::Obj(o), key) => match o.get(key) {
                        Some(c) => self.walk(rest, vals, c, k),
                        None => self.walk(rest, vals, &Val::Null, k),
                    },
                    _ => match y.clone().index(idx) {
                        Ok(c) => self.walk(rest, vals, &c, k),
                        Err(_) if *optional => GO,
                        Err(e) => k(Err(e)),
                    },
                }
            }
            PathPart::Iter => match y {
                Val::Arr(a) => {
                    for c in a.iter() {
                        self.iterated()?;
                        self.walk(rest, vals, c, k)?;
                    }
                    GO
                }
                Val::Obj(o) => {
                    for c in o.values() {
                        self.iterated()?;
                        self.walk(rest, vals, c, k)?;
                    }
                    GO
                }
                _ if *optional => GO,
                _ => match y.clone().values().find_map(Result::err) {
                    Some(e) => k(Err(e)),
                    None => self.bail(),
                },
            },
        }
    }
}
