//! Definition text → strict decode (the fast YAML reader checked against serde-saphyr) and
//! the compatible decode (unknown fields dropped; checked against the strict one) →
//! structural validation → compile of every expression.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The fast reader of plain YAML answers like serde-saphyr, or leaves the text to it.
    let decoded = wlmap_schema::decode(text, "fuzz.yaml");
    match (&decoded, wlmap_schema::decode_with_saphyr(text, "fuzz.yaml")) {
        (Ok(fast), Ok(slow)) => assert_eq!(fast, &slow, "fast YAML reader differs"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("fast YAML reader differs: {a:?} vs {b:?}"),
    }
    // The compatible reading is the strict one wherever that succeeds; where it drops fields,
    // what is left is a definition the strict decoder takes back unchanged.
    let kartas = match (decoded, wlmap_schema::decode_compatible(text, "fuzz.yaml")) {
        (Ok(strict), Ok(c)) => {
            assert_eq!(strict, c.kartas, "compatible decode differs");
            assert!(c.ignored.is_empty(), "{:?}", c.ignored);
            strict
        }
        (Err(_), Ok(c)) => {
            assert!(!c.ignored.is_empty(), "refused strictly, nothing ignored");
            for k in &c.kartas {
                let json = serde_json::to_string(k).expect("serialize");
                let back = wlmap_schema::decode_one(&json, "back.json").expect("strict");
                assert_eq!(&back, k, "pruned definition does not read back");
            }
            c.kartas
        }
        (Ok(_), Err(e)) => panic!("strict decode took what the compatible one refused: {e}"),
        (Err(_), Err(_)) => return,
    };
    let source = wlmap_schema::Source {
        file: "fuzz.yaml",
        text,
    };
    for k in kartas {
        let _ = wlmap_schema::validate(&k);
        let _ = wlmap_engine::Definition::check(&k, Some(&source));
        if let Ok(mut d) = wlmap_engine::Definition::compile(k, wlmap_engine::Origin::File) {
            d.set_limits(wlmap_fuzz::limits());
            // A definition that compiles is exercised on an empty object of its own kind.
            let gvk = d.root_gvk();
            let api = if gvk.group.is_empty() {
                gvk.version.clone()
            } else {
                format!("{}/{}", gvk.group, gvk.version)
            };
            let root = wlmap_engine::Object::new(serde_json::json!({
                "apiVersion": api, "kind": gvk.kind,
                "metadata": {"name": "w", "namespace": "ns", "uid": "u"}}));
            wlmap_fuzz::exercise(&d, root, &[]);
        }
    }
});
