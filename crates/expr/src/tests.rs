use super::*;
use serde_json::json;
use std::time::Duration;

fn eval(expr: &str, input: serde_json::Value) -> Result<Vec<serde_json::Value>, EvalError> {
    let e = Expr::compile(expr).expect("compiles");
    e.eval(&to_val(&input), &[], &Limits::default())
        .map(|v| v.iter().map(from_val).collect())
}

macro_rules! yields {
    ($name:ident, $expr:expr, $input:expr, [$($out:expr),*]) => {
        #[test]
        fn $name() {
            assert_eq!(eval($expr, $input).unwrap(), Vec::<serde_json::Value>::from([$($out),*]));
        }
    };
}

yields!(plain_path, ".a.b", json!({"a": {"b": 1}}), [json!(1)]);
yields!(missing_path_is_null, ".a.b", json!({}), [json!(null)]);
yields!(alternative, ".a // 7", json!({}), [json!(7)]);
yields!(iterate_optional, ".a[]?", json!({}), []);
yields!(
    keys_keep_document_order,
    ".s | to_entries[] | .key",
    json!({"s": {"head": 1, "dashboard": 2}}),
    [json!("head"), json!("dashboard")]
);
yields!(
    tostring_of_bool,
    ".a | tostring",
    json!({"a": true}),
    [json!("true")]
);
yields!(
    in_builtin,
    ".t | IN(\"Ready\", \"Available\")",
    json!({"t": "Ready"}),
    [json!(true)]
);
yields!(range_small, "[range(3)]", json!(null), [json!([0, 1, 2])]);
yields!(
    bracket_key,
    ".metadata.labels[\"a/b\"]",
    json!({"metadata": {"labels": {"a/b": "x"}}}),
    [json!("x")]
);
yields!(
    any_all,
    "(.c // []) | any(.status == \"True\")",
    json!({"c": [{"status": "True"}]}),
    [json!(true)]
);

#[test]
fn compile_error_points_into_the_expression() {
    let e = Expr::compile(".spec | foo(1)").unwrap_err();
    assert_eq!(&e.source_text[e.span.clone()], "foo");
    assert!(e.message.contains("undefined"), "{}", e.message);
}

#[test]
fn syntax_error_has_a_span() {
    let e = Expr::compile(".a | | .b").unwrap_err();
    assert!(e.span.start >= 3, "{:?}", e.span);
}

/// `expr` fails to compile, pointing at `word`, with a message that says `why`.
fn refused_at(expr: &str, word: &str, why: &str) {
    let e = Expr::compile(expr).expect_err(expr);
    assert_eq!(&e.source_text[e.span.clone()], word, "{expr}");
    assert!(e.message.contains(why), "{expr}: {}", e.message);
}

#[test]
fn forbidden_builtins_are_refused_with_their_span() {
    for (expr, word) in [
        ("env.AWS_SECRET_ACCESS_KEY", "env"),
        ("$ENV.HOME", "$ENV"),
        ("input", "input"),
        ("[inputs]", "inputs"),
        ("input_filename", "input_filename"),
        ("$__prog_args", "$__prog_args"),
        (".a | debug", "debug"),
        (".a | stderr", "stderr"),
        ("halt", "halt"),
        ("\"x\" | halt_error", "halt_error"),
        ("\"\\(env)\"", "env"),
    ] {
        refused_at(expr, word, "not available");
    }
}

#[test]
fn recursive_definitions_are_refused() {
    for (expr, name) in [
        ("def f: f; f", "f"),
        ("def g(x): x | g(x); g(.)", "g"),
        ("def outer: def inner: outer; inner; outer", "outer"),
        ("[.[] | def h: 1 + h; h]", "h"),
        // Inside a string interpolation, an object pattern's key and a slice bound too.
        ("\"\\(def s: s; s)\"", "s"),
        (". as {(def k: k; k): $v} | $v", "k"),
        (".[1:(def r: r; r)]", "r"),
    ] {
        refused_at(expr, name, "recursive");
    }
    assert_eq!(
        eval("def twice(f): f | f; .a | twice(. + 1)", json!({"a": 1})).unwrap(),
        vec![json!(3)]
    );
}

/// A key of a destructuring pattern runs on the value being destructured, not on the input:
/// what it reads is inside a path `footprint` already counts (`.a` here), which is why
/// `footprint` leaves pattern keys out.
#[test]
fn a_pattern_key_reads_the_value_it_destructures() {
    let input = json!({"a": {"x": 1, "k": "x"}, "k": "y"});
    assert_eq!(
        eval(".a as {(.k): $v} | $v", input).unwrap(),
        vec![json!(1)]
    );
    assert_eq!(
        field_paths(".a as {(.k): $v} | $v"),
        vec![vec!["a".to_string()]]
    );
}

/// The paths read, as field names.
fn field_paths(text: &str) -> Vec<Vec<String>> {
    crate::paths_read(text)
        .unwrap()
        .into_iter()
        .map(|p| {
            p.into_iter()
                .map(|k| match k {
                    crate::Key::Field(f) => f,
                    crate::Key::Each => "[]".to_string(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn field_named_like_a_forbidden_builtin_is_fine() {
    assert_eq!(eval(".env", json!({"env": 1})).unwrap(), vec![json!(1)]);
    assert_eq!(
        eval(".spec.input", json!({"spec": {"input": 2}})).unwrap(),
        vec![json!(2)]
    );
}

#[test]
fn unbounded_loops_hit_the_budget() {
    for expr in [
        "last(repeat(.))",
        "last(range(1e12))",
        "[range(1e9)]",
        "reduce range(1e9) as $i (.; .)",
        "last(recurse(.))",
        "[.[]?] | until(false; .)",
        "[limit(1e9; repeat(1))] | length",
    ] {
        match eval(expr, json!({"a": 1})) {
            Err(EvalError::Budget { .. }) => {}
            other => panic!("{expr}: {other:?}"),
        }
    }
}

#[test]
fn budget_error_cannot_be_swallowed_by_try() {
    assert!(matches!(
        eval("[try repeat(1) catch 0] | length", json!(null)),
        Err(EvalError::Budget { .. })
    ));
    assert!(matches!(
        eval("[repeat(1)?] | length", json!(null)),
        Err(EvalError::Budget { .. })
    ));
}

#[test]
fn output_cap() {
    let e = Expr::compile(".[]").unwrap();
    let input = to_val(&json!((0..20).collect::<Vec<_>>()));
    let limits = Limits {
        max_outputs: 10,
        ..Limits::default()
    };
    assert!(matches!(
        e.eval(&input, &[], &limits),
        Err(EvalError::Budget { .. })
    ));
}

#[test]
fn runtime_error_message() {
    let e = eval(".a * .b", json!({"a": {}, "b": "x"})).unwrap_err();
    assert!(matches!(e, EvalError::Runtime { .. }));
}

#[test]
fn paths_of_an_iterating_expression() {
    let e = Expr::compile(".spec.replicatedJobs[].template.spec.template").unwrap();
    let doc = to_val(&json!({"spec": {"replicatedJobs": [{"template": {}}, {"template": {}}]}}));
    let p = e.paths(&doc, &[], &Limits::default()).unwrap();
    assert_eq!(
        p,
        vec![
            json!(["spec", "replicatedJobs", 0, "template", "spec", "template"]),
            json!(["spec", "replicatedJobs", 1, "template", "spec", "template"])
        ]
    );
}

#[test]
fn expr_is_send_and_sync() {
    fn is<T: Send + Sync>() {}
    is::<Expr>();
}

#[test]
fn growing_values_hit_the_size_cap() {
    // String doubling and array doubling in every kind of loop: 2^40 bytes would be a terabyte;
    // the cap stops each after ~22 doublings with a budget error.
    for expr in [
        r#"reduce range(40) as $i ("x"; . + .)"#,
        r#"reduce (range(40) | [.]) as [$i] ("x"; . + .) | length"#,
        r#"[foreach range(40) as $i ("x"; . + .)] | length"#,
        r#"[foreach range(40) as $i ("x"; . + .; length)] | last"#,
        r#""x" | until(length > 1e12; . + .)"#,
        r#""x" | last(recurse(. + .))"#,
        r#"[1] | until(false; . + .)"#,
        r#"reduce range(40) as $i ([1]; . + .) | length"#,
    ] {
        match eval(expr, json!(null)) {
            Err(EvalError::Budget { which }) => assert!(
                matches!(which, Exhausted::Size(_) | Exhausted::Steps),
                "{expr}: {which}"
            ),
            other => panic!("{expr}: {other:?}"),
        }
    }
    for text in [
        // A long string built in one operation is refused when it is returned.
        r#""x" * 5000000"#,
        // A repetition count past what memory can address is refused before allocating.
        r#""xy" * 9223372036854775807"#,
    ] {
        let r = eval(text, json!(null));
        assert!(
            matches!(
                r,
                Err(EvalError::Budget {
                    which: Exhausted::Size(_)
                })
            ),
            "{text}: {r:?}"
        );
    }
}

/// Single operations that would build gigabytes or terabytes end with a budget error, before
/// allocating: each was a gap of the loop-only checks (SECURITY.md).
#[test]
fn one_operation_cannot_build_without_bound() {
    let cases = [
        // 10 GB in one `*`.
        (r#""x" * 10000000000"#, json!(null)),
        (r#"10000000000 * "x""#, json!(null)),
        (r#".s * .n"#, json!({"s": "abc", "n": 10_000_000_000_i64})),
        (r#".s *= 10000000000"#, json!({"s": "abc"})),
        // Doubling without a loop: 2^40 bytes written out.
        (&format!(r#""x"{}"#, " | (. + .)".repeat(40)), json!(null)),
        (&format!("[1]{}", " | . += .".repeat(40)), json!(null)),
        // A value that shares structure is a few hundred bytes in memory and 2^40 leaves as
        // text: converting it to a string, to JSON, or returning it is refused.
        (
            &format!("1{} | tojson", " | {a: ., b: .}".repeat(40)),
            json!(null),
        ),
        (
            &format!("1{} | tostring", " | {a: ., b: .}".repeat(40)),
            json!(null),
        ),
        (
            &format!(r#"1{} | "\(.)""#, " | [., .]".repeat(40)),
            json!(null),
        ),
        (
            &format!("1{} | @base64", " | [., .]".repeat(40)),
            json!(null),
        ),
        (&format!("1{}", " | {a: ., b: .}".repeat(40)), json!(null)),
        // Comparing two such values walks every leaf: they cannot be built.
        (
            &format!("(1{0}) as $x | (1{0}) == $x", " | {a: ., b: .}".repeat(40)),
            json!(null),
        ),
        (&format!(".{}", " | (.a, .b) = .".repeat(40)), json!({})),
        // Collecting a cartesian product: 10^12 items.
        (
            "[.[] as $a | .[] as $b | .[] as $c | .[]]",
            json!((0..1000).collect::<Vec<_>>()),
        ),
        // Many values each under the cap: the total is bounded too.
        (r#"[range(100000) | "x" * 4000000] | length"#, json!(null)),
        (
            r#"[limit(100000; repeat("y" * 4000000))] | length"#,
            json!(null),
        ),
    ];
    for (expr, input) in cases {
        match eval(expr, input) {
            Err(EvalError::Budget { which }) => assert!(
                matches!(
                    which,
                    Exhausted::Size(_)
                        | Exhausted::Steps
                        | Exhausted::TotalSize(_)
                        | Exhausted::Time
                ),
                "{expr}: {which}"
            ),
            other => panic!("{expr}: {other:?}"),
        }
    }
    // A builtin that copies its input, 50,000 times: collected, or returned. (Small limits:
    // 64 KiB values, so 4 MiB built in all; the defaults behave alike, 64 times slower.)
    let small = Limits {
        max_len: 64 << 10,
        ..Limits::default()
    };
    let big = json!({"big": "x".repeat(32 << 10)});
    for expr in [
        ".big as $b | [range(50000) | $b | ascii_upcase] | length",
        ".big as $b | [range(50000) | $b | explode | implode] | length",
        "limit(9999; repeat(.big | ascii_upcase))",
    ] {
        let e = Expr::compile(expr).unwrap();
        match e.eval(&to_val(&big), &[], &small) {
            Err(EvalError::Budget { which }) => {
                assert!(matches!(which, Exhausted::TotalSize(_)), "{expr}: {which}")
            }
            other => panic!("{expr}: {:?}", other.map(|v| v.len())),
        }
    }
}

fn plain_jaq(expr: &str, input: serde_json::Value) -> Result<Vec<serde_json::Value>, String> {
    use jaq_core::data::JustLut;
    use jaq_core::load::{Arena, File, Loader};
    type D = JustLut<jaq_json::Val>;
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs::<D>()
        .chain(jaq_std::funs::<D>())
        .chain(jaq_json::funs::<D>());
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(
            &arena,
            File {
                code: expr,
                path: (),
            },
        )
        .map_err(|_| "load".to_string())?;
    let filter = jaq_core::Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|_| "compile".to_string())?;
    let ctx = jaq_core::Ctx::<D>::new(&filter.lut, jaq_core::Vars::new([]));
    filter
        .id
        .run((ctx, to_val(&input)))
        .map(|r| {
            r.map(|v| from_val(&v))
                .map_err(|e| format!("{:?}", e.get_err().ok()))
        })
        .collect()
}

/// The checked operators and conversions answer exactly as plain jaq does.
#[test]
fn checked_operators_keep_their_meaning() {
    let cases = [
        (r#""ab" * 3"#, json!(null)),
        (r#""ab" * 0"#, json!(null)),
        (r#""ab" * -1"#, json!(null)),
        (r#"3 * "ab""#, json!(null)),
        (r#""ab" * 1.5"#, json!(null)),
        ("{a: {b: 1}} * {a: {c: 2}}", json!(null)),
        (r#"{} * "x""#, json!(null)),
        ("[(1, 2) * (10, 20)]", json!(null)),
        ("[(1, 2) + (10, 20)]", json!(null)),
        (".a + .b", json!({"a": [1], "b": [2]})),
        (".a + .b", json!({"a": {"x": 1}, "b": {"x": 2, "y": 3}})),
        (".a + null, null + .a", json!({"a": "x"})),
        (".a + 1", json!({"a": "x"})),
        (".a += 1 | .a *= 2", json!({"a": 1})),
        (r#".a += "y""#, json!({"a": "x"})),
        (".[] += 1", json!([1, 2])),
        (".a *= .b", json!({"a": "x", "b": 3})),
        (r#""\(.) and \(.a)""#, json!({"a": [1, "x"]})),
        (r#""\(1, 2)-\("a", "b")""#, json!(null)),
        (
            "tojson, tostring, (.a | tostring), (.a | tojson)",
            json!({"a": "x"}),
        ),
        (
            r#"@json "v=\(.a)", @base64 "\(.a)", @text "\(.)", @html "<\(.a)>""#,
            json!({"a": "x<"}),
        ),
        (r#".a | join(","), join("")"#, json!({"a": ["x", 1, null]})),
        (".a | add", json!({"a": ["x", "y"]})),
        (".a | add", json!({"a": [[1], [2]]})),
        (
            "[.[] | . * 2], map(. + 1), (to_entries | from_entries)",
            json!([1, 2]),
        ),
        ("(1, 2) as $x | $x + $x", json!(null)),
        (
            "reduce .[] as $x (0; . + $x), [foreach .[] as $x (0; . + $x)]",
            json!([1, 2, 3]),
        ),
        (
            r#"[splits(", *")] | map(ascii_upcase) | join("-")"#,
            json!("a, b,c"),
        ),
        (
            r#"sub("(?<x>b)"; "[\(.x)]"), gsub("a"; "A")"#,
            json!("abcab"),
        ),
        (
            "[paths], [paths(type == \"number\")], (tostream | tojson)?",
            json!({"a": [1, {"b": 2}]}),
        ),
        ("with_entries(.value += 1) | keys", json!({"a": 1, "b": 2})),
        ("limit(3; repeat(1)) * 2", json!(null)),
        (
            r#"[.[] | select(. > 1)] | length, (map(tostring) | join(" "))"#,
            json!([1, 2, 3]),
        ),
        (
            "pick(.a.b), (.a | to_entries), walk(if type == \"number\" then . + 1 end)",
            json!({"a": {"b": 1, "c": [2]}}),
        ),
        ("@sh \"echo \\(.)\", @uri \"q=\\(.)\"", json!("a b'c")),
        ("[range(5)] | .[1:3] + .[3:]", json!(null)),
        ("-(.a) + 1, (.a - 1) * -2", json!({"a": 4})),
        ("def f(x): x + x; f(.a), f(\"s\")", json!({"a": 2})),
        (r#"{(.k + "x"): (.v * 2)}"#, json!({"k": "a", "v": 3})),
        (
            r#". as {a: $x, ("b" + ""): $y} | $x + $y"#,
            json!({"a": 1, "b": 2}),
        ),
        // wlmap's own `fromjson` (it ends at its first error) reads what jaq's reads.
        (
            r#".[] | [fromjson], (try fromjson catch .), [fromjson?], tonumber?"#,
            json!([
                "1 2 3",
                "[1, {\"a\": 2}] \"x\"",
                "1x",
                "-0' @",
                "",
                "7",
                "{"
            ]),
        ),
        ("fromjson", json!(1)),
        // wlmap's own `indices` and `contains`, and the checked `has`, keys and regexes.
        (
            r#"indices("a"), indices("ab"), indices(""), indices("bä"), index("b"), rindex("b")"#,
            json!("aXabab äbäbä ab"),
        ),
        (
            "indices([1, 2, 1]), indices(1), indices([]), indices([1]), .[[1]], .[[]]",
            json!([1, 2, 1, 2, 1]),
        ),
        (r#"tobytes | indices("ab" | tobytes)"#, json!("abab")),
        ("indices(1)", json!("a1")),
        (r#"[indices("a", "b")]"#, json!("abab")),
        (
            r#"contains("b"), contains(["b"]), ([[1, 2], "ab"] | contains([[1], "b"])), inside("xaby")"#,
            json!("ab"),
        ),
        (
            r#"contains({a: [2]}), contains({a: [3]}), contains({b: null}), contains(1), ([1, 1] | contains([1, 1, 1]))"#,
            json!({"a": [1, 2], "c": "x"}),
        ),
        (
            r#"has("a"), has("b"), ([1, 2] | has(0), has(5)), (.[.k])"#,
            json!({"a": 1, "k": "a"}),
        ),
        (
            r#"[.[] | .[[]]?, .[[1]]?]"#,
            json!([null, [1, 1], {"a": 1}]),
        ),
        (
            r#"test("A"; "i"), [match("a"; "g") | .offset], [scan("(a)(b)?")], split(", *"; null), [splits("a")], capture("(?<n>b+)")"#,
            json!("abba, ab,a"),
        ),
        (
            r#"[match("a", "b"; "g", "")] | map(.offset)"#,
            json!("abab"),
        ),
        (r#"test("a"), test(1)"#, json!("a")),
        (r#"test("a")"#, json!(1)),
        (
            "12345678901234567890 * 98765432109876543210, (. * 3 | . * .)",
            json!(4611686018427387904u64),
        ),
    ];
    for (expr, input) in cases {
        let ours = Expr::compile(expr)
            .map_err(|e| e.to_string())
            .and_then(|e| {
                e.eval(&to_val(&input), &[], &Limits::default())
                    .map(|v| v.iter().map(from_val).collect::<Vec<_>>())
                    .map_err(|e| e.to_string())
            });
        let theirs = plain_jaq(expr, input);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{expr}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{expr}: wlmap {ours:?}, jaq {theirs:?}"),
        }
    }
    // A runtime error of the operator is jaq's own message.
    let e = eval(r#"{} * "x""#, json!(null)).unwrap_err();
    assert!(e.to_string().contains("cannot calculate"), "{e}");
}

#[test]
fn wlmap_names_are_reserved() {
    for expr in [
        "__tick",
        "$__which",
        ". as $__l | $__l",
        "def __mul(a; b): 1; 2 * .",
        "label $__x | 1",
    ] {
        let e = Expr::compile(expr).unwrap_err();
        assert!(e.message.contains("reserved"), "{expr}: {}", e.message);
        assert!(expr[e.span.clone()].contains("__"), "{expr}: {:?}", e.span);
    }
    // Fields and keys of that shape are data, not names: still fine.
    let out = eval(r#"{__k: .__v, "__w": 1} | .__k"#, json!({"__v": 2})).unwrap();
    assert_eq!(out, vec![json!(2)]);
}

#[test]
fn a_batch_compiles_its_jaq_program_only_when_needed() {
    let compiled = |e: &Expr| e.program.get().unwrap().is_compiled();
    let obj = to_val(&json!({"spec": {"replicas": 2, "x": "A"}}));
    let null = [to_val(&serde_json::Value::Null)];
    let l = Limits::default();

    // Plain and native expressions only: `finish` defers the program...
    let mut b = Batch::new(&["parent"]);
    let plain = b.add(".spec.replicas").unwrap();
    let native = b.add(".spec.x | ascii_downcase").unwrap();
    b.finish().unwrap();
    assert!(!compiled(&plain));
    assert_eq!(
        native.eval(&obj, &null, &l).unwrap()[0],
        to_val(&json!("a"))
    );
    assert!(!compiled(&native));
    // ...until jaq is asked for (here the reference evaluation), with the same answers.
    assert_eq!(
        native.eval_interpreted(&obj, &null, &l).unwrap(),
        native.eval(&obj, &null, &l).unwrap()
    );
    assert!(compiled(&native) && compiled(&plain));
    assert_eq!(
        plain.eval_interpreted(&obj, &null, &l).unwrap(),
        vec![to_val(&json!(2))]
    );

    // One expression that needs jaq: compiled by `finish`, and its errors reported there.
    let mut b = Batch::new(&[]);
    let first = b.add(".spec.replicas").unwrap();
    b.add("[range(3)]").unwrap();
    b.finish().unwrap();
    assert!(compiled(&first));
    let mut b = Batch::new(&[]);
    b.add(".spec.replicas").unwrap();
    b.add("undefined_fn(1)").unwrap();
    let errs = b.finish().unwrap_err();
    assert_eq!(errs[0].0, 1);
    assert!(
        errs[0].1.message.contains("undefined"),
        "{}",
        errs[0].1.message
    );

    // A single expression behaves the same way.
    assert!(!compiled(&Expr::compile(".a // 1").unwrap()));
    assert!(compiled(&Expr::compile("[range(3)]").unwrap()));
}

#[test]
fn folds_keep_their_meaning_under_the_guard() {
    assert_eq!(
        eval("reduce .[] as $x (0; . + $x)", json!([1, 2, 3])).unwrap(),
        vec![json!(6)]
    );
    assert_eq!(
        eval(
            "[foreach .[] as [$k, $v] (0; . + $v; [$k, .])]",
            json!([["a", 1], ["b", 2]])
        )
        .unwrap(),
        vec![json!([["a", 1], ["b", 3]])]
    );
    assert_eq!(
        eval(r#""\(reduce .[] as $x (""; . + $x))!""#, json!(["a", "b"])).unwrap(),
        vec![json!("ab!")]
    );
    // Errors still point into the text as written.
    let e = Expr::compile("reduce .[] as $x (0; . +)").unwrap_err();
    assert_eq!(e.source_text, "reduce .[] as $x (0; . +)");
}

mod plain_paths {
    use super::*;
    use proptest::prelude::*;

    fn step() -> impl Strategy<Value = String> {
        let base = proptest::sample::select(vec![".a", ".b", "[\"a.b\"]", "[0]", "[2]", "[]"])
            .prop_map(str::to_string);
        (base, any::<bool>()).prop_map(|(s, opt)| if opt { format!("{s}?") } else { s })
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(step(), 0..5).prop_map(|steps| {
            let mut t = String::from(".");
            for (i, s) in steps.iter().enumerate() {
                // `.` then `a` (not `..a`) for the first step
                if i == 0 && s.starts_with('.') {
                    t.push_str(&s[1..]);
                } else {
                    t.push_str(s);
                }
            }
            t
        })
    }

    /// A plain path or a pipe of them (`.a | .[] | .b`).
    fn piped() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(path(), 1..4),
            proptest::sample::select(&[" | ", "|", "  |\n  "][..]),
        )
            .prop_map(|(paths, sep)| paths.join(sep))
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(json!(null)),
            Just(json!(true)),
            any::<i8>().prop_map(|n| json!(n)),
            // jaq prints these differently from serde_json (`8e89`, not `8e+89`): errors that
            // show them must still be jaq's (found by the `expression` fuzz target).
            Just(json!(8e89)),
            Just(json!(1.5e-7)),
            "[a-z]{0,3}".prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("a".to_string()),
                        Just("b".to_string()),
                        Just("a.b".to_string())
                    ],
                    inner,
                    0..3
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn plain_paths_answer_like_jaq(p in piped(), v in value()) {
            let fast = Expr::compile(&p).unwrap();
            prop_assert!(fast.plain.is_some(), "{p} should be a plain path");
            let input = to_val(&v);
            let l = Limits::default();
            let a = fast.eval(&input, &[], &l).map(|o| o.iter().map(from_val).collect::<Vec<_>>());
            let b = fast.eval_interpreted(&input, &[], &l).map(|o| o.iter().map(from_val).collect::<Vec<_>>());
            prop_assert_eq!(&a, &b, "{} on {}", p, v); // outputs and error messages alike
            let converted = OnceLock::new();
            let c = fast.evaluate(Input::json(&v, &converted), &[], &l)
                .map(|o| o.iter().map(|x| x.to_json().into_owned()).collect::<Vec<_>>());
            prop_assert_eq!(&c, &b, "on JSON: {} on {}", p, v);
            let refs = fast.eval_json_refs(&v, &l).expect("plain")
                .map(|o| o.into_iter().cloned().collect::<Vec<_>>());
            prop_assert_eq!(&refs, &b, "refs: {} on {}", p, v);
            let pj = fast.paths_json(&v, &l).expect("plain");
            let pv = fast.paths(&input, &[], &l);
            prop_assert_eq!(&pj, &pv, "paths: {} on {}", p, v);
        }
    }

    #[test]
    fn what_is_and_is_not_a_plain_path() {
        for p in [
            ".",
            ".a",
            ".status.conditions",
            r#".metadata.labels["app.kubernetes.io/name"]"#,
            ".spec.items[]?",
            ".a[0].b?",
            ".a | .b",
            ".spec.services | .[] | .labels",
            r#".["a|b"] | .c"#,
        ] {
            assert!(crate::plain::parse(p).is_some(), "{p}");
        }
        for p in [
            ".a | .b // 1",
            ".a |= 1",
            ".a |",
            "| .a",
            ".a | $x",
            ".a // 1",
            "..",
            ".a.",
            r#".a["x\"y"]"#,
            ".and",
            ".a[-1]",
            ".a.[\"b\"]",
            "$x.a",
            ".a b",
            r#".["a"]"#.replace('"', "'").as_str(),
        ] {
            assert!(crate::plain::parse(p).is_none(), "{p}");
        }
    }
}

/// Compile `text` and evaluate it with `eval` on a thread of this stack size: the number of
/// outputs, or the error's message. A stack overflow aborts the test process.
fn outputs_on_a_thread(
    stack: usize,
    text: String,
    eval: fn(&Expr) -> Result<Vec<Val>, EvalError>,
) -> Result<usize, String> {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let e = Expr::compile(&text).map_err(|e| e.to_string())?;
            eval(&e).map(|out| out.len()).map_err(|e| e.to_string())
        })
        .unwrap()
        .join()
        .expect("no overflow")
}

/// Syntax nested deeper than `MAX_SYNTAX_DEPTH` is refused before anything recursive reads
/// it: a product of 421 factors in a definition overflowed the stack of the AddressSanitizer
/// build (found by replaying the `definition` corpus), and one of 1,000 that of a
/// 2 MiB thread in a release build. Each shape at the bound compiles and evaluates on a 2 MiB
/// thread (a Tokio worker's stack) in a release build (`cargo test --release`), on 16 MiB in a
/// debug build, whose frames are several times bigger; past it, compiling is an error with the
/// place.
#[test]
fn syntax_depth_is_bounded_before_the_stack_is() {
    let n = MAX_SYNTAX_DEPTH;
    let stack = if cfg!(debug_assertions) {
        16 << 20
    } else {
        2 << 20
    };
    let at_the_bound = [
        vec!["2"; n].join("*"),
        format!("{}2{}", "(".repeat(n - 1), ")".repeat(n - 1)),
        format!("{}2{}", "[".repeat(n - 1), "]".repeat(n - 1)),
        format!("{}1{}", "{a:".repeat(n - 1), "}".repeat(n - 1)),
        format!("{}1{}", "\"\\(".repeat(n - 1), ")\"".repeat(n - 1)),
        format!("{}1", "-".repeat(n - 1)),
        format!(
            "{}1{}",
            "if . then ".repeat(n / 3),
            " else 0 end".repeat(n / 3)
        ),
    ];
    for text in at_the_bound {
        let shown = text.chars().take(20).collect::<String>();
        let ok = outputs_on_a_thread(stack, text, |e| e.eval(&Val::Null, &[], &Limits::default()));
        assert_eq!(ok, Ok(1), "{shown}…");
    }
    for text in [
        vec!["2"; n + 2].join("*"),
        vec!["2"; 1000].join("*"),
        format!("{}2{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("[{}]", vec!["1"; 200].join(",")),
    ] {
        let e = Expr::compile(&text).unwrap_err();
        assert!(e.message.contains("nests too deeply"), "{e}");
        assert!(
            e.span.start <= 100_000 && e.span.end <= text.len(),
            "{:?}",
            e.span
        );
    }
}

/// Values nested deeper than `MAX_DEPTH` are refused when built: dropping a value nested
/// 100,000 deep overflowed the stack and aborted the process (found by this test).
#[test]
fn nesting_is_bounded() {
    let deep_json = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases = [
        ("reduce range(100000) as $i (1; [.]) | length", json!(null)),
        (
            "reduce range(100000) as $i (1; {a: .}) | length",
            json!(null),
        ),
        ("[limit(100000; 1 | recurse([.]))] | length", json!(null)),
        ("last(limit(100000; 1 | recurse({a: .})))", json!(null)),
        (
            "null | setpath([range(20000) | tostring]; 1) | length",
            json!(null),
        ),
        (
            "null | getpath([range(20000) | 0]) = 1 | length",
            json!(null),
        ),
        ("reduce range(20000) as $i (.; .a = .)", json!({})),
        (".s | fromjson | length", json!({ "s": deep_json })),
        (r#".s | tonumber"#, json!({ "s": deep_json })),
    ];
    // Only the structural caps may end these, not the deadline of a busy machine.
    let limits = Limits {
        timeout: Duration::from_secs(3600),
        ..Limits::default()
    };
    for (expr, input) in cases {
        let e = Expr::compile(expr).expect("compiles");
        match e.eval(&to_val(&input), &[], &limits) {
            Err(e) => assert!(
                ["depth cap", "deeper than", "step budget", "size cap"]
                    .iter()
                    .any(|w| e.to_string().contains(w)),
                "{expr}: {e}"
            ),
            other => panic!("{expr}: {other:?}"),
        }
    }
    // Nesting that real objects have is fine, and paths of ordinary length still work.
    assert_eq!(
        eval("reduce range(100) as $i (1; [.]) | flatten", json!(null)).unwrap(),
        vec![json!([1])]
    );
    assert_eq!(
        eval(r#"setpath(["a", "b", 0]; 1)"#, json!({"a": {"b": [0]}})).unwrap(),
        vec![json!({"a": {"b": [1]}})]
    );
    assert_eq!(
        eval(r#".s | fromjson"#, json!({"s": "[[1], {\"a\": \"[[[\"}]"})).unwrap(),
        vec![json!([[1], {"a": "[[["}])]
    );
}

mod conversion {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(json!(null)),
            any::<bool>().prop_map(|b| json!(b)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            ".{0,8}".prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(".{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The direct conversion gives what jaq-json's serde support gives, key order and
        /// number kinds included (checked through jaq's own printer).
        #[test]
        fn to_val_is_jaqs_conversion(v in value()) {
            let (a, b) = (to_val(&v), crate::convert::to_val_by_serde(&v));
            prop_assert_eq!(a.to_string(), b.to_string());
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(from_val(&a), from_val(&b));
        }
    }
}

/// Found by the `expression` fuzz target (differential check): a plain path's error printed
/// the number the way serde_json does (`8e+89`), jaq prints `8e89`.
#[test]
fn plain_path_errors_print_numbers_like_jaq() {
    let e = Expr::compile(".e88gmtim2800").unwrap();
    assert_eq!(e.evaluator(), crate::Evaluator::Plain);
    let input = json!(8e89);
    let l = Limits::default();
    let want = Err(EvalError::Runtime {
        message: "cannot index 8e89 with \"e88gmtim2800\"".into(),
    });
    assert_eq!(e.eval(&to_val(&input), &[], &l).map(|_| ()), want);
    assert_eq!(
        e.eval_interpreted(&to_val(&input), &[], &l).map(|_| ()),
        want
    );
    let converted = OnceLock::new();
    assert_eq!(
        e.evaluate(Input::json(&input, &converted), &[], &l)
            .map(|_| ()),
        want
    );
}

/// Work that makes values and throws them away (`select(false)`, `//`, `empty`, `?`) between
/// two outputs: products of `,`, nested `.[]` and `..`. Each value those terms make spends a
/// step, so the step budget (deterministic, unlike the deadline) ends each of these, in jaq
/// and in the native evaluator alike.
#[test]
fn swallowed_products_hit_the_step_budget() {
    let pairs = vec!["(1, 2)"; 40].join(" | ");
    let cases = [
        format!("{pairs} | select(false)"),
        format!("({pairs} | null) // 1"),
        format!("[{pairs} | empty]"),
        format!("first({pairs} | select(false)), 1"),
        ".[] as $a | .[] as $b | .[] as $c | .[] | select(false)".to_string(),
        "[.. | .. | .. | .. | .. | select(false)]".to_string(),
        "path(.[] as $a | .[] as $b | .[] | select(false))".to_string(),
        "(.[] as $a | .[] as $b | .[] | select(false)) |= 1".to_string(),
    ];
    let input = to_val(&json!(
        (0..1000).map(|i| json!([i, [i, [i]]])).collect::<Vec<_>>()
    ));
    let limits = Limits {
        timeout: Duration::from_secs(3600), // only the step budget may end these
        ..Limits::default()
    };
    for expr in &cases {
        let e = Expr::compile(expr).expect("compiles");
        for (evaluator, r) in [
            (e.evaluator(), e.eval(&input, &[], &limits)),
            (Evaluator::Jaq, e.eval_interpreted(&input, &[], &limits)),
        ] {
            match r {
                Err(EvalError::Budget { which }) => assert_eq!(which, Exhausted::Steps, "{expr}"),
                other => panic!("{expr} ({evaluator}): {other:?}"),
            }
        }
    }
}

/// The `expression` fuzz target's budgets, with the deadline an hour away: only the step
/// budget may end the fuzz inputs replayed here, whatever the machine's speed.
fn fuzz_limits() -> Limits {
    Limits {
        max_steps: 5_000,
        max_outputs: 1_000,
        timeout: Duration::from_secs(3600),
        max_len: 1 << 20,
    }
}

fn on_step_budget<T>(r: &Result<T, EvalError>) -> bool {
    matches!(
        r,
        Err(EvalError::Budget {
            which: Exhausted::Steps
        })
    )
}

/// `.a[f][g][h]...` visits every combination of the indices' values: the product, not the
/// values, is what grows (found by fuzzing: the native evaluator walked 30^6
/// combinations of a path's indices with no step spent).
#[test]
fn index_products_hit_the_step_budget() {
    let idx = format!(
        "[{}]",
        (0..30)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let six = idx.repeat(6);
    // (expression, whether it is a path expression)
    let cases = [
        (format!(".a{six} | select(false)"), true),
        (format!("[.a{six}.b | select(false)]"), false),
        (format!("(.a{six} | select(false)), .b"), true),
        (format!("path(.a{six} | select(false))"), false),
    ];
    let limits = Limits {
        timeout: Duration::from_secs(3600), // only the step budget may end these
        ..Limits::default()
    };
    for (expr, is_path) in &cases {
        let e = Expr::compile(expr).expect("compiles");
        let short = &expr[expr.len() - 30..];
        let mut runs = vec![
            (e.evaluator().to_string(), e.eval(&Val::Null, &[], &limits)),
            (
                "jaq".to_string(),
                e.eval_interpreted(&Val::Null, &[], &limits),
            ),
        ];
        if *is_path {
            runs.push((
                "paths".to_string(),
                e.paths(&Val::Null, &[], &limits).map(|_| vec![]),
            ));
        }
        for (evaluator, r) in runs {
            match r {
                Err(EvalError::Budget { which }) => assert_eq!(which, Exhausted::Steps, "{short}"),
                other => panic!("…{short} ({evaluator}): {other:?}"),
            }
        }
        if let Some(r) = e.paths_json(&serde_json::Value::Null, &limits) {
            assert!(on_step_budget(&r), "…{short} (paths_json): {r:?}");
        }
    }
}

/// The fuzz input that found it (`expression` target: more than a minute under a
/// 200 ms deadline). Its second line, the input, is not JSON: the target reads it as null.
#[test]
fn fuzz_found_index_products_end_on_the_step_budget() {
    let (e, limits) = fuzz_input(include_str!("../testdata/index-products.fuzz"));
    assert_ne!(
        e.evaluator(),
        crate::Evaluator::Jaq,
        "the native evaluator is the one under test"
    );
    for r in [
        e.eval(&Val::Null, &[Val::Null], &limits),
        e.eval_interpreted(&Val::Null, &[Val::Null], &limits),
    ] {
        assert!(on_step_budget(&r), "{r:?}");
    }
}

/// An `expression` fuzz input (`EXPR\nJSON`, the JSON ignored: in these it is not JSON, so the
/// target read null), compiled as the target compiles it, with the target's budgets.
fn fuzz_input(text: &str) -> (Expr, Limits) {
    // As the target reads it: without a second line, the input is null.
    let (expr, _) = text.split_once('\n').unwrap_or((text, "null"));
    let e = Expr::compile_with_vars(expr, &["parentInstance"]).expect("compiles");
    (e, fuzz_limits())
}

/// The fuzz input that found it (`expression` target, a 14 s run under a 200 ms deadline).
/// Its syntax nests about 500 levels deep, so it is refused when compiled
/// (`syntax_depth_is_bounded_before_the_stack_is`); `swallowed_products_hit_the_step_budget`
/// keeps the step budget's case.
#[test]
fn fuzz_found_swallowed_products_end_on_the_step_budget() {
    let text = include_str!("../testdata/swallowed-products.fuzz");
    let e = Expr::compile_with_vars(text, &["parentInstance"]).unwrap_err();
    assert!(e.message.contains("nests too deeply"), "{e}");
}

/// The fuzz input that found it (`expression` target: more than two minutes under a
/// 200 ms deadline): `tonumber` on text that is not a number, its errors swallowed by `- empty`.
/// jaq's `fromjson` answers the same error again and again on text it cannot read. Its second
/// line, the input, is not JSON: the target reads it as null.
#[test]
fn fuzz_found_endless_fromjson_errors_end() {
    let (e, limits) = fuzz_input(include_str!("../testdata/endless-fromjson-errors.fuzz"));
    for r in [
        e.eval(&Val::Null, &[Val::Null], &limits),
        e.eval_interpreted(&Val::Null, &[Val::Null], &limits),
    ] {
        assert!(matches!(&r, Ok(v) if v.is_empty()), "{r:?}");
    }
}

/// `fromjson` ends at its first error and spends a step on every value it reads: neither a
/// swallowed error nor a long stream of values runs without the budget.
#[test]
fn fromjson_ends_at_its_first_error_and_spends_steps() {
    let limits = fuzz_limits();
    let run = |expr: &str, input: serde_json::Value| {
        let e = Expr::compile(expr).expect("compiles");
        e.eval(&to_val(&input), &[], &limits)
            .map(|v| v.iter().map(from_val).collect::<Vec<_>>())
    };
    for expr in [
        "fromjson - empty",
        "tonumber - empty",
        "[fromjson] - empty",
        "(fromjson, 1) - empty",
        "first(fromjson - empty, 2)",
    ] {
        let r = run(expr, json!("1x"));
        assert!(r.is_ok(), "`{expr}`: {r:?}");
    }
    assert_eq!(
        run("[fromjson?]", json!("1 2 x 3")).unwrap(),
        [json!([1, 2])]
    );
    let message = run("fromjson", json!("1x")).unwrap_err().to_string();
    assert!(
        message.contains(r#"cannot parse \"1x\" as JSON"#),
        "{message}"
    );
    // 10,000 values read from one string, each a step: past the 5,000 steps.
    let ones = "1 ".repeat(10_000);
    let r = run("fromjson | select(false)", json!(ones));
    assert!(on_step_budget(&r), "{r:?}");
    assert_eq!(
        run("[fromjson] | length", json!("1 ".repeat(100))).unwrap(),
        [json!(100)]
    );
}

/// Ticks are `.` in path mode and in updates: the values and paths these make are unchanged.
#[test]
fn ticked_terms_keep_paths_and_updates() {
    let input = json!({"a": [1, {"b": 2}], "c": 3});
    for (expr, want) in [
        (
            "[paths]",
            json!([["a"], ["a", 0], ["a", 1], ["a", 1, "b"], ["c"]]),
        ),
        ("[path(.a[], .c)]", json!([["a", 0], ["a", 1], ["c"]])),
        ("[path(..)] | length", json!(6)),
        ("(.a[0], .c) |= . + 1", json!({"a": [2, {"b": 2}], "c": 4})),
        (
            "del(.a[] | select(. == 1))",
            json!({"a": [{"b": 2}], "c": 3}),
        ),
        (
            "(.. | numbers) |= . * 10",
            json!({"a": [10, {"b": 20}], "c": 30}),
        ),
        ("to_entries | map(.key)", json!(["a", "c"])),
    ] {
        let e = Expr::compile(expr).expect("compiles");
        let got = e.eval_interpreted(&to_val(&input), &[], &Limits::default());
        assert_eq!(
            got.map(|v| v.iter().map(from_val).collect::<Vec<_>>()),
            Ok(vec![want]),
            "{expr}"
        );
    }
}

/// One builtin call cannot outrun the budget (`costed.rs`): each of these ran for seconds or
/// minutes, or took a gigabyte, in one call on a string of 0.4-1 MB under a 200 ms deadline, where the
/// budget was only consulted between values. Each now ends on the step budget or is refused;
/// the same builtins on ordinary values keep their answers (above and below).
#[test]
fn one_builtin_call_cannot_outrun_the_budget() {
    let limits = fuzz_limits();
    let run = |expr: &str| {
        let e = Expr::compile(expr).expect("compiles");
        e.eval(&Val::Null, &[], &limits)
            .map(|v| v.iter().map(from_val).collect::<Vec<_>>())
    };
    for expr in [
        // 14 s: every window of 500,000 bytes compared.
        r#"("a" * 1000000) | indices("a" * 500000) | length"#,
        // 29 s and more than 30 s: a regex program of 1,500 and 2,000 units on 10^6 bytes.
        r#""a" * 1000000 | test("[a-z]{100}[0-9]")"#,
        r#""a" * 1000000 | test("(a|b){200}x")"#,
        // 6 s and 1 GB, 7 s and 1 GB: a match object for every position.
        r#""a" * 1000000 | [match(""; "g")] | length"#,
        r#""a" * 1000000 | gsub("a"; "bb") | length"#,
        r#""a" * 1000000 | [scan(".")] | length"#,
        // 2,000 elements against 10^6 that never match: 2 * 10^9 comparisons.
        r#"[range(2000)] as $r | "a" * 1000000 | explode | contains($r)"#,
    ] {
        let r = run(expr);
        assert!(on_step_budget(&r), "`{expr}`: {r:?}");
    }
    // More than 30 s: thirty squarings of a 20-digit integer, its length doubling each time.
    let r = run("reduce range(30) as $i (12345678901234567890; . * .) | tostring | length");
    assert!(
        matches!(
            &r,
            Err(EvalError::Budget {
                which: Exhausted::NumberSize
            })
        ),
        "{r:?}"
    );
    // Products up to the cap keep jaq's exact answer.
    assert_eq!(
        run("reduce range(10) as $i (3; . * .) | tostring | length").unwrap(),
        [json!(489)]
    );
    // Minutes: every window of the array compared with a key of 200,000 elements.
    for expr in [
        r#""a" * 400000 | explode | .[.[:200000]] | length"#,
        r#""a" * 400000 | explode | has(.[:2])"#,
        r#"[1, 2] as $k | [1, 2, 1, 2] | getpath([$k])"#,
    ] {
        let message = run(expr).unwrap_err().to_string();
        assert!(
            message.contains("an array as an index"),
            "`{expr}`: {message}"
        );
    }
    // The same builtins on a label-sized string cost a few steps.
    let label = r#""worker-0-abc" * 5"#;
    for (expr, want) in [
        (
            format!(r#"{label} | test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")"#),
            json!(true),
        ),
        (
            format!(r#"{label} | [match("-"; "g")] | length"#),
            json!(10),
        ),
        (format!(r#"{label} | indices("abc") | length"#), json!(5)),
        (format!(r#"{label} | contains("0-abcw")"#), json!(true)),
        (r#""a" * 1000 | test("a{3}")"#.to_string(), json!(true)),
    ] {
        assert_eq!(run(&expr).unwrap(), [want], "{expr}");
    }
}

proptest::proptest! {
    // Each case compiles five expressions in both: 64 cases cover the three-letter alphabet.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// `indices` and `contains` are jaq's on strings with multi-byte characters and on arrays
    /// (overlapping occurrences, empty needles, needles longer than the text).
    #[test]
    fn indices_and_contains_are_jaqs(
        hay in proptest::collection::vec(proptest::sample::select(vec!["a", "ä", "b"]), 0..12),
        needle in proptest::collection::vec(proptest::sample::select(vec!["a", "ä", "b"]), 0..4),
    ) {
        let (h, n) = (hay.concat(), needle.concat());
        let arr = |v: &Vec<&str>| serde_json::to_string(v).unwrap();
        for (expr, input) in [
            (format!("indices({})", json!(n)), json!(h)),
            (format!("contains({})", json!(n)), json!(h)),
            (format!("indices({})", arr(&needle)), json!(hay)),
            (format!("contains({})", arr(&needle)), json!(hay)),
            (format!("tobytes | indices({} | tobytes)", json!(n)), json!(h)),
        ] {
            let ours = eval(&expr, input.clone()).map_err(|e| e.to_string());
            let theirs = plain_jaq(&expr, input);
            proptest::prop_assert_eq!(ours.ok(), theirs.ok(), "{}", expr);
        }
    }
}

/// The fuzz input that found it (`expression` target: 2.2 s under a 200 ms deadline
/// with 1 step of budget, all of it before the first step): indices nested in indices, which
/// jaq builds again for every combination. Building a computed index now spends a step.
#[test]
fn fuzz_found_unticked_index_builds_end_on_the_step_budget() {
    let (e, limits) = fuzz_input(include_str!("../testdata/unticked-index-builds.fuzz"));
    let limits = Limits {
        max_steps: 1_000,
        ..limits
    };
    let r = e.eval(&Val::Null, &[Val::Null], &limits);
    assert!(on_step_budget(&r), "{r:?}");
    // The family it belongs to: 20 levels deep, 3^20 builds before.
    let mut nested = ".a".to_string();
    for _ in 0..20 {
        nested = format!(".a[{nested}, .b:.c, .d]");
    }
    let e = Expr::compile(&nested).expect("compiles");
    let r = e.eval(&Val::Null, &[], &limits);
    assert!(on_step_budget(&r), "{r:?}");
}

/// A spent budget is reported, whatever catches it (`try`, `?`, `//`, `first`): it is a halt
/// that ends the evaluation at once; the loop reports it either way.
#[test]
fn a_spent_budget_is_not_caught() {
    let limits = Limits {
        max_steps: 100,
        ..Limits::default()
    };
    for expr in [
        "[range(1000)] | length",
        "[try (range(1000) | tostring) catch 0] | length",
        "first(range(1000) | select(false))?, 1",
        "(last(range(1000)) // 1), 2",
        "[.[]?, (range(1000) | [.]?)] | length",
    ] {
        let e = Expr::compile(expr).expect("compiles");
        let r = e.eval(&Val::Null, &[], &limits);
        assert!(on_step_budget(&r), "`{expr}`: {r:?}");
    }
}

/// A string is a chain of `+` in jaq, a link per part (text, escaped character,
/// interpolation), evaluated recursively: a 3.6 KB string of escapes overflowed the 8 MiB
/// stack of the AddressSanitizer build (found by the `expression` target; it needed 0.5 to
/// 1 MiB in a release build). Strings count towards the syntax depth: one at the bound
/// evaluates through jaq on a 2 MiB thread in a release build (16 MiB in a debug build);
/// longer ones are refused.
#[test]
fn long_strings_count_towards_the_syntax_depth() {
    let stack = if cfg!(debug_assertions) {
        16 << 20
    } else {
        2 << 20
    };
    // Two per escape, and one for the `|` after the string.
    let escapes = MAX_SYNTAX_DEPTH / 2 - 1;
    for text in [
        format!("\"{}\" | length", "a\\n".repeat(escapes)),
        format!("\"{}\" | length", "\\(1)".repeat(escapes)),
    ] {
        let shown: String = text.chars().take(40).collect();
        let ok = outputs_on_a_thread(stack, text, |e| {
            e.eval_interpreted(&Val::Null, &[], &Limits::default())
        });
        assert_eq!(ok, Ok(1), "{shown}…");
    }
    for text in [
        format!("\"{}\"", "a\\n".repeat(escapes + 2)),
        format!("\"{}\"", "\\\\".repeat(2_000)),
        format!("\"{}\"", "\\(1)".repeat(2_000)),
        format!(
            "(.spec // \"{}\") | tonumber",
            "-e1\\\\=\\\\\\u0000".repeat(300)
        ),
    ] {
        let e = Expr::compile(&text).unwrap_err();
        assert!(e.message.contains("nests too deeply"), "{e}");
    }
    // Short strings with a few escapes, as definitions write them, compile as before.
    assert!(Expr::compile(r#"test("^(\\d+)-(\\d+)$")"#).is_ok());
}

/// The fuzz input that found it (`expression` target, a new input replayed under
/// AddressSanitizer): a 3.6 KB string of escapes, a chain of hundreds of `+` in jaq,
/// overflowed the 8 MiB stack. It is refused when compiled
/// (`long_strings_count_towards_the_syntax_depth`).
#[test]
fn fuzz_found_a_long_string_of_escapes_is_refused_when_compiled() {
    let text = include_str!("../testdata/long-string-of-escapes.fuzz");
    let (expr, _) = text.split_once('\n').unwrap_or((text, "null"));
    let e = Expr::compile_with_vars(expr, &["parentInstance"]).unwrap_err();
    assert!(e.message.contains("nests too deeply"), "{e}");
}
