//! The fast reader answers exactly what serde-saphyr answers, or not at all.

use super::parse;
use crate::decode::options;
use proptest::prelude::*;
use serde_json::{Value, json};

/// serde-saphyr's reading of the same text, as JSON values.
fn saphyr(text: &str) -> Result<Vec<Value>, String> {
    serde_saphyr::from_multiple_with_options::<Value>(text, options()).map_err(|e| e.to_string())
}

/// When the fast reader answers, serde-saphyr reads the same values, and decoding gives the
/// same definitions (or the fast path was not taken).
fn agrees(text: &str) -> Result<bool, TestCaseError> {
    let Some(fast) = parse(text) else {
        return Ok(false);
    };
    prop_assert_eq!(Ok(fast), saphyr(text), "text:\n{}", text);
    let both = (
        crate::decode(text, "t.yaml"),
        crate::decode_with_saphyr(text, "t.yaml"),
    );
    match both {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "text:\n{}", text),
        (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
        (a, b) => prop_assert!(false, "{:?} vs {:?}\n{}", a, b, text),
    }
    Ok(true)
}

fn catalog() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../catalog/definitions");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("catalog definitions")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_catalog_definition_takes_the_fast_path() {
    let all = catalog();
    assert!(all.len() >= 20, "{}", all.len());
    for (path, text) in all {
        assert!(
            parse(&text).is_some(),
            "{path} is not read by the fast path"
        );
        assert!(agrees(&text).unwrap(), "{path}");
    }
}

#[test]
fn the_subset_is_read_like_yaml() {
    let fast = [
        ("a: 1\nb: x\n", json!({"a": 1, "b": "x"})),
        ("# c\n---\na: -12 # c\n", json!({"a": -12})),
        (
            "a:\n- x\n- w: 1\n  z: 2\nb: [1, 'q', \"r\"]\n",
            json!({"a": ["x", {"w": 1, "z": 2}], "b": [1, "q", "r"]}),
        ),
        (
            "a:\n  -   k: v\n      l: w\n",
            json!({"a": [{"k": "v", "l": "w"}]}),
        ),
        (
            "e: |-\n  .a\n  | .b\n\nf: >-\n  .x //\n  \"y\"\ng: |\n  l\nh: >\n  m\n",
            json!({"e": ".a\n| .b", "f": ".x // \"y\"", "g": "l\n", "h": "m\n"}),
        ),
        (
            "e: |-\n  # not a comment\n  .a\n",
            json!({"e": "# not a comment\n.a"}),
        ),
        (
            "e: >-\n  a\n    b\n  c\n  d\nf: |-\n  a\n    b\n",
            json!({"e": "a\n  b\nc d", "f": "a\n  b"}),
        ),
        (
            "p: .metadata.labels[\"a/b\"] // .x\nq: a:b\nr: a#b\ns: ''\nt: 'it''s'\nu: \"\\\\ \\\" \\n\"\n",
            json!({"p": ".metadata.labels[\"a/b\"] // .x", "q": "a:b", "r": "a#b", "s": "", "t": "it's", "u": "\\ \" \n"}),
        ),
        (
            "k:\nl: null\nm: true\nf: false\no: {}\np: []\nq: {a: {b: [1]}}\n",
            json!({"k": null, "l": null, "m": true, "f": false, "o": {}, "p": [], "q": {"a": {"b": [1]}}}),
        ),
        (
            "'quoted key': 1\n\"app.kubernetes.io/name\": 2\napp.kubernetes.io/part-of: 3\n",
            json!({"quoted key": 1, "app.kubernetes.io/name": 2, "app.kubernetes.io/part-of": 3}),
        ),
        ("a: 1\n---\nb: 2\n", json!([{"a": 1}, {"b": 2}])),
        ("- a\n- - b\n", Value::Null),
    ];
    for (text, want) in fast {
        let got = parse(text);
        if want.is_null() {
            assert!(got.is_none(), "{text}");
            continue;
        }
        let got = got.unwrap_or_else(|| panic!("not read: {text}"));
        let got = if got.len() == 1 {
            got[0].clone()
        } else {
            Value::Array(got)
        };
        assert_eq!(got, want, "{text}");
        assert!(agrees(text).unwrap());
    }
}

#[test]
fn everything_else_is_left_to_serde_saphyr() {
    let slow = [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: yes\n",
        "a: True\n",
        "a: ~\n",
        "a: 1.5\n",
        "a: 0755\n",
        "a: -0\n",
        "a: 1e3\n",
        "a: 0x1f\n",
        "a: 2024-01-01\n",
        "a: .inf\n",
        "a: 1\na: 2\n",
        "a: {b: 1, b: 2}\n",
        "a: x\n  y\n",
        "a: |-\n  x\n\n  y\n",
        "a: |+\n  x\n",
        "a: >-\n  x\n    \nb: 1\n",
        "a: |-\n    \n  x\n",
        "a: |2\n   x\n",
        "a:\tb\n",
        "a: b\r\n",
        "a: 1\n...\n",
        "%YAML 1.2\n---\na: 1\n",
        "---\n---\na: 1\n",
        "a: 1\n---\n",
        "",
        "# only a comment\n",
        "a:b\n",
        "a: b: c\n",
        "a: 'x\n  y'\n",
        "a: \"\\u0041\"\n",
        "a: [1,\n  2]\n",
        "? a\n: b\n",
        "a: x\u{85}y\n",
        "\u{feff}a: 1\n",
        "<<: {a: 1}\n",
        "y: 1\n",
        "a: - x\n",
        "a: [1, ]\n",
        "a: {b: }\n",
        "a: 'x'y\n",
        "a: b #c\n  d: 1\n",
        "- x\n-y\n",
        "a:\n  b: 1\n c: 2\n",
        "x\n",
    ];
    for text in slow {
        assert!(parse(text).is_none(), "read by the fast path: {text:?}");
    }
}

/// A struct written as a sequence of its fields: serde_json reads it (fields in order),
/// serde-saphyr refuses it, so the fast path must not answer (found by the `definition` fuzz
/// target: `conditionsDefinition:` followed by `- .metadata.labels[...]`).
#[test]
fn structs_are_read_only_from_mappings() {
    let found = include_str!("../testdata/struct-as-sequence.fuzz");
    assert!(parse(found).is_some(), "the YAML itself is in the subset");
    assert!(crate::decode_with_saphyr(found, "t.yaml").is_err());
    assert!(crate::decode(found, "t.yaml").is_err());
    assert!(agrees(found).unwrap());
    let v = json!({"path": ".status.conditions"});
    let c: crate::ConditionsDefinition = super::from_value(&v).unwrap();
    assert_eq!(c.path, ".status.conditions");
    assert!(
        super::from_value::<crate::ConditionsDefinition>(&json!([".status.conditions"])).is_err()
    );
    // serde_json alone would have accepted it.
    assert!(
        serde_json::from_value::<crate::ConditionsDefinition>(json!([".status.conditions"]))
            .is_ok()
    );
}

/// Strings that YAML reads in more than one way, or not at all, when written plain.
const TRICKY: &[&str] = &[
    "x",
    "yes",
    "No",
    "True",
    "on",
    "y",
    "~",
    "null",
    "Null",
    "12",
    "-3",
    "+3",
    "0",
    "-0",
    "007",
    "1.5",
    ".5",
    "1e3",
    "0x1f",
    "1_000",
    "2024-01-01",
    ".inf",
    ".NaN",
    "a: b",
    "a:b",
    "a #b",
    "a#b",
    "#c",
    "- x",
    "-x",
    "|",
    ">",
    "&a",
    "*a",
    "!t",
    "@x",
    "%x",
    "`x",
    "?x",
    ",x",
    "[x]",
    "{y}",
    "x]",
    "'q'",
    "\"q\"",
    "it's",
    "é",
    "a,b",
    "",
    " lead",
    "trail ",
    ".spec.x[\"k\"]",
    ".a // \"b\"",
    "$x",
    "=",
    "<<",
    "a\\b",
    "\\n",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::sample::select(TRICKY).prop_map(|s| Value::String(s.to_string())),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(&["a", "b", "app.kubernetes.io/name", "_x", "spec", "k-1"][..])
            .prop_map(str::to_string),
        proptest::sample::select(TRICKY).prop_map(str::to_string),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// YAML for a value, each choice of style taken from `styles` (so a shrunk case stays put).
struct Writer<'s> {
    styles: &'s [u8],
    n: usize,
    out: String,
}

impl Writer<'_> {
    fn pick(&mut self, k: u8) -> u8 {
        let s = self.styles[self.n % self.styles.len()] % k;
        self.n += 1;
        s
    }

    fn scalar(&mut self, v: &Value) -> String {
        match v {
            Value::String(s) => match self.pick(4) {
                0 => format!("'{}'", s.replace('\'', "''")),
                1 => serde_json::to_string(s).unwrap(),
                _ => s.clone(),
            },
            other => other.to_string(),
        }
    }

    fn flow(&mut self, v: &Value) -> String {
        match v {
            Value::Array(a) => {
                let items: Vec<String> = a.iter().map(|x| self.flow(x)).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Object(o) => {
                let items: Vec<String> = o
                    .iter()
                    .map(|(k, x)| format!("{}: {}", self.key(k), self.flow(x)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            s => self.scalar(s),
        }
    }

    fn key(&mut self, k: &str) -> String {
        if self.pick(3) == 0 {
            serde_json::to_string(k).unwrap()
        } else {
            k.to_string()
        }
    }

    fn comment(&mut self) -> &'static str {
        if self.pick(5) == 0 { " # c" } else { "" }
    }

    /// The value of a `key:` or `- ` at `indent`, from just after the indicator.
    fn after(&mut self, v: &Value, indent: usize, in_mapping: bool) {
        let step = if self.pick(2) == 0 { 2 } else { 4 };
        match v {
            Value::Array(a) if !a.is_empty() && self.pick(4) != 0 => {
                let c = self.comment();
                self.out.push_str(&format!("{c}\n"));
                let at = if in_mapping && self.pick(2) == 0 {
                    indent
                } else {
                    indent + step
                };
                self.block(v, at);
            }
            Value::Object(o) if !o.is_empty() && self.pick(4) != 0 => {
                let c = self.comment();
                self.out.push_str(&format!("{c}\n"));
                self.block(v, indent + step);
            }
            Value::String(s) if !s.is_empty() && !s.contains('\n') && self.pick(4) == 0 => {
                let h = ["|-", ">-", "|", ">"][self.pick(4) as usize];
                let body = s.trim_end();
                self.out
                    .push_str(&format!(" {h}\n{}{body}\n", " ".repeat(indent + step)));
            }
            Value::Array(_) | Value::Object(_) => {
                let f = self.flow(v);
                let c = self.comment();
                self.out.push_str(&format!(" {f}{c}\n"));
            }
            s => {
                let text = self.scalar(s);
                let c = self.comment();
                self.out.push_str(&format!(" {text}{c}\n"));
            }
        }
    }

    fn block(&mut self, v: &Value, indent: usize) {
        let pad = " ".repeat(indent);
        match v {
            Value::Array(a) => {
                for x in a {
                    self.out.push_str(&format!("{pad}-"));
                    self.after(x, indent, false);
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    let k = self.key(k);
                    self.out.push_str(&format!("{pad}{k}:"));
                    self.after(x, indent, true);
                }
            }
            s => {
                let t = self.scalar(s);
                self.out.push_str(&format!("{pad}{t}\n"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("WLMAP_YAML_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2000)))]

    #[test]
    fn random_documents_are_read_alike(v in tree(), styles in proptest::collection::vec(any::<u8>(), 1..64)) {
        let mut w = Writer { styles: &styles, n: 0, out: String::new() };
        w.block(&v, 0);
        agrees(&w.out)?;
    }

    /// Edits of whole lines: how a hand edit goes wrong (a line dropped or doubled, moved
    /// left or right, a mapping entry turned into a sequence item).
    #[test]
    fn definitions_with_edited_lines_are_read_alike(
        which in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), 0..6u8), 1..4),
    ) {
        let all = catalog();
        let text = &all[which.index(all.len())].1;
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for (at, kind) in edits {
            let i = at.index(lines.len());
            let line = lines[i].clone();
            let content = line.trim_start();
            let indent = line.len() - content.len();
            match kind {
                0 => { lines.remove(i); }
                1 => lines.insert(i, line.clone()),
                2 => lines[i] = format!("  {line}"),
                3 => lines[i] = format!("{}{content}", " ".repeat(indent.saturating_sub(2))),
                4 => lines[i] = format!("{}- {content}", " ".repeat(indent)),
                _ => lines[i] = match content.split_once(": ") {
                    Some((_, value)) => format!("{}- {value}", " ".repeat(indent)),
                    None => format!("{line}:"),
                },
            }
            if lines.is_empty() { break; }
        }
        agrees(&(lines.join("\n") + "\n"))?;
    }

    #[test]
    fn edited_definitions_are_read_alike(
        which in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), 0..4usize,
            proptest::sample::select(&[" ", "\n", "#", ": ", "- ", "'", "\"", "|", ">", "{", "[", "&a ",
                "*a", "!!str ", "---\n", "  ", "yes", "1.5", "\t", "\\", "\n  x: 1", "~", "-", "é"][..])), 1..4),
    ) {
        let all = catalog();
        let mut text = all[which.index(all.len())].1.clone();
        for (at, del, ins) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) { i -= 1; }
            let mut j = (i + del).min(text.len());
            while !text.is_char_boundary(j) { j -= 1; }
            text.replace_range(i..j, ins);
        }
        agrees(&text)?;
    }
}
