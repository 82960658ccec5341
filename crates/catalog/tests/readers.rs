//! Test cases of other widely used status readers (kstatus, Argo CD's health checks) go through
//! wlmap's catalog: each reads as `readers/cases.yaml` says, and every case where wlmap falls in
//! another class than that reader says why (CATALOG.md lists them).

mod common;

#[test]
fn other_readers_cases_read_as_written_and_every_difference_says_why() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let mut errs = Vec::new();
    let cases = common::reader_cases();
    for c in &cases {
        let o = wlmap_engine::Object::new(c.object.clone());
        let Some(def) = reg.for_kind(&o.gvk()) else {
            errs.push(format!(
                "{} {}: no definition for {}",
                c.reader,
                c.case,
                o.gvk()
            ));
            continue;
        };
        let got = match wlmap_engine::resolve(def, &o) {
            Ok(w) => w.status.phase.to_string(),
            Err(e) => format!("error: {e}"),
        };
        if got != c.wlmap {
            errs.push(format!(
                "{} {}: wlmap reads {got}, the case says {}",
                c.reader, c.case, c.wlmap
            ));
        }
        let differs = !common::same_class(&c.reader, &c.says).contains(&c.wlmap.as_str());
        match (differs, &c.why) {
            (true, None) => errs.push(format!(
                "{} {}: {} against {}, and no `why`",
                c.reader, c.case, c.says, c.wlmap
            )),
            (false, Some(_)) => {
                errs.push(format!("{} {}: agrees, yet has a `why`", c.reader, c.case))
            }
            _ => {}
        }
    }
    assert!(cases.len() >= 40, "{} cases", cases.len());
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[test]
fn the_classes_hold_every_word_of_the_vocabulary() {
    let words: std::collections::BTreeSet<&str> = ["Current", "InProgress", "Failed"]
        .iter()
        .flat_map(|w| common::same_class("kstatus", w).iter().copied())
        .collect();
    assert_eq!(
        words.len(),
        7,
        "kstatus's classes cover every word but Degraded and Undefined"
    );
    assert!(!words.contains("Degraded"));
}
