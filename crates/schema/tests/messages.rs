//! Every class of decoding error reaches the user as `FILE:LINE:COLUMN: problem` (or `FILE:
//! problem` for the file as a whole), in wlmap's words: no advice meant for the programmer of
//! a library (`set DuplicateKeyPolicy in Options`, `use Option<String>`), no Rust type names.

/// Words that only a library's developer-facing message would hold.
const LIBRARY_WORDS: &[&str] = &[
    "Options",
    "Policy",
    "Option<",
    "String>",
    "serde",
    "saphyr",
    "Cow<",
    "&str",
    "BudgetBreach",
    "{ ",
];

fn check(what: &str, err: &wlmap_schema::Error, file: &str, line: Option<u64>, problem: &str) {
    let text = err.to_string();
    let loc = err.location().expect("a location");
    assert_eq!(loc.file, file, "{what}: {text}");
    if let Some(line) = line {
        assert_eq!(loc.line, line, "{what}: {text}");
        assert!(
            text.starts_with(&format!("{file}:{line}:")),
            "{what}: {text}"
        );
    } else {
        assert!(text.starts_with(&format!("{file}:")), "{what}: {text}");
    }
    assert!(
        text.contains(problem),
        "{what}: {text:?} does not say {problem:?}"
    );
    for w in LIBRARY_WORDS {
        assert!(!text.contains(w), "{what}: {text:?} holds {w:?}");
    }
    assert_eq!(text.lines().count(), 1, "{what}: one line: {text:?}");
}

const KARTA_HEAD: &str = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\n";

#[test]
fn every_definition_decoding_error_names_the_file_line_and_problem() {
    let cases: &[(&str, String, Option<u64>, &str)] = &[
        ("syntax", "kind: [\n".into(), Some(1), "expected string scalar"),
        ("indentation", "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata:\n  name: x\n    labels: {}\n".into(), Some(5), "mapping values"),
        (
            "unknown field",
            format!("{KARTA_HEAD}spec:\n  structureDefinition:\n    rootComponent: {{name: x, ownerName: y}}\n"),
            Some(6),
            "ownerName",
        ),
        (
            "wrong type",
            format!("{KARTA_HEAD}spec:\n  structureDefinition:\n    rootComponent: {{name: [1]}}\n"),
            Some(6),
            "expected string scalar",
        ),
        (
            "repeated key",
            format!("{KARTA_HEAD}spec:\n  structureDefinition:\n    rootComponent: {{name: x}}\n  structureDefinition: {{}}\n"),
            Some(7),
            "duplicate mapping key",
        ),
        ("unknown anchor", format!("{KARTA_HEAD}spec: *nowhere\n"), Some(4), "unknown value"),
        (
            "not a definition",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {structureDefinition: {rootComponent: {name: p}}}\n".into(),
            Some(1),
            "not a definition",
        ),
        ("JSON syntax", "{\"kind\": \n".into(), Some(2), "EOF"),
    ];
    for (what, text, line, problem) in cases {
        let err = wlmap_schema::decode(text, "def.yaml").expect_err(what);
        check(what, &err, "def.yaml", *line, problem);
    }
    let bomb = format!(
        "{KARTA_HEAD}a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
    );
    let err = wlmap_schema::decode(&bomb, "bomb.yaml").expect_err("alias bomb");
    let text = err.to_string();
    assert!(text.starts_with("bomb.yaml:"), "{text}");
    for w in LIBRARY_WORDS {
        assert!(!text.contains(w), "alias bomb: {text:?} holds {w:?}");
    }
    let one =
        format!("{KARTA_HEAD}spec: {{structureDefinition: {{rootComponent: {{name: x}}}}}}\n");
    let err = wlmap_schema::decode_one(&format!("{one}---\n{one}"), "two.yaml")
        .expect_err("two definitions");
    check(
        "two definitions",
        &err,
        "two.yaml",
        Some(1),
        "exactly one definition",
    );
}

#[test]
fn every_object_decoding_error_names_the_file_line_and_problem() {
    let cases: &[(&str, &str, Option<u64>, &str)] = &[
        (
            "syntax",
            "kind: Pod\nmetadata: {name: [\n",
            Some(2),
            "unclosed bracket",
        ),
        (
            "unknown anchor",
            "kind: Pod\nspec: *nowhere\n",
            Some(2),
            "unknown value",
        ),
        ("not an object", "- 3\n", None, "not a Kubernetes object"),
        (
            "scalar document",
            "kind: Pod\n---\n3\n",
            None,
            "document 2 is not an object",
        ),
        (
            "JSON syntax",
            "{\"kind\": \"Pod\",,}",
            Some(1),
            "key must be a string",
        ),
    ];
    for (what, text, line, problem) in cases {
        let err = wlmap_schema::decode_objects(text, "snap.yaml").expect_err(what);
        check(what, &err, "snap.yaml", *line, problem);
    }
    // An alias bomb (nine levels of nine) and nesting too deep break the reading budget.
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10u8 {
        let (prev, cur) = ((b'a' + i - 1) as char, (b'a' + i) as char);
        bomb.push_str(&format!("{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    bomb.push_str("kind: Pod\n");
    let deep = format!(
        "kind: Pod\nx: {}1{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    for (what, text, problem) in [
        (
            "alias bomb",
            bomb,
            "over the reading budget at 250001 nodes",
        ),
        ("deep nesting", deep, "recursion limit exceeded"),
    ] {
        let err = wlmap_schema::decode_objects(&text, "snap.yaml").expect_err(what);
        check(what, &err, "snap.yaml", None, problem);
    }
}

/// kubectl reads a repeated key (the API server's field validation only warns of it); so
/// does wlmap, keeping the later value as Go's YAML readers do, and naming every repeat.
#[test]
fn a_repeated_key_in_a_manifest_is_read_as_kubectl_reads_it() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: first\n  labels: {app: a, app: b}\n  name: second\n---\nkind: Job\nmetadata: {name: j}\n";
    let (objects, repeated) = wlmap_schema::decode_objects_warned(text, "m.yaml").unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["metadata"]["name"], "second");
    assert_eq!(objects[0]["metadata"]["labels"]["app"], "b");
    let said: Vec<String> = repeated.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        said,
        [
            "m.yaml:5:20: key \"app\" is repeated; the later value is used",
            "m.yaml:6:3: key \"name\" is repeated; the later value is used",
        ]
    );
    let (_, none) = wlmap_schema::decode_objects_warned("kind: Pod\n", "m.yaml").unwrap();
    assert!(none.is_empty());
}
