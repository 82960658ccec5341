//! [`wlmap_expr::footprint`] is what the inventory trusts to skip placing a pod again: when it
//! says an expression reads only some paths, the expression must answer the same on an object
//! cut down to those paths. Checked for every expression of every catalog definition on every
//! object of its fixtures (workloads, children and pods as the controllers wrote them).

use serde_json::{Map, Value};
use wlmap_expr::{Expr, Input, Key, Limits, Val};

mod common;

/// The object with only what lies at `paths` (each up to its first `[]`, kept whole below).
fn cut(obj: &Value, paths: &[Vec<Key>]) -> Value {
    let mut out = Value::Object(Map::new());
    for path in paths {
        let keys: Vec<&str> = path
            .iter()
            .map_while(|k| match k {
                Key::Field(s) => Some(s.as_str()),
                Key::Each => None,
            })
            .collect();
        copy_at(obj, &mut out, &keys);
    }
    out
}

/// Copy the value at `keys` of `from` into `to`, creating the maps on the way.
fn copy_at(from: &Value, to: &mut Value, keys: &[&str]) {
    let Some((first, rest)) = keys.split_first() else {
        *to = from.clone();
        return;
    };
    let Some(below) = from.as_object().and_then(|m| m.get(*first)) else {
        return; // absent in the object: absent in the cut too
    };
    if !to.is_object() {
        return; // a shorter path already copied this whole
    }
    let slot = to.as_object_mut().map(|m| {
        m.entry(first.to_string())
            .or_insert(Value::Object(Map::new()))
    });
    if let Some(slot) = slot {
        if rest.is_empty() {
            *slot = below.clone();
        } else if below.is_object() {
            copy_at(below, slot, rest);
        } else {
            *slot = below.clone();
        }
    }
}

fn answers(e: &Expr, obj: &Value, vars: &[Val]) -> Result<Vec<Value>, ()> {
    let converted = std::sync::OnceLock::new();
    e.evaluate(Input::json(obj, &converted), vars, &Limits::default())
        .map(|o| o.iter().map(|x| x.to_json().into_owned()).collect())
        .map_err(|_| ())
}

#[test]
fn an_expression_answers_the_same_on_what_it_reads() {
    let (mut checked, mut whole) = (0usize, 0usize);
    for each in common::catalog_expressions() {
        let common::DefinitionExpressions {
            slug,
            fixtures,
            vars,
            texts,
        } = each;
        let names: Vec<&str> = vars.iter().map(String::as_str).collect();
        let values = vec![Val::Null; vars.len()];
        for text in &texts {
            let f = wlmap_expr::footprint(text).expect(text);
            if f.whole {
                whole += 1;
                continue;
            }
            let e = Expr::compile_with_vars(text, &names).expect(text);
            for state in common::sorted_dirs(&fixtures) {
                for obj in common::objects(&state) {
                    let small = cut(obj.json(), &f.paths);
                    assert_eq!(
                        answers(&e, &small, &values),
                        answers(&e, obj.json(), &values),
                        "{slug}: `{text}` on {} cut to {:?}",
                        common::name(&state),
                        f.paths
                    );
                    checked += 1;
                }
            }
        }
    }
    eprintln!("footprint: {checked} answers compared; {whole} expressions read their whole input");
    assert!(checked > 1000, "{checked}");
}

#[test]
fn the_cut_keeps_only_what_is_read() {
    let obj = serde_json::json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"x": 1}});
    let paths = wlmap_expr::footprint(r#".metadata.labels["a"]"#)
        .unwrap()
        .paths;
    assert_eq!(
        cut(&obj, &paths),
        serde_json::json!({"metadata": {"labels": {"a": "1"}}})
    );
}
