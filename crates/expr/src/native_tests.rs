//! The native evaluator (`native.rs`) against jaq: same outputs in the same order, same
//! errors with the same messages.

use super::*;
use proptest::prelude::*;
use serde_json::json;

type Outs = Result<Vec<serde_json::Value>, EvalError>;

fn json_outs(r: Result<Vec<Val>, EvalError>) -> Outs {
    r.map(|o| o.iter().map(from_val).collect())
}

/// (what `eval` answers, what jaq answers); `evaluate` on the JSON value (no conversion of
/// the input) must give `eval`'s answer too, and the paths on JSON the paths on jaq values.
fn answers(e: &Expr, input: &Val, vars: &[Val]) -> (Outs, Outs) {
    let ours = json_outs(e.eval(input, vars, &Limits::default()));
    let jaq = json_outs(e.eval_interpreted(input, vars, &Limits::default()));
    let json = from_val(input);
    let converted = OnceLock::new();
    let on_json = e
        .evaluate(Input::json(&json, &converted), vars, &Limits::default())
        .map(|o| o.iter().map(|x| x.to_json().into_owned()).collect());
    assert_eq!(on_json, ours, "on JSON: `{}` on {input}", e.text());
    if let Some(paths) = e.paths_json(&json, &Limits::default()) {
        assert_eq!(
            paths,
            e.paths(input, vars, &Limits::default()),
            "paths on JSON: `{}` on {input}",
            e.text()
        );
    }
    (ours, jaq)
}

/// Expressions of the subset, chosen for the corners of jaq's semantics: errors in the middle
/// of a stream, cartesian products, `//` with errors, optional paths, computed indices.
const EXPRESSIONS: &[&str] = &[
    ".a // .b",
    "(.a, .b) // 3",
    "(1, (\"s\" | .x), 2) // 3",
    "(null, false) // (4, 5)",
    "(\"s\" | .x) // 1",
    ".a + .b",
    ".a - .b",
    ".a * .b",
    ".a / .b",
    ".a % .b",
    "(1, 2) + (10, 20)",
    "(1, (\"s\" | .x)) + (10, 20)",
    "(\"s\" | .x) + empty",
    "(1, 2) * (\"s\" | .x)",
    "(1, 2) == (1, 2)",
    ".a < .b",
    ".a >= .b",
    ".[] as $x | $x",
    ". as $a | .[]? as $b | [$a | length, $b]",
    ".a as $x | .b as $x | $x",
    "[.[] | select(. != null)]",
    "[.[]?, 1]",
    "map(. == 1)",
    "map(.a)",
    "any",
    "all",
    "any(. == 1)",
    "all(. != null)",
    "any(.[]?; . == 2)",
    "all(.[]?; type == \"number\")",
    "any((1, (\"s\" | .x)); . == 1)",
    "any(((\"s\" | .x), 1); . == 1)",
    "all((0, 1); . == 0)",
    "to_entries",
    "to_entries[] | .key",
    "to_entries[] | .key | ascii_upcase",
    "[to_entries[] | .key | length]",
    "to_entries[] | .key?",
    "(to_entries[] | .key), 1",
    ".a | to_entries[] | .key",
    "[to_entries[] | .value]",
    "length",
    ".a | length",
    "min",
    "max",
    "first",
    "first(.[])",
    "first(.[]?)",
    "first(empty)",
    "first((\"s\" | .x), 1)",
    "type",
    ".a | type",
    "ascii_downcase",
    "ascii_upcase",
    ".b | ascii_downcase",
    "not",
    ".a | not",
    "{a: .a, b: (.b, .c)}",
    "{(.k): 1}",
    "{(.k, \"z\"): (1, 2)}",
    "{a}",
    "{$v}",
    "{\"x y\": 1, a: 2, \"x y\": 3}",
    "{a: (1, 2), b: (3, 4)}",
    "{a: (\"s\" | .x), b: (1, 2)}",
    "{a: (1, 2), b: (\"s\" | .x)}",
    "{}",
    "[]",
    ".[.k]",
    ".[.k, \"b\"]",
    ".[][0, 1]?",
    ".[(\"s\" | .x), \"a\"]",
    ".a[.i]",
    ".a[-1]",
    ".a[1.5]",
    ".[\"a\"]",
    ".a[]?.c?",
    ".a.b[]?.c",
    ".[]?[]?",
    "if .a then .b elif .c then 1 else 2 end",
    "if (true, false) then 1 else 2 end",
    "if .a then 1 end",
    "if (\"s\" | .x) then 1 else 2 end",
    "-.a",
    "-(.a // 1)",
    "\"a\\nb\\u00e9\" | length",
    "\"\"",
    ".a and .b",
    ".a or (.b | not)",
    "(true, false) and (true, false)",
    "(false, true) or (\"s\" | .x)",
    "(true, (\"s\" | .x)) and false",
    "$v",
    "$v.a",
    "$v[\"a\"]",
    "1.5",
    "1e3",
    "100000000000000000000",
    "-1",
    "null, true, false",
    "empty",
    "(.a // 0) > 0 and (.b // 0) == 0",
    "[.[]? | select(type == \"object\")] | length == 0",
    ".[]? | (.a // 1) * (.b // 1)",
    "(.a // {}) + (.b // {})",
    "[(.a // 1), (.b // .a // 1)] | min",
    ".a | .b",
    ".[]? | .a",
    ".a | .[] | .c?",
    ". | .a[0] | .b",
    ".a? | .[]? | .[1]",
];

fn inputs() -> Vec<serde_json::Value> {
    vec![
        json!(null),
        json!(true),
        json!(1),
        json!(-2.5),
        json!("Hello"),
        json!([]),
        json!([1, null, "a", [2], {"a": 1}]),
        json!({"a": 1, "b": "x", "c": null, "k": "a", "i": 1}),
        json!({"a": [1, 2, 3], "b": {"c": true}, "i": -1}),
        json!({"a": {"b": [{"c": 1}, {"c": "z"}, 3]}}),
        json!({"a": "s", "b": 2}),
        json!({"a": 6, "b": 0}),
        json!({"a": {"x": 1}, "b": {"x": 2, "y": 3}}),
        json!([3, 1, 2, 1]),
        json!([[1, 2], [3]]),
        json!({"x": false, "y": 0}),
        json!(["B", "a"]),
        json!({"a": 1.5, "b": 1}),
        json!(8e89),
        json!({"a": 1.5e-7, "b": [8e89]}),
    ]
}

#[test]
fn native_answers_like_jaq() {
    let vars = [Val::Null, to_val(&json!({"a": [1]}))];
    for text in EXPRESSIONS {
        let e = Expr::compile_with_vars(text, &["v"]).unwrap();
        assert_ne!(
            e.evaluator(),
            crate::Evaluator::Jaq,
            "{text} should be evaluated without jaq"
        );
        for input in inputs() {
            let v = to_val(&input);
            for var in &vars {
                let (ours, jaq) = answers(&e, &v, std::slice::from_ref(var));
                assert_eq!(ours, jaq, "`{text}` on {input}");
            }
        }
    }
}

/// Pipes of paths have their write locations read from the JSON, like plain paths.
#[test]
fn pipes_of_paths_are_walked_in_place() {
    for text in [
        ".a | .b",
        ".[]? | .a",
        ".a | .[] | .c?",
        ". | .a[0] | .b",
        ".a? | .[]? | .[1]",
    ] {
        let e = Expr::compile(text).unwrap();
        assert!(
            e.paths_json(&json!({}), &Limits::default()).is_some(),
            "{text}"
        );
    }
    for text in [".a // .b", ".[.k]", ".a | select(.b)", ".a[-1] | .b"] {
        let e = Expr::compile(text).unwrap();
        assert!(
            e.paths_json(&json!({}), &Limits::default()).is_none(),
            "{text}"
        );
    }
}

#[test]
fn what_stays_with_jaq() {
    for text in [
        "[range(3)]",
        "reduce .[] as $x (0; . + $x)",
        "try .a catch 1",
        "\"\\(.a)\"",
        "@base64",
        ".a |= 1",
        "def f: 1; f",
        ".[1:2]",
        "..",
        "test(\"a\")",
        "$undeclared",
        ".[] as [$a] | $a",
        "label $out | 1",
        "tonumber",
    ] {
        let e = Expr::compile_with_vars(text, &["v"]);
        if let Ok(e) = e {
            assert_eq!(e.evaluator(), crate::Evaluator::Jaq, "{text}");
        }
    }
}

/// A value the evaluator cannot answer the way jaq would makes it hand over to jaq.
#[test]
fn bail_outs_give_jaqs_answer() {
    for (text, input) in [
        ("length", json!(-3.5)),
        (".a | length", json!({"a": -3})),
        (".[] | length", json!([1, "ab", [1]])),
    ] {
        let e = Expr::compile(text).unwrap();
        assert_eq!(e.evaluator(), crate::Evaluator::Native);
        let (ours, jaq) = answers(&e, &to_val(&input), &[]);
        assert_eq!(ours, jaq, "{text}");
        assert!(ours.is_ok(), "{text}: {ours:?}");
    }
}

/// The sandbox's checks hold natively too: building past the size cap is a budget error.
#[test]
fn native_evaluation_is_bounded() {
    let e = Expr::compile("[.[] as $x | .[] as $y | .[] | {a: $x, b: $y}] | length").unwrap();
    assert_eq!(e.evaluator(), crate::Evaluator::Native);
    let big = to_val(&serde_json::Value::Array(
        (0..300).map(|i| json!(i)).collect(),
    ));
    let r = e.eval(&big, &[], &Limits::default());
    assert!(matches!(r, Err(EvalError::Budget { .. })), "{r:?}");
    let s = Expr::compile(".a * .b").unwrap();
    assert_eq!(s.evaluator(), crate::Evaluator::Native);
    let r = s.eval(
        &to_val(&json!({"a": "x", "b": 10_000_000_000i64})),
        &[],
        &Limits::default(),
    );
    assert!(matches!(r, Err(EvalError::Budget { .. })), "{r:?}");
}

fn expr() -> impl Strategy<Value = String> {
    let leaf = proptest::sample::select(vec![
        ".",
        ".a",
        ".b",
        ".[0]",
        ".[]",
        ".[]?",
        ".a?",
        "1",
        "\"a\"",
        "null",
        "true",
        "false",
        "$v",
        "empty",
        "[]",
        "{}",
        "length",
        "to_entries",
        "to_entries[] | .key",
        "min",
        "max",
        "type",
        "first",
        "not",
        "ascii_downcase",
    ])
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 40, 3, |inner| {
        let bin = |op: &'static str| {
            (inner.clone(), inner.clone()).prop_map(move |(a, b)| format!("({a}) {op} ({b})"))
        };
        let un = |f: &'static str| inner.clone().prop_map(move |a| f.replace('A', &a));
        prop_oneof![
            bin("//"),
            bin("and"),
            bin("or"),
            bin("=="),
            bin("<"),
            bin("+"),
            bin("-"),
            bin("*"),
            bin("/"),
            bin("|"),
            bin(","),
            bin("as $v |"),
            un("[A]"),
            un("{a: (A)}"),
            un("select(A)"),
            un("any(A)"),
            un("all(A)"),
            un("map(A)"),
            un("first(A)"),
            un("-(A)"),
            un("(A)[]?"),
            un("(A).a"),
            un(".[(A)]?"),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{({a}): ({b})}}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("any({a}; {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("all({a}; {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("if {a} then {b} else {c} end")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!(".[({a}), ({b})]?")),
        ]
    })
}

fn value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        (-3i8..4).prop_map(|n| json!(n)),
        Just(json!(0.5)),
        prop_oneof![Just("a"), Just("b"), Just("A"), Just("")].prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 20, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop_oneof![Just("a".to_string()), Just("b".to_string())],
                inner,
                0..3
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("WLMAP_NATIVE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(3000)))]
    #[test]
    fn random_expressions_answer_like_jaq(text in expr(), input in value(), var in value()) {
        let e = Expr::compile_with_vars(&text, &["v"]).unwrap();
        prop_assert!(e.evaluator() != crate::Evaluator::Jaq, "{} should not need jaq", text);
        let (v, var) = (to_val(&input), [to_val(&var)]);
        let (ours, jaq) = answers(&e, &v, &var);
        prop_assert_eq!(ours, jaq, "`{}` on {}", text, input);
    }
}

/// Found by the `expression` fuzz target (`testdata/deep-negations.fuzz`, `EXPR\nJSON`):
/// hundreds of chained minus signs (`8888888 - - - ... 0`) overflowed the stack of the native
/// evaluator, which recurses per level. Terms nested deeper than it allows, and very long
/// paths, are left to jaq (which answers them). That input nests past `MAX_SYNTAX_DEPTH` and
/// is refused when compiled; a term of 100 levels is left to jaq.
#[test]
fn deep_terms_are_left_to_jaq() {
    let input = include_str!("../testdata/deep-negations.fuzz");
    let (fuzzed, json) = input.split_once('\n').unwrap_or((input, "null"));
    let e = Expr::compile(fuzzed).unwrap_err();
    assert!(e.message.contains("nests too deeply"), "{e}");
    // The size of a main thread's stack, as in the fuzzer's process and the CLI.
    let json = json.to_string();
    let run = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let deep = format!("8888888{}0", " -".repeat(100));
            let path = ".a".repeat(500);
            for text in [deep.as_str(), path.as_str()] {
                let e = Expr::compile(text).unwrap();
                assert_eq!(e.evaluator(), crate::Evaluator::Jaq, "{}...", &text[..20]);
                let v = serde_json::from_str(&json).unwrap_or(json!({"a": null}));
                let _ = e.eval(&to_val(&v), &[], &Limits::default());
            }
        });
    run.unwrap().join().expect("no stack overflow");
    // Within the limit, native.
    let e = Expr::compile(&format!("8{}0", "-".repeat(20))).unwrap();
    assert_eq!(e.evaluator(), crate::Evaluator::Native);
}

/// Found by the `expression` fuzz target (`testdata/array-key-before-an-index-error.fuzz`):
/// jaq refuses an array key of two or more elements (`.[[1,2]]`) when it evaluates that
/// index, so before the error of an index to its right (`.indices` on an array); the native
/// evaluator reported that later error. It now leaves such a path to jaq, as it already did
/// when walking one.
#[test]
fn fuzz_found_an_array_key_refused_before_a_later_index_error() {
    let input = include_str!("../testdata/array-key-before-an-index-error.fuzz");
    let (fuzzed, json) = input.split_once('\n').unwrap_or((input, "null"));
    let v = serde_json::from_str(json.trim()).unwrap_or(serde_json::Value::Null);
    for text in [
        fuzzed,
        ".[[1,2]][.a]",
        ".[[1]][[1,2]][[.a]]",
        ".[0][[1,2]][.a]",
    ] {
        let e = Expr::compile_with_vars(text, &["v"]).unwrap();
        let (ours, jaq) = answers(&e, &to_val(&v), &[Val::Null]);
        assert_eq!(ours, jaq, "`{text}` on {v}");
        let message = match ours {
            Err(EvalError::Runtime { message }) => message,
            other => panic!("`{text}`: {other:?}"),
        };
        assert!(
            message.contains("an array as an index"),
            "`{text}`: {message}"
        );
    }
}
