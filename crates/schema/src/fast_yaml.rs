//! A fast reader for the plain subset of YAML that definitions are written in: block mappings
//! and sequences (indentless ones too), plain and quoted one-line scalars, `|`/`>` block
//! scalars without blank lines inside, one-line flow collections, comments and `---`.
//!
//! Loading a definition was mostly YAML parsing: serde-saphyr tracks locations, budgets and
//! anchors for every event, about 500 instructions per byte. This reader does no more than the
//! subset needs. It answers only when it is sure to answer what serde-saphyr would: anything
//! outside the subset (anchors, tags, multi-line plain scalars, a number that is not a plain
//! decimal integer, `yes`/`True`/`~`-style scalars, a duplicate key, control characters, ...)
//! returns `None` and the caller decodes with serde-saphyr, which also gives every error
//! message and location. The differential tests in `decode.rs` and the `definition` fuzz
//! target hold it to that.

use serde_json::{Map, Value};

/// Larger inputs go to serde-saphyr (and its budget).
const MAX_BYTES: usize = 1 << 20;
/// Nesting of collections; serde-saphyr refuses more than 64.
const MAX_DEPTH: usize = 32;
/// Longest key; serde-saphyr looks ahead a bounded distance for a key's `:`.
const MAX_KEY: usize = 256;

/// The documents of `text` as JSON values, or `None` when `text` is not in the subset.
pub(crate) fn parse(text: &str) -> Option<Vec<Value>> {
    let ascii = text
        .bytes()
        .all(|b| b == b'\n' || (b' '..=b'~').contains(&b));
    if text.len() > MAX_BYTES || !(ascii || text.chars().all(allowed)) {
        return None;
    }
    let mut docs = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut marker = false; // a `---` opened the current document
    for raw in text.split('\n') {
        if raw == "---" {
            if lines.iter().any(|l| !l.is_blank()) {
                docs.push(document(std::mem::take(&mut lines))?);
            } else if marker {
                return None; // an empty document
            } else {
                lines.clear(); // comments before the first marker
            }
            marker = true;
            continue;
        }
        if raw.starts_with("---") || raw.starts_with("...") || raw.starts_with('%') {
            return None; // content after a marker, a document end, a directive
        }
        let content = raw.trim_start_matches(' ');
        lines.push(Line {
            indent: raw.len() - content.len(),
            content,
        });
    }
    if lines.iter().any(|l| !l.is_blank()) {
        docs.push(document(lines)?);
    } else if marker || docs.is_empty() {
        return None; // an empty document, or no document at all
    }
    Some(docs)
}

/// Printable YAML characters, without tabs, carriage returns and Unicode line separators
/// (where YAML versions disagree).
fn allowed(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
}

#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    content: &'a str,
}

impl Line<'_> {
    /// Empty, or a comment only.
    fn is_blank(&self) -> bool {
        self.content.is_empty() || self.content.starts_with('#')
    }
}

fn document(lines: Vec<Line>) -> Option<Value> {
    let mut p = Parser {
        lines,
        pos: 0,
        depth: 0,
    };
    let first = p.peek()?;
    let indent = p.lines[first].indent;
    let v = p.node(indent)?;
    if p.peek().is_some() {
        return None; // something the grammar below did not consume
    }
    Some(v)
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// The next line with content (comments and blank lines skipped).
    fn peek(&mut self) -> Option<usize> {
        while self.pos < self.lines.len() && self.lines[self.pos].is_blank() {
            self.pos += 1;
        }
        (self.pos < self.lines.len()).then_some(self.pos)
    }

    /// A mapping or a sequence whose first line is the next one, at `indent`.
    fn node(&mut self, indent: usize) -> Option<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let i = self.peek()?;
        let line = self.lines[i];
        let v = if is_item(line.content) {
            self.sequence(indent)
        } else {
            self.mapping(indent) // fails at once when the line is not a `key:`
        };
        self.depth -= 1;
        v
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        let mut m = Map::new();
        while let Some(i) = self.peek() {
            let line = self.lines[i];
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_item(line.content) {
                return None;
            }
            let (key, rest) = split_key(line.content)?;
            self.pos = i + 1;
            let v = self.value(rest, indent, true)?;
            if m.insert(key, v).is_some() {
                return None; // a duplicate key
            }
        }
        Some(Value::Object(m))
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(i) = self.peek() {
            let line = self.lines[i];
            if line.indent < indent || (line.indent == indent && !is_item(line.content)) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let after = &line.content[1..];
            let rest = after.trim_start_matches(' ');
            if is_item(rest) {
                return None; // `- - x`
            }
            if split_key(rest).is_some() {
                // `- key: value`: a mapping at the column of its first key.
                self.lines[i] = Line {
                    indent: indent + 1 + (after.len() - rest.len()),
                    content: rest,
                };
                items.push(self.node(self.lines[i].indent)?);
            } else {
                self.pos = i + 1;
                items.push(self.value(rest, indent, false)?);
            }
        }
        Some(Value::Array(items))
    }

    /// The value after `key:` or `- ` on a line indented by `indent`.
    fn value(&mut self, rest: &'a str, indent: usize, in_mapping: bool) -> Option<Value> {
        if rest.is_empty() || rest.starts_with('#') {
            let Some(i) = self.peek() else {
                return Some(Value::Null);
            };
            let next = self.lines[i];
            return if next.indent > indent {
                self.node(next.indent)
            } else if in_mapping && next.indent == indent && is_item(next.content) {
                self.node(indent) // an indentless sequence
            } else {
                Some(Value::Null)
            };
        }
        match rest.as_bytes()[0] {
            b'|' | b'>' => self.block_scalar(rest, indent),
            b'[' | b'{' => {
                let (v, tail) = flow(rest, self.depth + 1)?;
                end_of_line(tail).then_some(v)
            }
            b'"' | b'\'' => {
                let (s, tail) = quoted(rest)?;
                end_of_line(tail).then_some(Value::String(s))
            }
            _ => plain(strip_comment(rest)),
        }
    }

    /// `|`, `|-`, `>` or `>-`, then lines indented more than `indent`.
    fn block_scalar(&mut self, header: &str, indent: usize) -> Option<Value> {
        let (h, tail) = header.split_at(header.find(' ').unwrap_or(header.len()));
        if !end_of_line(tail) || !matches!(h, "|" | "|-" | ">" | ">-") {
            return None;
        }
        let mut parts: Vec<(usize, &str)> = Vec::new(); // (indentation beyond the content's, text)
        let mut at = None; // the content's indentation, from its first line
        let mut i = self.pos;
        while i < self.lines.len() {
            let l = self.lines[i];
            if l.content.is_empty() {
                if l.indent > at.unwrap_or(indent) {
                    return None; // spaces beyond the indentation are content
                }
                // Blank lines only at the end, where chomping drops them.
                let next = self.lines[i..].iter().find(|l| !l.content.is_empty());
                if next.is_some_and(|n| n.indent > indent) {
                    return None;
                }
                break;
            }
            if l.indent <= indent {
                break;
            }
            let a = *at.get_or_insert(l.indent);
            if l.indent < a {
                return None; // less indented than the first line: an error
            }
            parts.push((l.indent - a, l.content));
            i += 1;
        }
        self.pos = i;
        let mut s = String::new();
        for (n, &(extra, text)) in parts.iter().enumerate() {
            if n > 0 {
                // Folding joins lines with a space, except next to a more-indented line.
                let folds = h.starts_with('>') && extra == 0 && parts[n - 1].0 == 0;
                s.push(if folds { ' ' } else { '\n' });
            }
            s.extend(std::iter::repeat_n(' ', extra));
            s.push_str(text);
        }
        if !parts.is_empty() && !h.ends_with('-') {
            s.push('\n');
        }
        Some(Value::String(s))
    }
}

/// `- ` or a lone `-`.
fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// A mapping entry's key and what follows its `:`, when the line is one.
fn split_key(content: &str) -> Option<(String, &str)> {
    let (key, tail) = if content.starts_with(['"', '\'']) {
        quoted(content)?
    } else {
        let end = content
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')))
            .unwrap_or(content.len());
        let key = &content[..end];
        let first = key.bytes().next()?;
        if !(first.is_ascii_alphabetic() || first == b'_') || special(key) {
            return None;
        }
        (key.to_string(), &content[end..])
    };
    if key.len() > MAX_KEY {
        return None;
    }
    let rest = tail.strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((key, rest.trim_start_matches(' ')))
}

/// Nothing but spaces and a comment.
fn end_of_line(tail: &str) -> bool {
    let t = tail.trim_start_matches(' ');
    t.is_empty() || (t.starts_with('#') && t.len() < tail.len())
}

/// A plain scalar without its trailing comment.
fn strip_comment(s: &str) -> &str {
    let b = s.as_bytes();
    let end = (1..b.len())
        .find(|&i| b[i] == b'#' && b[i - 1] == b' ')
        .map_or(s.len(), |i| i - 1);
    s[..end].trim_end_matches(' ')
}

/// Words some YAML version reads as null, booleans or special floats, in any case.
fn special(s: &str) -> bool {
    if s.len() > 5 {
        return false;
    }
    const WORDS: [&str; 16] = [
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf",
        ".nan", "=", "<<",
    ];
    WORDS.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// A plain scalar (block context): a string, `null`, `true`, `false` or a decimal integer.
fn plain(s: &str) -> Option<Value> {
    match s {
        "" | "null" => return Some(Value::Null),
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    let b = s.as_bytes();
    let numeric = b[0].is_ascii_digit()
        || (matches!(b[0], b'-' | b'+' | b'.') && b.get(1).is_some_and(u8::is_ascii_digit));
    if numeric {
        let digits = s.strip_prefix('-').unwrap_or(s);
        let canonical = s == "0"
            || (!digits.is_empty()
                && digits.len() <= 18
                && !digits.starts_with('0')
                && digits.bytes().all(|d| d.is_ascii_digit()));
        return if canonical {
            s.parse::<i64>().ok().map(Value::from)
        } else {
            None
        };
    }
    if special(s)
        || b"-?:,[]{}#&*!|>'\"%@`".contains(&b[0])
        || s.bytes()
            .zip(s.bytes().skip(1).chain([b' ']))
            .any(|pair| pair == (b':', b' '))
    {
        return None;
    }
    Some(Value::String(s.to_string()))
}

/// A one-line quoted scalar at the start of `s`, and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let q = s.chars().next()?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' if q == '\'' => {
                if s[1 + i + 1..].starts_with('\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Some((out, &s[1 + i + 1..]));
                }
            }
            '"' if q == '"' => return Some((out, &s[1 + i + 1..])),
            '\\' if q == '"' => out.push(match chars.next()?.1 {
                '\\' => '\\',
                '"' => '"',
                '/' => '/',
                'n' => '\n',
                't' => '\t',
                _ => return None, // other escapes: serde-saphyr
            }),
            _ => out.push(c),
        }
    }
    None // unterminated on this line (a multi-line scalar, or an error)
}

/// A one-line flow collection at the start of `s` (`[a, "b"]`, `{k: v}`), and what follows.
fn flow(s: &str, depth: usize) -> Option<(Value, &str)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (open, close) = if s.starts_with('[') {
        ('[', ']')
    } else {
        ('{', '}')
    };
    let mut rest = s[1..].trim_start_matches(' ');
    let mut items = Vec::new();
    let mut map = Map::new();
    if let Some(r) = rest.strip_prefix(close) {
        return Some((empty(open), r));
    }
    loop {
        if open == '{' {
            let (key, r) = split_key(rest)?;
            if r.is_empty() {
                return None;
            }
            let (v, r) = flow_item(r, depth)?;
            if map.insert(key, v).is_some() {
                return None;
            }
            rest = r;
        } else {
            let (v, r) = flow_item(rest, depth)?;
            items.push(v);
            rest = r;
        }
        rest = rest.trim_start_matches(' ');
        if let Some(r) = rest.strip_prefix(close) {
            let v = if open == '[' {
                Value::Array(items)
            } else {
                Value::Object(map)
            };
            return Some((v, r));
        }
        rest = rest.strip_prefix(',')?.trim_start_matches(' ');
        if rest.starts_with([']', '}', ',']) {
            return None; // trailing or doubled comma
        }
    }
}

fn empty(open: char) -> Value {
    if open == '[' {
        Value::Array(Vec::new())
    } else {
        Value::Object(Map::new())
    }
}

/// One item of a flow collection: a nested collection, a quoted or a plain scalar.
fn flow_item(s: &str, depth: usize) -> Option<(Value, &str)> {
    match s.bytes().next()? {
        b'[' | b'{' => flow(s, depth + 1),
        b'"' | b'\'' => quoted(s).map(|(q, r)| (Value::String(q), r)),
        _ => {
            let end = s.find([',', ']', '}']).unwrap_or(s.len());
            let text = s[..end].trim_end_matches(' ');
            if text.is_empty() || text.contains([':', '#', '[', '{', '"', '\'']) {
                return None;
            }
            Some((plain(text)?, &s[end..]))
        }
    }
}

/// Decode a value the fast reader produced into a type, accepting no more than serde-saphyr
/// would from the same YAML. `serde_json::from_value` is more lenient: it reads a struct from
/// a sequence of its fields in order (`conditionsDefinition: [".path"]`), which serde-saphyr
/// refuses (found by the `definition` fuzz target). This deserializer reads structs only from
/// mappings, enums only from strings, and refuses anything unusual; a refusal only sends the
/// text to serde-saphyr.
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(
    v: &Value,
) -> Result<T, serde_json::Error> {
    T::deserialize(Strict(v))
}

struct Strict<'a>(&'a Value);

impl<'de> serde::Deserializer<'de> for Strict<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => v.visit_u64(u),
                (None, Some(i)) => v.visit_i64(i),
                _ => Err(serde::de::Error::custom("not an integer")),
            },
            Value::String(s) => v.visit_borrowed_str(s),
            Value::Array(a) => v.visit_seq(Items(a.iter())),
            Value::Object(m) => v.visit_map(Entries {
                entries: m.iter(),
                value: None,
            }),
        }
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(v),
            _ => Err(serde::de::Error::custom("expected a mapping")),
        }
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        use serde::de::IntoDeserializer;
        match self.0 {
            Value::String(s) => v.visit_enum(s.as_str().into_deserializer()),
            _ => Err(serde::de::Error::custom("expected a string")),
        }
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Self::Error> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Items<'a>(std::slice::Iter<'a, Value>);

impl<'de> serde::de::SeqAccess<'de> for Items<'de> {
    type Error = serde_json::Error;

    fn next_element_seed<T: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Strict(v)))
            .transpose()
    }
}

struct Entries<'a> {
    entries: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
}

impl<'de> serde::de::MapAccess<'de> for Entries<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((k, v)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(v);
        let key = serde::de::value::BorrowedStrDeserializer::new(k.as_str());
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(Strict(v)),
            None => Err(serde::de::Error::custom("a value without a key")),
        }
    }
}

#[cfg(test)]
#[path = "fast_yaml_tests.rs"]
mod tests;
