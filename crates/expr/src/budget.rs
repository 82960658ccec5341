//! The budget of one evaluation: steps, a deadline, and the size and depth of what it builds
//! and keeps. Every looping builtin, every collected item and every output spends from it; a
//! spent budget is final for the evaluation (no `try` catches it).

use crate::Exhausted;
use jaq_json::Rc;
use jaq_json::Val;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

/// A `Weak` to a measured array or object: it only pins the allocation's address.
type Pin = Box<dyn std::any::Any>;

/// Budget of one evaluation.
pub(crate) struct Budget {
    steps_left: Cell<u64>,
    deadline: Option<Instant>,
    max_len: usize,
    /// What `+`, `*` and conversions to strings may still build (bytes or entries).
    build_left: Cell<usize>,
    /// Size and depth of the arrays and objects measured so far, by address. A `Weak` keeps
    /// the address from being reused while the entry exists (without keeping the contents),
    /// so a hit is always the same value. Shared parts are measured once: a value that shares
    /// structure is measured in time linear in its memory, not in its size as a tree.
    // foldhash: a value is looked up here for every part measured; SipHash was a tenth of an
    // update's time.
    shapes: RefCell<HashMap<usize, (Shape, Pin), foldhash::fast::RandomState>>,
    exhausted: Cell<Option<Exhausted>>,
}

/// Size of a value read as a tree (values, keys and string bytes) and its depth.
#[derive(Clone, Copy)]
struct Shape {
    len: usize,
    depth: usize,
}

/// Deepest nesting a value built by an expression may have. Kubernetes objects nest a few dozen
/// levels; without a bound, `reduce range(1e5) as $i (1; [.])` overflows the stack when the
/// value is dropped, and that aborts the process.
pub(crate) const MAX_DEPTH: usize = 512;

/// How much more than the size cap one evaluation may build in total: `add` and `join` build
/// their result one `+` at a time, so the sum of what they build grows with the square of the
/// number of parts; 64 caps' worth (256 MiB by default) leaves room for that and none for a
/// blow-up.
pub(crate) const BUILD_FACTOR: usize = 64;

impl Budget {
    pub(crate) fn new(steps: u64, deadline: Option<Instant>, max_len: usize) -> Self {
        Budget {
            steps_left: Cell::new(steps),
            deadline,
            max_len,
            build_left: Cell::new(max_len.saturating_mul(BUILD_FACTOR)),
            shapes: RefCell::new(HashMap::default()),
            exhausted: Cell::new(None),
        }
    }

    /// Check a built value read as a tree: `[`Exhausted::Size`] past `max_len` values, keys and
    /// string bytes, [`Exhausted::Depth`] past [`MAX_DEPTH`] levels.
    pub(crate) fn check_shape(&self, v: &Val) -> Result<(), Exhausted> {
        self.measure(v).map(|_| ())
    }

    /// [`Budget::check_shape`], and count the value's size as built: for a value that is
    /// kept (a collected item, an output), which a builtin may have made from a whole input
    /// (`[range(50000) | .big | ascii_upcase]` would otherwise hold 50,000 copies).
    pub(crate) fn keep(&self, v: &Val) -> Result<(), Exhausted> {
        let len = self.measure(v)?;
        self.build(len)
    }

    /// [`Budget::keep`] of a part of the input JSON, measured the same way (a JSON value
    /// shares nothing, so no memo is needed) before it is converted.
    pub(crate) fn keep_json(&self, v: &serde_json::Value) -> Result<(), Exhausted> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let s = json_shape(v, 0, self.max_len);
        let why = if s.depth > MAX_DEPTH {
            Exhausted::Depth(MAX_DEPTH)
        } else if s.len > self.max_len {
            Exhausted::Size(self.max_len)
        } else {
            return self.build(s.len);
        };
        Err(self.refuse(why))
    }

    fn measure(&self, v: &Val) -> Result<usize, Exhausted> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let s = self.shape(v, 0);
        let why = if s.depth > MAX_DEPTH {
            Exhausted::Depth(MAX_DEPTH)
        } else if s.len > self.max_len {
            Exhausted::Size(self.max_len)
        } else {
            return Ok(s.len);
        };
        Err(self.refuse(why))
    }

    fn shape(&self, v: &Val, level: usize) -> Shape {
        let (key, weak, children) = match v {
            Val::Arr(a) => (
                Rc::as_ptr(a) as usize,
                Box::new(Rc::downgrade(a)) as Pin,
                a.len(),
            ),
            Val::Obj(o) => (
                Rc::as_ptr(o) as *const () as usize,
                Box::new(Rc::downgrade(o)) as Pin,
                2 * o.len(),
            ),
            Val::TStr(b) | Val::BStr(b) => {
                return Shape {
                    len: 1 + b.len(),
                    depth: 0,
                };
            }
            _ => return Shape { len: 1, depth: 0 },
        };
        if let Some((s, _)) = self.shapes.borrow().get(&key) {
            return *s;
        }
        let mut s = Shape {
            len: 1 + children,
            depth: 1,
        };
        if level > MAX_DEPTH {
            s.depth = level; // stop here: deeper than allowed
        } else {
            let mut add = |c: &Val| {
                let c = self.shape(c, level + 1);
                s.len = s.len.saturating_add(c.len);
                s.depth = s.depth.max(c.depth + 1);
                s.len <= self.max_len && s.depth <= MAX_DEPTH
            };
            match v {
                Val::Arr(a) => {
                    let _ = a.iter().all(&mut add);
                }
                Val::Obj(o) => {
                    let _ = o.iter().all(|(k, v)| add(k) && add(v));
                }
                _ => {}
            }
        }
        self.shapes.borrow_mut().insert(key, (s, weak));
        s
    }

    /// Account for a value about to be built with `len` bytes or entries: `Err` when it is
    /// longer than the size cap, or when the evaluation has built too much in total.
    pub(crate) fn build(&self, len: usize) -> Result<(), Exhausted> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let why = if len > self.max_len {
            Exhausted::Size(self.max_len)
        } else if len > self.build_left.get() {
            Exhausted::TotalSize(self.max_len.saturating_mul(BUILD_FACTOR))
        } else {
            self.build_left.set(self.build_left.get() - len);
            return Ok(());
        };
        Err(self.refuse(why))
    }

    /// Spend one step on a value a loop carries: `Err` also when that value is longer than
    /// the size cap (string doubling inside `reduce`, `until`, `repeat`...).
    pub(crate) fn tick_with(&self, v: &Val) -> Result<(), Exhausted> {
        self.tick()?;
        self.check_shape(v)
    }

    /// Spend one step; `Err` once the step budget or the deadline is exhausted.
    pub(crate) fn tick(&self) -> Result<(), Exhausted> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let left = self.steps_left.get();
        if left == 0 {
            return Err(self.refuse(Exhausted::Steps));
        }
        self.steps_left.set(left - 1);
        if left.is_multiple_of(1024) && self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(self.refuse(Exhausted::Time));
        }
        Ok(())
    }

    /// Spend `n` steps at once, for the work a builtin is about to do in one call: `Err` when
    /// fewer are left (then none are spent) or the deadline has passed.
    pub(crate) fn spend(&self, n: u64) -> Result<(), Exhausted> {
        if let Some(why) = self.exhausted.get() {
            return Err(why);
        }
        let left = self.steps_left.get();
        if n > left {
            return Err(self.refuse(Exhausted::Steps));
        }
        self.steps_left.set(left - n);
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(self.refuse(Exhausted::Time));
        }
        Ok(())
    }

    /// Refuse an operation for good (`why` names the cap), as a spent budget is: later steps
    /// fail too, and no `try` can swallow it.
    pub(crate) fn refuse(&self, why: Exhausted) -> Exhausted {
        let why = self.exhausted.get().unwrap_or(why);
        self.exhausted.set(Some(why));
        why
    }

    /// The size cap: the longest string, array or object one operation may build or keep.
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    /// Which budget ran out, if any.
    pub(crate) fn exhausted(&self) -> Option<Exhausted> {
        self.exhausted.get()
    }
}

/// A spent budget as the jq error value the builtins return (its message is the one
/// [`crate::EvalError::Budget`] shows).
pub(crate) fn budget_value_error(why: Exhausted) -> jaq_core::Error<Val> {
    jaq_core::Error::new(Val::from(format!("evaluation exceeded its {why}")))
}

/// [`Budget`]'s shape of a JSON value: what its jaq value would measure (values, keys and
/// string bytes; depth), stopping early past the caps like the memoized walk does.
fn json_shape(v: &serde_json::Value, level: usize, max_len: usize) -> Shape {
    use serde_json::Value as J;
    let children = match v {
        J::String(s) => {
            return Shape {
                len: 1 + s.len(),
                depth: 0,
            };
        }
        J::Array(a) => a.len(),
        J::Object(o) => 2 * o.len(),
        _ => return Shape { len: 1, depth: 0 },
    };
    let mut s = Shape {
        len: 1 + children,
        depth: 1,
    };
    if level > MAX_DEPTH {
        s.depth = level;
        return s;
    }
    let mut add = |c: Shape| {
        s.len = s.len.saturating_add(c.len);
        s.depth = s.depth.max(c.depth + 1);
        s.len <= max_len && s.depth <= MAX_DEPTH
    };
    match v {
        J::Array(a) => {
            let _ = a.iter().all(|c| add(json_shape(c, level + 1, max_len)));
        }
        J::Object(o) => {
            let _ = o.iter().all(|(k, c)| {
                add(Shape {
                    len: 1 + k.len(),
                    depth: 0,
                }) && add(json_shape(c, level + 1, max_len))
            });
        }
        _ => {}
    }
    s
}

/// Bytes of a string, entries of an array or object, 0 for anything else.
pub(crate) fn shallow_len(v: &Val) -> usize {
    match v {
        Val::TStr(b) | Val::BStr(b) => b.len(),
        Val::Arr(a) => a.len(),
        Val::Obj(o) => o.len(),
        _ => 0,
    }
}
