//! The README's architecture picture says which crate uses which: every crate of the
//! workspace is in it, and each one's dependencies are drawn before it (above it, or to its
//! left on the same line), so that data flows one way down the picture.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The workspace members' folders, from the root manifest's `members = [...]`.
fn members() -> Vec<String> {
    let manifest = read(&root().join("Cargo.toml"));
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("members in the workspace manifest");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A crate's package name and the workspace crates in its `[dependencies]` (not dev ones).
fn crate_deps(folder: &str) -> (String, Vec<String>) {
    let manifest = read(&root().join(folder).join("Cargo.toml"));
    let mut section = "";
    let mut name = String::new();
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[package]" && line.starts_with("name") && name.is_empty() {
            name = line.split('"').nth(1).unwrap_or_default().to_string();
        } else if section == "[dependencies]" && line.starts_with("wlmap-") {
            deps.push(
                line.split(['.', ' ', '='])
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    (name, deps)
}

/// The text block right after the README's `## Architecture` heading.
fn picture() -> String {
    let readme = read(&root().join("README.md"));
    let after = readme
        .split_once("## Architecture\n")
        .expect("an Architecture section")
        .1;
    let block = after.split_once("```text\n").expect("a text block in it").1;
    block
        .split_once("```")
        .expect("a closed block")
        .0
        .to_string()
}

/// (line, column) of a crate's name in the picture, as a whole word.
fn place(picture: &str, name: &str) -> Option<(usize, usize)> {
    picture.lines().enumerate().find_map(|(i, line)| {
        line.match_indices(name).find_map(|(at, _)| {
            let next = line[at + name.len()..].chars().next();
            let word_ends = !next.is_some_and(|c| c.is_alphanumeric() || c == '-');
            word_ends.then_some((i, at))
        })
    })
}

#[test]
fn readme_architecture_picture_has_every_crate_below_the_crates_it_uses() {
    let picture = picture();
    let mut checked = 0;
    for folder in members() {
        if folder == "crates/e2e" {
            continue; // test infrastructure, not part of the product's flow
        }
        let (name, deps) = crate_deps(&folder);
        let at = place(&picture, &name)
            .unwrap_or_else(|| panic!("{name} ({folder}) is not in the README's picture"));
        for dep in deps {
            let dep_at = place(&picture, &dep)
                .unwrap_or_else(|| panic!("{dep}, used by {name}, is not in the picture"));
            assert!(
                dep_at < at,
                "{name} uses {dep}, but the picture draws {dep} at {dep_at:?}, after {name} at {at:?}"
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 11,
        "only {checked} crates found in the workspace"
    );
}
