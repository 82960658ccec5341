//! Compiling: the sandbox and syntax checks and the fast forms of one expression
//! ([`analyse`]), and the jaq program of a batch of expressions, compiled with only the
//! standard definitions it reaches and wlmap's sandboxed natives.

use crate::rewrite::{self, Names, Rewrite};
use crate::sandbox::{
    self, CHECKED_OPS, GETPATH, PRELUDE, REMOVED_NATIVES, REPLACED_NATIVES, RESERVED_PREFIX,
    Sandbox, WRAPPED_NATIVES,
};
use crate::syntax::{check_depth, check_sandbox};
use crate::{CompileError, EvalError, Expr, native, plain};
use jaq_core::Compiler;
use jaq_core::load::lex::Token;
use jaq_core::load::parse::{Def, Term};
use jaq_core::load::{Arena, File, Loader};
use std::sync::{Arc, OnceLock};

type Filter = jaq_core::Filter<Sandbox>;

/// The jaq program shared by the expressions of one batch. When every expression has a plain
/// or native form, it is compiled on first use instead of by [`Batch::finish`]: most
/// definitions never need it, and compiling it is most of the cost of loading a definition.
/// Such expressions parsed, passed the sandbox checks and bind only known names, so the
/// deferred compilation succeeds (if it ever did not, evaluation would say so).
pub(crate) struct Program {
    texts: Vec<String>,
    /// A batch's program dispatches on `$__which` (built when compiled: it is not small).
    batch: bool,
    /// Global variables of the program (`$__which` first for a batch).
    vars: Vec<String>,
    filter: OnceLock<Result<Filter, CompileError>>,
}

impl Program {
    /// A program compiled on first use (see [`Program::compile`]).
    pub(crate) fn new(texts: Vec<String>, batch: bool, vars: Vec<String>) -> Program {
        Program {
            texts,
            batch,
            vars,
            filter: OnceLock::new(),
        }
    }

    /// Compile now if not yet done (once; later calls return the same result).
    pub(crate) fn compile(&self) -> Result<&Filter, &CompileError> {
        self.filter
            .get_or_init(|| {
                let texts: Vec<&str> = self.texts.iter().map(String::as_str).collect();
                let vars: Vec<&str> = self.vars.iter().map(String::as_str).collect();
                let main = if self.batch {
                    dispatch(0, texts.len())
                } else {
                    "__w0".to_string()
                };
                compile_program(&texts, &main, &vars, VALUES)
            })
            .as_ref()
    }

    /// Whether the program has been compiled (eagerly or by a first use).
    #[cfg(test)]
    pub(crate) fn is_compiled(&self) -> bool {
        self.filter.get().is_some()
    }

    pub(crate) fn filter(&self) -> Result<&Filter, EvalError> {
        self.compile().map_err(|e| EvalError::Runtime {
            message: format!("the expression does not compile: {}", e.message),
        })
    }
}

/// Compile many expressions as **one** jaq program, so the standard library is compiled once
/// per batch (a definition) instead of once per expression. Each expression becomes a
/// definition `__wN` and the program dispatches on a hidden `$__which` variable with a binary
/// tree of `if`s (a few comparisons per evaluation).
///
/// ```
/// use wlmap_expr::{Batch, Input, Limits, to_val};
/// let mut b = Batch::new(&["parentInstance"]);
/// let a = b.add(".spec.replicas // 1").unwrap();
/// let k = b.add(".kind").unwrap();
/// b.finish().unwrap();
/// let obj = to_val(&serde_json::json!({"kind": "Job", "spec": {}}));
/// let null = [to_val(&serde_json::Value::Null)];
/// let first = |e: &wlmap_expr::Expr| e.evaluate(Input::Val(&obj), &null, &Limits::default()).unwrap()[0].to_json().into_owned();
/// assert_eq!(first(&a), serde_json::json!(1));
/// assert_eq!(first(&k), serde_json::json!("Job"));
/// ```
pub struct Batch {
    texts: Vec<String>,
    vars: Vec<String>,
    cell: Arc<OnceLock<Program>>,
    /// Every expression added so far has a plain or native form.
    all_fast: bool,
}

impl Batch {
    /// A new batch whose expressions may read these global variables (names without `$`).
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&["runtime"]);
    /// let e = b.add("$runtime.x").unwrap();
    /// assert!(b.finish().is_ok());
    /// assert_eq!(e.text(), "$runtime.x");
    /// ```
    pub fn new(vars: &[&str]) -> Batch {
        Batch {
            texts: Vec::new(),
            vars: vars.iter().map(|v| v.to_string()).collect(),
            cell: Arc::new(OnceLock::new()),
            all_fast: true,
        }
    }

    /// Add an expression. The sandbox is checked now; compile errors come from [`Batch::finish`].
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&[]);
    /// assert!(b.add("$ENV.HOME").is_err()); // refused by the sandbox at once
    /// assert!(b.add(".a |").is_ok()); // syntax errors come from `finish`
    /// assert!(b.finish().is_err());
    /// ```
    pub fn add(&mut self, text: &str) -> Result<Expr, CompileError> {
        let (plain, native) = analyse(text, &self.vars)?;
        self.all_fast &= plain.is_some() || native.is_some();
        let index = self.texts.len();
        self.texts.push(text.to_string());
        Ok(Expr {
            text: text.to_string(),
            program: self.cell.clone(),
            index: Some(index),
            vars: self.vars.clone(),
            paths: OnceLock::new(),
            plain,
            native,
        })
    }

    /// Compile the batch. On failure, every expression that does not compile on its own is
    /// returned with its error (by the order of [`Batch::add`]).
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&[]);
    /// b.add(".a").unwrap();
    /// b.add(".b |").unwrap();
    /// let errs = b.finish().unwrap_err();
    /// assert_eq!(errs.len(), 1);
    /// assert_eq!(errs[0].0, 1); // the second expression
    /// ```
    pub fn finish(self) -> Result<(), Vec<(usize, CompileError)>> {
        if self.texts.is_empty() {
            return Ok(());
        }
        let mut vars: Vec<String> = vec!["__which".into()];
        vars.extend(self.vars.iter().cloned());
        let program = Program::new(self.texts.clone(), true, vars);
        // Compiled now only when an expression needs jaq, so its errors are reported here.
        if self.all_fast || program.compile().is_ok() {
            let _ = self.cell.set(program);
            return Ok(());
        }
        let user_vars: Vec<&str> = self.vars.iter().map(String::as_str).collect();
        let errs: Vec<(usize, CompileError)> = self
            .texts
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                compile_program(&[t], "__w0", &user_vars, VALUES)
                    .err()
                    .map(|e| (i, e))
            })
            .collect();
        if errs.is_empty() {
            // Each compiles alone but not together (should not happen): say so.
            return Err(vec![(
                0,
                CompileError {
                    source_text: self.texts[0].clone(),
                    span: 0..0,
                    message: "the expressions of this definition do not compile together".into(),
                },
            )]);
        }
        Err(errs)
    }
}

/// `if $__which < mid then ... else ... end`, down to the `__wN` calls.
fn dispatch(lo: usize, hi: usize) -> String {
    if hi - lo == 1 {
        return format!("__w{lo}");
    }
    let mid = (lo + hi) / 2;
    format!(
        "(if $__which < {mid} then {} else {} end)",
        dispatch(lo, mid),
        dispatch(mid, hi)
    )
}

pub(crate) fn not_compiled() -> EvalError {
    EvalError::Runtime {
        message: "expression batch was not compiled".into(),
    }
}

/// Check an expression against the sandbox and find its fast forms: a plain path (`plain.rs`)
/// or the native subset (`native.rs`). The text is lexed and parsed once here; jaq compiles
/// it later, and only when it has neither form or its batch's program is first needed.
pub(crate) fn analyse(
    text: &str,
    vars: &[String],
) -> Result<(Option<Vec<plain::Step>>, Option<native::Node>), CompileError> {
    check_depth(text)?;
    if let Some(steps) = plain::parse(text) {
        // Fields and indices only: nothing the sandbox or the compiler could refuse.
        return Ok((Some(steps), None));
    }
    let Some(term) = check_sandbox(text)? else {
        return Ok((None, None)); // a syntax error: compiling reports it with its span
    };
    // A reserved name needs the prefix in the text: most expressions skip the walk.
    let reserved = text.contains(RESERVED_PREFIX) && {
        let mut names = Names::default();
        names.term(&term);
        names
            .calls
            .iter()
            .chain(&names.vars)
            .any(|n| n.trim_start_matches('$').starts_with(RESERVED_PREFIX))
    };
    // A reserved name is refused by compiling, with its span.
    let native = if reserved {
        None
    } else {
        native::convert(&term, vars)
    };
    Ok((None, native))
}

/// Rewrite for evaluation: fold updates get a size-checked step.
pub(crate) const VALUES: Rewrite = Rewrite { tick_folds: true };
/// Rewrite for `path(...)`: folds stay path expressions.
pub(crate) const PATHS: Rewrite = Rewrite { tick_folds: false };

/// The standard definitions (jaq's and wlmap's prelude), parsed and rewritten once per
/// process, each with the names it calls.
fn prelude() -> &'static [(Def<&'static str>, Vec<&'static str>)] {
    static DEFS: OnceLock<Vec<(Def<&'static str>, Vec<&'static str>)>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let ours = |text| jaq_core::load::parse(text, |p| p.defs()).unwrap_or_default();
        let getpath = ours(GETPATH);
        ours(CHECKED_OPS)
            .into_iter()
            .chain(jaq_core::defs().map(|d| match d.name {
                "getpath" => getpath[0].clone(),
                _ => d,
            }))
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .chain(ours(PRELUDE))
            .map(|d| {
                let d = PATHS.def(d);
                let mut names = Names::default();
                names.term(&d.body);
                let deps = names.calls.into_iter().collect();
                (d, deps)
            })
            .collect()
    })
}

/// Parse one expression, with jaq's messages and spans on failure.
pub(crate) fn parse_term(text: &str) -> Result<Term<&str>, CompileError> {
    let at = |part: &str, message: String| CompileError {
        source_text: text.to_string(),
        span: jaq_core::load::span(text, part),
        message,
    };
    let tokens = jaq_core::load::lex::Lexer::new(text).lex().map_err(|es| {
        let (exp, part) = &es[0];
        at(part, format!("expected {}", exp.as_str()))
    })?;
    jaq_core::load::parse::Parser::new(&tokens)
        .parse(|p| p.term())
        .map_err(|es| {
            let (exp, found) = &es[0];
            at(
                Token::opt_as_str(*found, text),
                format!("expected {}", exp.as_str()),
            )
        })
}

/// Compile expressions into one program: each text becomes a definition `__wN`, rewritten
/// for the sandbox (`rewrite.rs`), after only the standard definitions it can reach; `main`
/// (generated, never user text) calls them.
pub(crate) fn compile_program(
    texts: &[&str],
    main: &str,
    vars: &[&str],
    rw: Rewrite,
) -> Result<Filter, CompileError> {
    let names: Vec<String> = (0..texts.len()).map(|i| format!("__w{i}")).collect();
    let (user, mut used) = user_defs(texts, &names, rw)?;
    if let Some(main_term) = jaq_core::load::parse(main, |p| p.term()) {
        used.term(&main_term);
    }
    let std: Vec<Def<&str>> = rewrite::reachable(prelude(), &used.calls)
        .into_iter()
        .cloned()
        .collect();
    let loader = Loader::new(std.into_iter().chain(user));
    let arena = Arena::default();
    let file = File {
        code: main,
        path: (),
    };
    let modules = loader
        .load(&arena, file)
        .map_err(|errs| load_error(texts, errs))?;
    let globals: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
    Compiler::default()
        .with_funs(sandboxed_natives())
        .with_global_vars(globals.iter().map(String::as_str))
        .compile(modules)
        .map_err(|errs| {
            let (_, es) = errs
                .into_iter()
                .next()
                .expect("compile errors are never empty");
            let (part, undef) = &es[0];
            located(
                texts,
                part,
                format!("undefined {} `{}`", undef.as_str(), part),
            )
        })
}

/// Each user text parsed, checked for reserved names and rewritten for the sandbox, as the
/// definition of its name; with every name the rewritten bodies use.
fn user_defs<'a>(
    texts: &[&'a str],
    names: &'a [String],
    rw: Rewrite,
) -> Result<(Vec<Def<&'a str>>, Names<'a>), CompileError> {
    let mut used = Names::default();
    let mut user = Vec::with_capacity(texts.len());
    for (text, name) in texts.iter().zip(names) {
        let term = parse_term(text)?;
        let mut own = Names::default();
        own.term(&term);
        if let Some(reserved) = own
            .calls
            .iter()
            .chain(&own.vars)
            .find(|n| n.trim_start_matches('$').starts_with(RESERVED_PREFIX))
        {
            return Err(CompileError {
                source_text: text.to_string(),
                span: jaq_core::load::span(text, reserved),
                message: format!(
                    "`{reserved}`: names that start with `{RESERVED_PREFIX}` are reserved for wlmap"
                ),
            });
        }
        let body = rw.term(term);
        used.term(&body);
        user.push(Def {
            name: name.as_str(),
            args: Vec::new(),
            body,
        });
    }
    Ok((user, used))
}

/// jaq's natives as the sandbox allows them: the removed ones left out, the replaced ones
/// left to wlmap's, the wrapped ones renamed so that wlmap's definitions can call them; then
/// wlmap's own.
fn sandboxed_natives() -> impl Iterator<Item = jaq_core::native::Fun<Sandbox>> {
    jaq_core::funs::<Sandbox>()
        .chain(jaq_std::funs::<Sandbox>())
        .chain(jaq_json::funs::<Sandbox>())
        .filter(|(name, _, _)| !REMOVED_NATIVES.contains(name) && !REPLACED_NATIVES.contains(name))
        .map(|(name, args, run)| {
            let wrapped = WRAPPED_NATIVES.iter().find(|(jaq, _)| *jaq == name);
            (wrapped.map_or(name, |(_, ours)| ours), args, run)
        })
        .chain(sandbox::natives())
}

/// The first error of loading the program, located in the user text that contains it.
fn load_error(texts: &[&str], errs: jaq_core::load::Errors<&str, ()>) -> CompileError {
    let (_, e) = errs
        .into_iter()
        .next()
        .expect("load errors are never empty");
    match e {
        jaq_core::load::Error::Lex(es) => {
            let (exp, part) = &es[0];
            located(texts, part, format!("expected {}", exp.as_str()))
        }
        jaq_core::load::Error::Parse(es) => {
            let (exp, part) = &es[0];
            located(texts, part, format!("expected {}", exp.as_str()))
        }
        jaq_core::load::Error::Io(es) => located(
            texts,
            "",
            es.first().map(|e| e.1.clone()).unwrap_or_default(),
        ),
    }
}

/// An error at `part`, pointing into the user text that contains it (`part` is a slice of one
/// of `texts`); an error in wlmap's own code says so.
fn located(texts: &[&str], part: &str, message: String) -> CompileError {
    let inside = |t: &&&str| {
        let (p, s) = (part.as_ptr() as usize, t.as_ptr() as usize);
        p >= s && p + part.len() <= s + t.len()
    };
    match texts.iter().find(inside) {
        Some(text) => CompileError {
            source_text: text.to_string(),
            span: jaq_core::load::span(text, part),
            message,
        },
        None => CompileError {
            source_text: texts.first().map(|t| t.to_string()).unwrap_or_default(),
            span: 0..0,
            message: format!("{message} (in wlmap's own code `{part}`)"),
        },
    }
}
