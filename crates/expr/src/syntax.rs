//! Checks on an expression's text before anything recursive reads it: how deep its syntax
//! nests, which names it uses (the sandbox), and whether its own `def`s recurse.

use crate::CompileError;
use crate::sandbox::{FORBIDDEN_VARS, FORBIDDEN_WORDS};
use jaq_core::load::lex::{StrPart, Tok, Token};
use jaq_core::load::parse::Term;

/// How deep an expression's syntax may nest, counted by [`check_depth`]. Lexing, parsing,
/// compiling and evaluating recurse once per level or more: in a release build, `2*2*…*2` with
/// 1,000 factors overflowed a 2 MiB thread stack (a Tokio worker's), which aborts the process.
/// 128 leaves a margin of more than 4× there, and fits an AddressSanitizer build's bigger
/// frames on the 8 MiB main stack; the catalog's deepest expression (TrainJob's) is at 53.
pub const MAX_SYNTAX_DEPTH: usize = 128;

/// Refuse an expression whose syntax nests deeper than [`MAX_SYNTAX_DEPTH`], before anything
/// recursive reads it. The depth at a place is an upper bound of the syntax tree's: the
/// brackets open there (`(`, `[`, `{`, string interpolations) plus every operator character
/// and keyword met so far at each of those levels (a chain `a * b * c` is a tree as deep as it
/// has operators). A string counts one per part after its first (a run of text, an escaped
/// character, an interpolation): jaq compiles it into a chain of `+`, a link per part, which it
/// evaluates recursively. Comments do not count.
///
/// ```
/// let deep = vec!["2"; 200].join(" * ");
/// let e = wlmap_expr::Expr::compile(&deep).unwrap_err();
/// assert!(e.message.contains("nests too deeply"), "{e}");
/// assert!(wlmap_expr::Expr::compile(&vec!["2"; 100].join(" * ")).is_ok());
/// ```
pub(crate) fn check_depth(text: &str) -> Result<(), CompileError> {
    const KEYWORDS: &[&str] = &[
        "and", "or", "if", "then", "elif", "else", "reduce", "foreach", "def", "try", "catch",
        "label", "as",
    ];
    // Per open level: whether it is a string interpolation `\(`, and its operators so far.
    let mut levels: Vec<(bool, usize)> = vec![(false, 0)];
    let mut total = 0usize; // open levels beyond the first, plus every level's operators
    // Per open string (strings nest through interpolations): its parts so far, and whether
    // a run of text is under way.
    let mut strings: Vec<(usize, bool)> = Vec::new();
    let b = text.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        let c = b[i];
        let before = total;
        let mut operator = false;
        if in_string {
            match c {
                b'\\' if b.get(i + 1) == Some(&b'(') => {
                    new_part(&mut strings, &mut levels, &mut total, false);
                    levels.push((true, 0));
                    total += 1;
                    in_string = false;
                    i += 1;
                }
                b'\\' => {
                    new_part(&mut strings, &mut levels, &mut total, false);
                    i += 1;
                }
                b'"' => {
                    strings.pop();
                    in_string = false;
                }
                _ if strings.last().is_some_and(|s| !s.1) => {
                    new_part(&mut strings, &mut levels, &mut total, true);
                }
                _ => {}
            }
        } else {
            match c {
                b'"' => {
                    strings.push((0, false));
                    in_string = true;
                }
                b'#' => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'(' | b'[' | b'{' => {
                    levels.push((false, 0));
                    total += 1;
                }
                b')' | b']' | b'}' if levels.len() > 1 => {
                    let (interpolation, ops) = levels.pop().unwrap_or_default();
                    total -= 1 + ops;
                    in_string = interpolation && c == b')';
                }
                b'|' | b',' | b'/' | b'=' | b'<' | b'>' | b'!' | b'+' | b'-' | b'*' | b'%'
                | b'?' => operator = true,
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = i;
                    while i + 1 < b.len() && (b[i + 1].is_ascii_alphanumeric() || b[i + 1] == b'_')
                    {
                        i += 1;
                    }
                    // `.if` is a field, `$as` a variable: only a bare word is a keyword.
                    let bare = start == 0 || !matches!(b[start - 1], b'.' | b'$');
                    operator = bare && KEYWORDS.contains(&&text[start..=i]);
                }
                _ => {}
            }
        }
        if operator {
            // `levels` always holds the outermost level: closing brackets never pop it.
            if let Some(l) = levels.last_mut() {
                l.1 += 1;
            }
            total += 1;
        }
        if total > before && total > MAX_SYNTAX_DEPTH {
            return Err(CompileError {
                source_text: text.to_string(),
                span: i..(i + 1).min(text.len()),
                message: format!(
                    "the expression nests too deeply: more than {MAX_SYNTAX_DEPTH} levels of brackets and operators here (evaluating it could overflow the stack)"
                ),
            });
        }
        i += 1;
    }
    Ok(())
}

/// A new part of the innermost open string (a run of text when `run`, else an escaped
/// character or an interpolation). jaq compiles a string into a chain of `+`, a link per part,
/// and evaluates it recursively: every part after the first counts as an operator.
fn new_part(
    strings: &mut [(usize, bool)],
    levels: &mut [(bool, usize)],
    total: &mut usize,
    run: bool,
) {
    let Some(s) = strings.last_mut() else { return };
    s.0 += 1;
    s.1 = run;
    if s.0 > 1 {
        if let Some(l) = levels.last_mut() {
            l.1 += 1;
        }
        *total += 1;
    }
}

/// Refuse forbidden builtins and variables (with the span of the first offending token) and
/// recursive definitions; the parsed term when the text parses.
pub(crate) fn check_sandbox(text: &str) -> Result<Option<Term<&str>>, CompileError> {
    let Ok(tokens) = jaq_core::load::lex::Lexer::new(text).lex() else {
        return Ok(None); // the compiler reports lex errors with their own spans
    };
    fn walk<'a>(text: &'a str, toks: &[Token<&'a str>]) -> Result<(), CompileError> {
        for Token(s, tok) in toks {
            let found = match tok {
                Tok::Word => FORBIDDEN_WORDS.iter().find(|(w, _)| w == s),
                Tok::Var => FORBIDDEN_VARS.iter().find(|(w, _)| w == s),
                Tok::Block(inner) => {
                    walk(text, inner)?;
                    None
                }
                Tok::Str(parts) => {
                    for p in parts {
                        if let StrPart::Term(t) = p {
                            walk(text, std::slice::from_ref(t))?;
                        }
                    }
                    None
                }
                _ => None,
            };
            if let Some((w, why)) = found {
                let span = jaq_core::load::span(text, s);
                return Err(CompileError {
                    source_text: text.to_string(),
                    span,
                    message: format!("`{w}` is not available in definition expressions: it {why}"),
                });
            }
        }
        Ok(())
    }
    walk(text, &tokens)?;
    let Ok(term) = jaq_core::load::parse::Parser::new(&tokens).parse(|p| p.term()) else {
        return Ok(None); // syntax errors are reported by the compiler with their spans
    };
    check_recursion(text, &term)?;
    Ok(Some(term))
}

/// Refuse recursive `def`s: with lexical scoping, a definition can only recurse by calling its
/// own name from its body (or from a definition nested in it).
pub(crate) fn check_recursion(text: &str, term: &Term<&str>) -> Result<(), CompileError> {
    use crate::walk::{any_term, subterms};
    fn calls(t: &Term<&str>, name: &str) -> bool {
        any_term(t, &|t| matches!(t, Term::Call(n, _) if *n == name))
    }
    /// The first definition, anywhere in `t`, whose body calls its own name.
    fn find<'a>(t: &Term<&'a str>) -> Option<&'a str> {
        if let Term::Def(defs, _) = t
            && let Some(d) = defs.iter().find(|d| calls(&d.body, d.name))
        {
            return Some(d.name);
        }
        let mut found = None;
        subterms(t, &mut |s| {
            if found.is_none() {
                found = find(s);
            }
        });
        found
    }
    // A definition needs its keyword in the text: most expressions have none, and skip the walk.
    if !text.contains("def") {
        return Ok(());
    }
    match find(term) {
        Some(name) => Err(CompileError {
            source_text: text.to_string(),
            span: jaq_core::load::span(text, name),
            message: format!(
                "`{name}` calls itself: recursive definitions are not available in definition expressions (they can run without bound)"
            ),
        }),
        None => Ok(()),
    }
}
