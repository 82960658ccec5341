//! The git revision the binary is built from, for `wlmap version` (`WLMAP_REVISION` when
//! building outside a checkout, such as from a source archive).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=WLMAP_REVISION");
    let revision = std::env::var("WLMAP_REVISION").ok().or_else(git_revision);
    println!(
        "cargo:rustc-env=WLMAP_REVISION={}",
        revision.unwrap_or_else(|| "unknown".into())
    );
}

/// `git rev-parse HEAD`, and the build script runs again when HEAD moves.
fn git_revision() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--git-dir", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let git_dir = Path::new(lines.next()?);
    let head = lines.next()?.trim().to_string();
    // HEAD names a branch; the branch's ref (loose or packed) holds the commit.
    println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    if let Ok(h) = std::fs::read_to_string(git_dir.join("HEAD"))
        && let Some(r) = h.strip_prefix("ref: ")
    {
        println!(
            "cargo:rerun-if-changed={}",
            git_dir.join(r.trim()).display()
        );
    }
    println!(
        "cargo:rerun-if-changed={}",
        git_dir.join("packed-refs").display()
    );
    Some(head)
}
