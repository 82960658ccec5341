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

use crate::budget::{Budget, budget_value_error};
use crate::sandbox::{checked_add, checked_mul};
use jaq_core::ValT as _;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::ops::{Cmp, Math};
use jaq_core::path::{Opt, Part};
use jaq_json::Val;
use std::cell::Cell;
use std::ops::ControlFlow;
use wlmap_json::Field;

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
    /// `to_entries[] | .key`: the keys (or indices) of the input, values left unconverted.
    EntryKeys,
    /// `min` (false) and `max` (true).
    MinMax(bool),
    /// `ascii_downcase` (false) and `ascii_upcase` (true).
    Ascii(bool),
    First(Box<Node>),
    Type,
}

#[derive(Debug, Clone)]
pub(crate) enum PathPart {
    /// A constant string key (`.a`, `."a"`, `.["a"]`), also as text to read JSON objects.
    Key(Val, String),
    Index(Node),
    Iter,
}

/// Convert a parsed term, or `None` when it is outside the subset. `globals` are the declared
/// variables (without `$`).
pub(crate) fn convert(t: &Term<&str>, globals: &[String]) -> Option<Node> {
    Conv {
        globals,
        locals: Vec::new(),
        depth: 0,
    }
    .term(t)
}

/// Deepest nesting of terms (and path steps) evaluated natively: the evaluator recurses once
/// per level, so a term nested deeper (`- - - ... 1`, a path of 1,000 steps) is left to jaq
/// rather than risking the stack. Definitions nest a dozen levels.
const MAX_NATIVE_DEPTH: usize = 48;

struct Conv<'g, 's> {
    globals: &'g [String],
    locals: Vec<&'s str>,
    depth: usize,
}

fn b(n: Node) -> Box<Node> {
    Box::new(n)
}

fn iter_input() -> Node {
    Node::Path(b(Node::Id), vec![(PathPart::Iter, false)])
}

impl<'s> Conv<'_, 's> {
    fn term(&mut self, t: &Term<&'s str>) -> Option<Node> {
        let steps = match t {
            Term::Path(_, path) => 1 + path.0.len(),
            _ => 1,
        };
        self.depth += steps;
        let node = if self.depth > MAX_NATIVE_DEPTH {
            None
        } else {
            self.term_inner(t)
        };
        self.depth -= steps;
        node
    }

    fn term_inner(&mut self, t: &Term<&'s str>) -> Option<Node> {
        Some(match t {
            Term::Id => Node::Id,
            Term::Num(n) => Node::Const(match n.parse::<isize>() {
                Ok(i) => Val::from(i),
                Err(_) => Val::from_num(n).ok()?,
            }),
            Term::Str(None, _) => Node::Const(Val::from(crate::reads::constant(t)?)),
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
                    BinaryOp::Pipe(_) => pipe(l, r),
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
                        Part::Index(i) => match self.term(i)? {
                            Node::Const(Val::TStr(k)) => match std::str::from_utf8(&k) {
                                Ok(text) => PathPart::Key(Val::TStr(k.clone()), text.to_string()),
                                Err(_) => PathPart::Index(Node::Const(Val::TStr(k))),
                            },
                            other => PathPart::Index(other),
                        },
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

/// A value during native evaluation: a part of the input JSON (borrowed, never converted
/// unless an operation needs jaq's value) or a value of its own (built, a constant, a variable).
#[derive(Clone, Debug)]
pub(crate) enum V<'a> {
    J(&'a serde_json::Value),
    O(Val),
}

const NULL: serde_json::Value = serde_json::Value::Null;

impl V<'_> {
    /// jaq's value (a conversion for a JSON part: only where an operation needs it).
    pub(crate) fn val(&self) -> Val {
        match self {
            V::J(j) => crate::to_val(j),
            V::O(v) => v.clone(),
        }
    }

    pub(crate) fn into_val(self) -> Val {
        match self {
            V::J(j) => crate::to_val(j),
            V::O(v) => v,
        }
    }

    fn truthy(&self) -> bool {
        use serde_json::Value as J;
        !matches!(
            self,
            V::J(J::Null | J::Bool(false)) | V::O(Val::Null | Val::Bool(false))
        )
    }

    /// The bytes of a text string.
    fn text(&self) -> Option<&[u8]> {
        match self {
            V::J(serde_json::Value::String(s)) => Some(s.as_bytes()),
            V::O(Val::TStr(b)) => Some(b),
            _ => None,
        }
    }
}

/// jaq's comparison, without converting two strings (the common case: `.type == "Ready"`).
fn compare(op: Cmp, a: &V, b: &V) -> bool {
    match (a.text(), b.text()) {
        (Some(x), Some(y)) => op.run(&x, &y),
        _ => op.run(&a.val(), &b.val()),
    }
}

fn ordering(a: &V, b: &V) -> std::cmp::Ordering {
    match (a.text(), b.text()) {
        (Some(x), Some(y)) => x.cmp(y),
        _ => a.val().cmp(&b.val()),
    }
}

type R<'a> = Result<V<'a>, jaq_json::Error>;
type Flow = ControlFlow<()>;
const GO: Flow = ControlFlow::Continue(());
const STOP: Flow = ControlFlow::Break(());

/// Variables bound by `as`, innermost first.
pub(crate) struct Env<'e, 'a> {
    head: V<'a>,
    tail: Option<&'e Env<'e, 'a>>,
}

/// One evaluation.
pub(crate) struct Run<'r> {
    pub(crate) globals: &'r [Val],
    pub(crate) budget: &'r Budget,
    /// Set when a value needs jaq (the run stops; the caller evaluates with jaq).
    pub(crate) bail: Cell<bool>,
}

/// The first error of a row of results, else their values.
/// An array of two or more elements: a key jaq refuses (`.[[a, b]]`).
fn is_array_key(v: &V) -> bool {
    match v {
        V::O(Val::Arr(a)) => a.len() > 1,
        V::J(serde_json::Value::Array(a)) => a.len() > 1,
        _ => false,
    }
}

fn first_err<'v, 'a>(xs: impl Iterator<Item = &'v R<'a>>) -> Result<Vec<&'v V<'a>>, jaq_json::Error>
where
    'a: 'v,
{
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
        }
    }

    fn bail(&self) -> Flow {
        self.bail.set(true);
        STOP
    }

    /// A value made by iterating or by `,` spends a step, as in jaq (`rewrite.rs` puts a
    /// `__tick` after those terms): products of them are the only way to spend time here.
    /// Out of steps or past the deadline, evaluation stops and the budget says why.
    fn iterated(&self) -> Flow {
        match self.budget.tick() {
            Ok(()) => GO,
            Err(_) => STOP,
        }
    }

    /// Run `n` on `v`, pushing each output (or error) to `k` until it says stop.
    ///
    /// One arm per node kind of the subset: this is the interpreter's dispatch, kept in one
    /// match so that each arm's budget and borrowing rules are read side by side.
    pub(crate) fn run<'a>(
        &self,
        n: &Node,
        v: &V<'a>,
        env: Option<&Env<'_, 'a>>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
    ) -> Flow {
        match n {
            Node::Id => k(Ok(v.clone())),
            Node::Const(c) => k(Ok(V::O(c.clone()))),
            Node::Empty => GO,
            Node::Comma(l, r) => {
                let k = &mut |x| {
                    self.iterated()?;
                    k(x)
                };
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
                    if x.as_ref().map_or(true, V::truthy) {
                        any = true;
                        k(x)
                    } else {
                        GO
                    }
                })?;
                if any { GO } else { self.run(r, v, env, k) }
            }
            Node::Logic(l, stop, r) => self.run(l, v, env, &mut |x| match x {
                Ok(a) if a.truthy() == *stop => k(Ok(V::O(Val::from(*stop)))),
                Ok(_) => self.run(
                    r,
                    v,
                    env,
                    &mut |y| k(y.map(|y| V::O(Val::from(y.truthy())))),
                ),
                Err(e) => k(Err(e)),
            }),
            Node::Math(l, op, r, true) => self.run(l, v, env, &mut |x| match x {
                Ok(a) => self.run(r, v, env, &mut |y| {
                    k(y.and_then(|c| self.math(a.val(), *op, c.into_val())))
                }),
                Err(e) => k(Err(e)),
            }),
            // jaq's `cartesian`: each left output (even an error) with each right output.
            Node::Math(l, op, r, false) => self.run(l, v, env, &mut |x| {
                self.run(r, v, env, &mut |y| {
                    let out = match (&x, y) {
                        (Err(e), _) => Err(e.clone()),
                        (_, Err(e)) => Err(e),
                        (Ok(a), Ok(c)) => self.math(a.val(), *op, c.into_val()),
                    };
                    k(out)
                })
            }),
            Node::Cmp(l, op, r) => self.run(l, v, env, &mut |x| {
                self.run(r, v, env, &mut |y| {
                    let out = match (&x, y) {
                        (Err(e), _) => Err(e.clone()),
                        (_, Err(e)) => Err(e),
                        (Ok(a), Ok(c)) => Ok(V::O(Val::from(compare(*op, a, &c)))),
                    };
                    k(out)
                })
            }),
            Node::Neg(f) => self.run(f, v, env, &mut |x| {
                k(x.and_then(|x| (-x.into_val()).map(V::O)))
            }),
            Node::Ite(c, t, e) => self.run(c, v, env, &mut |x| match x {
                Ok(a) => self.run(if a.truthy() { t } else { e }, v, env, k),
                Err(e) => k(Err(e)),
            }),
            Node::Arr(None) => k(Ok(V::O(Val::Arr(Default::default())))),
            Node::Arr(Some(f)) => {
                let r = self.collect(f, v, env)?;
                k(r.and_then(|a| self.tree(a)).map(V::O))
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
            Node::Global(i) => k(Ok(V::O(self.globals.get(*i).cloned().unwrap_or(Val::Null)))),
            Node::Path(f, parts) => self.path(f, parts, v, env, k),
            Node::Length => {
                use serde_json::Value as J;
                let n = match v {
                    V::J(J::Null) | V::O(Val::Null) => 0,
                    V::J(J::Array(a)) => a.len(),
                    V::J(J::Object(o)) => o.len(),
                    V::J(J::String(s)) => s.chars().count(),
                    V::O(Val::Arr(a)) => a.len(),
                    V::O(Val::Obj(o)) => o.len(),
                    V::O(Val::BStr(s)) => s.len(),
                    V::O(Val::TStr(s)) => match std::str::from_utf8(s) {
                        Ok(s) => s.chars().count(),
                        Err(_) => return self.bail(),
                    },
                    V::J(J::Bool(_)) | V::O(Val::Bool(_)) => {
                        let b = v.val();
                        return k(Err(jaq_json::Error::str(format_args!("{b} has no length"))));
                    }
                    V::J(J::Number(_)) | V::O(Val::Num(_)) => return self.bail(),
                };
                k(Ok(V::O(Val::from(n))))
            }
            // jaq: `def any(g; c): isempty(g | c or empty) | not;` and
            // `def all(g; c): isempty(g | c and empty);`: the first error or decisive value.
            Node::AnyAll(g, c, any) => {
                let mut found: Option<Result<bool, jaq_json::Error>> = None;
                let flow = self.run(g, v, env, &mut |x| match x {
                    Ok(y) => self.run(c, &y, env, &mut |z| match z {
                        Ok(a) if a.truthy() == *any => {
                            found = Some(Ok(*any));
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
                let b = found.unwrap_or(Ok(!*any));
                k(b.map(|b| V::O(Val::from(b))))
            }
            // The keys `to_entries[] | .key` yields; a step each, as `[]` spends.
            Node::EntryKeys => {
                use serde_json::Value as J;
                let mut each = |key: Val| {
                    self.iterated()?;
                    k(Ok(V::O(key)))
                };
                let index = |i: usize| Val::from(i as isize);
                match v {
                    V::J(J::Object(o)) => o.keys().try_for_each(|a| each(Val::from(a.clone())))?,
                    V::O(Val::Obj(o)) => o.keys().try_for_each(|a| each(a.clone()))?,
                    V::J(J::Array(a)) => (0..a.len()).try_for_each(|i| each(index(i)))?,
                    V::O(Val::Arr(a)) => (0..a.len()).try_for_each(|i| each(index(i)))?,
                    _ => {
                        let err = v.val().key_values().find_map(Result::err);
                        return match err {
                            Some(e) => k(Err(e)),
                            None => self.bail(),
                        };
                    }
                }
                GO
            }
            // jaq: `def to_entries: [key_values[] as [$key, $value] | {$key, $value}];`
            Node::ToEntries => {
                use serde_json::Value as J;
                let pairs: Vec<(Val, Val)> = match v {
                    V::J(J::Object(o)) => o
                        .iter()
                        .map(|(a, c)| (Val::from(a.clone()), crate::to_val(c)))
                        .collect(),
                    V::J(J::Array(a)) => a
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (Val::from(i as isize), crate::to_val(c)))
                        .collect(),
                    V::O(Val::Obj(o)) => o.iter().map(|(a, c)| (a.clone(), c.clone())).collect(),
                    V::O(Val::Arr(a)) => a
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (Val::from(i as isize), c.clone()))
                        .collect(),
                    _ => {
                        let err = v.val().key_values().find_map(Result::err);
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
                    match self.tree(entry).and_then(|e| self.item(V::O(e))) {
                        Ok(e) => items.push(e),
                        Err(e) => return k(Err(e)),
                    }
                }
                k(self.tree(Val::from_iter(items)).map(V::O))
            }
            // jaq: `min_by_or_empty(.)` keeps the first least, `max_by_or_empty(.)` the last
            // greatest; an empty array gives null.
            Node::MinMax(max) => {
                let items: Vec<V> = match v {
                    V::J(serde_json::Value::Array(a)) => a.iter().map(V::J).collect(),
                    V::O(Val::Arr(a)) => a.iter().cloned().map(V::O).collect(),
                    _ => return k(Err(jaq_json::Error::typ(v.val(), "array"))),
                };
                let mut best: Option<V> = None;
                for y in items {
                    best = match best {
                        None => Some(y),
                        Some(m) => {
                            let o = ordering(&y, &m);
                            if (*max && o.is_ge()) || (!*max && o.is_lt()) {
                                Some(y)
                            } else {
                                Some(m)
                            }
                        }
                    };
                }
                k(Ok(best.unwrap_or(V::O(Val::Null))))
            }
            // jaq-std: `map_utf8_str`, which fails on anything but a text string.
            Node::Ascii(upper) => {
                let r = match v.text() {
                    Some(s) if *upper => Ok(V::O(Val::utf8_str(s.to_ascii_uppercase()))),
                    Some(s) => Ok(V::O(Val::utf8_str(s.to_ascii_lowercase()))),
                    None => Err(jaq_json::Error::typ(v.val(), "string")),
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
                use serde_json::Value as J;
                let t = match v {
                    V::J(J::Null) | V::O(Val::Null) => "null",
                    V::J(J::Bool(_)) | V::O(Val::Bool(_)) => "boolean",
                    V::J(J::Number(_)) | V::O(Val::Num(_)) => "number",
                    V::J(J::String(_)) | V::O(Val::TStr(_)) => "string",
                    V::J(J::Array(_)) | V::O(Val::Arr(_)) => "array",
                    V::J(J::Object(_)) | V::O(Val::Obj(_)) => "object",
                    V::O(Val::BStr(_)) => return self.bail(),
                };
                k(Ok(V::O(Val::from(t.to_string()))))
            }
        }
    }

    fn math<'a>(&self, a: Val, op: Math, c: Val) -> R<'a> {
        match op {
            Math::Add => checked_add(a, c, self.budget),
            Math::Mul => checked_mul(a, c, self.budget),
            _ => op.run(a, c),
        }
        .map(V::O)
    }

    /// `__tree`: a built array or object measured as a tree.
    fn tree(&self, v: Val) -> Result<Val, jaq_json::Error> {
        self.budget.check_shape(&v).map_err(budget_value_error)?;
        Ok(v)
    }

    /// `__item`: a collected item spends a step and counts as kept.
    fn item(&self, v: V) -> Result<Val, jaq_json::Error> {
        self.budget.tick().map_err(budget_value_error)?;
        self.keep(&v).map_err(budget_value_error)?;
        Ok(v.into_val())
    }

    /// [`Budget::keep`], measuring a part of the input on its JSON (before any conversion).
    pub(crate) fn keep(&self, v: &V) -> Result<(), crate::Exhausted> {
        match v {
            V::J(j) => self.budget.keep_json(j),
            V::O(o) => self.budget.keep(o),
        }
    }

    /// `[f]`: the items, or the first error. `Break` when the run must stop.
    fn collect<'a>(
        &self,
        f: &Node,
        v: &V<'a>,
        env: Option<&Env<'_, 'a>>,
    ) -> ControlFlow<(), Result<Val, jaq_json::Error>> {
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
    fn obj<'a>(
        &self,
        entries: &[(Node, Node)],
        v: &V<'a>,
        env: Option<&Env<'_, 'a>>,
        row: &mut Vec<Result<(Val, Val), jaq_json::Error>>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
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
            return k(self.tree(Val::obj(map)).map(V::O));
        };
        self.run(kn, v, env, &mut |key| {
            self.run(vn, v, env, &mut |val| {
                let pair = match (&key, val) {
                    (Err(e), _) => Err(e.clone()),
                    (_, Err(e)) => Err(e),
                    (Ok(a), Ok(c)) => Ok((a.val(), c.into_val())),
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
    fn path<'a>(
        &self,
        f: &Node,
        parts: &[(PathPart, bool)],
        v: &V<'a>,
        env: Option<&Env<'_, 'a>>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
    ) -> Flow {
        // Most paths are constant keys: no allocation for them.
        let mut indices: Vec<Vec<R<'a>>> = Vec::new();
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

    fn combos<'i, 'a: 'i>(
        &self,
        parts: &[(PathPart, bool)],
        indices: &'i [Vec<R<'a>>],
        chosen: &mut Vec<&'i R<'a>>,
        y: &V<'a>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
    ) -> Flow {
        if let Some((first, rest)) = indices.split_first() {
            // A step per index value chosen, so at least one per combination: six indices of
            // 30 values are 30^6 paths to walk, each cheap, all swallowed by a `select` (found
            // by fuzzing).
            for x in first {
                self.iterated()?;
                chosen.push(x);
                let flow = self.combos(parts, rest, chosen, y, k);
                chosen.pop();
                flow?;
            }
            return GO;
        }
        // jaq refuses an array key of two or more elements when it evaluates that index
        // (`costed::key`), so before the error of an index to its right: leave it to jaq.
        for x in chosen.iter() {
            match x {
                Err(_) => break,
                Ok(v) if is_array_key(v) => return self.bail(),
                Ok(_) => {}
            }
        }
        match first_err(chosen.iter().copied()) {
            Ok(vals) => self.walk(parts, &vals, y, k),
            Err(e) => k(Err(e)),
        }
    }

    /// Run one concrete path on `y`; `vals` are the non-constant indices in order.
    fn walk<'a>(
        &self,
        parts: &[(PathPart, bool)],
        vals: &[&V<'a>],
        y: &V<'a>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
    ) -> Flow {
        use serde_json::Value as J;
        let Some(((part, optional), rest)) = parts.split_first() else {
            return k(Ok(y.clone()));
        };
        let idx: &V = match part {
            PathPart::Key(key, text) => {
                return match y {
                    V::J(J::Null) | V::O(Val::Null) => self.walk(rest, vals, &V::J(&NULL), k),
                    V::J(o @ J::Object(_)) => {
                        self.walk(rest, vals, &V::J(o.field(text).unwrap_or(&NULL)), k)
                    }
                    V::O(Val::Obj(o)) => match o.get(key) {
                        Some(c) => self.walk(rest, vals, &V::O(c.clone()), k),
                        None => self.walk(rest, vals, &V::J(&NULL), k),
                    },
                    _ => match y.val().index(key) {
                        Ok(c) => self.walk(rest, vals, &V::O(c), k),
                        Err(_) if *optional => GO,
                        Err(e) => k(Err(e)),
                    },
                };
            }
            PathPart::Index(Node::Const(c)) => &V::O(c.clone()),
            PathPart::Index(_) => match vals.split_first() {
                Some((x, more)) => return self.walk_index(rest, more, *optional, x, y, k),
                None => return self.bail(),
            },
            PathPart::Iter => {
                return match y {
                    V::J(J::Array(a)) => {
                        for c in a {
                            self.iterated()?;
                            self.walk(rest, vals, &V::J(c), k)?;
                        }
                        GO
                    }
                    V::J(J::Object(o)) => {
                        for c in o.values() {
                            self.iterated()?;
                            self.walk(rest, vals, &V::J(c), k)?;
                        }
                        GO
                    }
                    V::O(Val::Arr(a)) => {
                        for c in a.iter() {
                            self.iterated()?;
                            self.walk(rest, vals, &V::O(c.clone()), k)?;
                        }
                        GO
                    }
                    V::O(Val::Obj(o)) => {
                        for c in o.values() {
                            self.iterated()?;
                            self.walk(rest, vals, &V::O(c.clone()), k)?;
                        }
                        GO
                    }
                    _ if *optional => GO,
                    _ => match y.val().values().find_map(Result::err) {
                        Some(e) => k(Err(e)),
                        None => self.bail(),
                    },
                };
            }
        };
        self.walk_index(rest, vals, *optional, idx, y, k)
    }

    /// `y[idx]` then the rest of the path.
    fn walk_index<'a>(
        &self,
        rest: &[(PathPart, bool)],
        vals: &[&V<'a>],
        optional: bool,
        idx: &V<'a>,
        y: &V<'a>,
        k: &mut dyn FnMut(R<'a>) -> Flow,
    ) -> Flow {
        use serde_json::Value as J;
        match (y, idx) {
            // An array key of two or more elements is refused in jaq (`costed::key`).
            (_, i) if is_array_key(i) => self.bail(),
            (V::J(J::Null) | V::O(Val::Null), _) => self.walk(rest, vals, &V::J(&NULL), k),
            // jaq: an object has no value at a key that is not a string.
            (V::J(o @ J::Object(_)), i) => {
                let child = match i.text().map(std::str::from_utf8) {
                    Some(Ok(key)) => o.field(key).unwrap_or(&NULL),
                    Some(Err(_)) => return self.bail(),
                    None => &NULL,
                };
                self.walk(rest, vals, &V::J(child), k)
            }
            // jaq: a negative index counts from the end; out of range is null.
            (V::J(J::Array(a)), V::O(Val::Num(jaq_json::Num::Int(i)))) => {
                let at = if *i >= 0 {
                    Some(*i as usize)
                } else {
                    a.len().checked_sub(i.unsigned_abs())
                };
                let child = at.and_then(|at| a.get(at)).unwrap_or(&NULL);
                self.walk(rest, vals, &V::J(child), k)
            }
            _ => match y.val().index(&idx.val()) {
                Ok(c) => self.walk(rest, vals, &V::O(c), k),
                Err(_) if optional => GO,
                Err(e) => k(Err(e)),
            },
        }
    }
}

/// `l | r`, with `to_entries[] | .key` (how definitions list the keys of a map of components:
/// Dynamo services, Grove cliques) read as the keys of the input: `to_entries` would convert
/// every value of the map to jaq's form for `.key` to drop it.
fn pipe(l: Box<Node>, r: Box<Node>) -> Node {
    let entries = |n: &Node| {
        matches!(n, Node::Path(f, parts)
            if matches!(**f, Node::ToEntries) && matches!(parts.as_slice(), [(PathPart::Iter, false)]))
    };
    let key = |n: &Node| {
        matches!(n, Node::Path(f, parts)
            if matches!(**f, Node::Id)
                && matches!(parts.as_slice(), [(PathPart::Key(_, k), false)] if k == "key"))
    };
    if entries(&l) {
        if key(&r) {
            return Node::EntryKeys;
        }
        if let Node::Pipe(rl, rr) = *r {
            if key(&rl) {
                return Node::Pipe(b(Node::EntryKeys), rr);
            }
            return Node::Pipe(l, b(Node::Pipe(rl, rr)));
        }
    }
    Node::Pipe(l, r)
}

/// True for the path expressions [`paths_json`] walks: `.`, pipes of them, and paths made of
/// constant keys, non-negative constant indices and `[]` (`.spec.services | .[] | .labels`).
pub(crate) fn is_simple_path(n: &Node) -> bool {
    match n {
        Node::Id => true,
        Node::Pipe(l, r) => is_simple_path(l) && is_simple_path(r),
        Node::Path(f, parts) => {
            is_simple_path(f)
                && parts.iter().all(|(p, _)| match p {
                    PathPart::Key(..) | PathPart::Iter => true,
                    PathPart::Index(Node::Const(Val::Num(jaq_json::Num::Int(i)))) => *i >= 0,
                    PathPart::Index(_) => false,
                })
        }
        _ => false,
    }
}

/// jq's `path(f)` of a [`is_simple_path`] expression on a JSON value, read in place: the same
/// paths in the same order as jaq's path mode, the same errors (jaq's messages).
pub(crate) fn paths_json(
    n: &Node,
    input: &serde_json::Value,
    take: usize,
) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    let mut at = Vec::new();
    let mut push = |_: &serde_json::Value, at: &[serde_json::Value]| {
        out.push(serde_json::Value::Array(at.to_vec()));
        Ok(out.len() < take)
    };
    walk_paths(n, input, &mut at, &mut push)?;
    Ok(out)
}

type PathSink<'k> =
    dyn FnMut(&serde_json::Value, &[serde_json::Value]) -> Result<bool, String> + 'k;

/// Walk `n` from `v` (reached by `at`), calling `k` with every value reached and its path;
/// `Ok(false)` from `k` stops the walk.
fn walk_paths(
    n: &Node,
    v: &serde_json::Value,
    at: &mut Vec<serde_json::Value>,
    k: &mut PathSink,
) -> Result<bool, String> {
    match n {
        Node::Id => k(v, at),
        Node::Pipe(l, r) => walk_paths(l, v, at, &mut |y, p| {
            let mut p = p.to_vec();
            walk_paths(r, y, &mut p, k)
        }),
        Node::Path(f, parts) => walk_paths(f, v, at, &mut |y, p| {
            let mut p = p.to_vec();
            walk_parts(parts, y, &mut p, k)
        }),
        _ => Err("not a simple path".into()),
    }
}

fn walk_parts(
    parts: &[(PathPart, bool)],
    v: &serde_json::Value,
    at: &mut Vec<serde_json::Value>,
    k: &mut PathSink,
) -> Result<bool, String> {
    use serde_json::Value as J;
    let Some(((part, optional), rest)) = parts.split_first() else {
        return k(v, at);
    };
    let mut down = |key: J, child: &J, at: &mut Vec<J>| {
        at.push(key);
        let r = walk_parts(rest, child, at, k);
        at.pop();
        r
    };
    // jaq's own error for a step that cannot apply (converted only then).
    let fail = |idx: Option<Val>| -> Result<bool, String> {
        if *optional {
            return Ok(true);
        }
        let v = crate::to_val(v);
        let err = match idx {
            Some(i) => v.index(&i).err(),
            None => v.values().find_map(Result::err),
        };
        Err(err.map_or_else(|| "cannot walk this path".to_string(), |e| e.to_string()))
    };
    match (part, v) {
        (PathPart::Key(_, text), J::Null | J::Object(_)) => {
            down(J::from(text.as_str()), v.field(text).unwrap_or(&NULL), at)
        }
        (PathPart::Key(key, _), _) => fail(Some(key.clone())),
        (PathPart::Index(Node::Const(Val::Num(jaq_json::Num::Int(i)))), J::Null | J::Object(_)) => {
            down(J::from(*i), &NULL, at)
        }
        (PathPart::Index(Node::Const(Val::Num(jaq_json::Num::Int(i)))), J::Array(a)) => {
            let child = usize::try_from(*i)
                .ok()
                .and_then(|i| a.get(i))
                .unwrap_or(&NULL);
            down(J::from(*i), child, at)
        }
        (PathPart::Index(Node::Const(c)), _) => fail(Some(c.clone())),
        (PathPart::Index(_), _) => Err("not a simple path".into()),
        (PathPart::Iter, J::Array(a)) => {
            for (i, c) in a.iter().enumerate() {
                if !down(J::from(i), c, at)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        (PathPart::Iter, J::Object(o)) => {
            for (key, c) in o {
                if !down(J::from(key.as_str()), c, at)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        (PathPart::Iter, _) => fail(None),
    }
}
