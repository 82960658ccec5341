//! Human output, one place for every command: aligned tables, the workload listing
//! ([`list`]), the describe tree ([`tree`]), ages, quantities, colour on terminals only.

pub mod list;
pub mod tree;

use std::io::IsTerminal;
use wlmap_engine::Phase;

/// Print rows as aligned columns (3 spaces apart, like kubectl).
pub fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let widths = widths(header, rows);
    row(out, &widths, header);
    for r in rows {
        row(out, &widths, r);
    }
}

/// Column widths that fit the header and every row (what [`table`] uses; a watch keeps them
/// for the rows that follow).
pub fn widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(visible_len(c));
            }
        }
    }
    widths
}

/// One line of a table with these column widths (a longer cell pushes the rest right).
pub fn row<S: AsRef<str>>(out: &mut String, widths: &[usize], cells: &[S]) {
    let n = cells.len();
    for (i, c) in cells.iter().enumerate() {
        let c = c.as_ref();
        out.push_str(c);
        if i + 1 < n {
            let w = widths.get(i).copied().unwrap_or(0);
            out.push_str(&" ".repeat(w.saturating_sub(visible_len(c)) + 3));
        }
    }
    out.push('\n');
}

fn visible_len(s: &str) -> usize {
    // Skip ANSI escapes so coloured cells align.
    let mut n = 0;
    let mut esc = false;
    for c in s.chars() {
        if esc {
            if c == 'm' {
                esc = false;
            }
        } else if c == '\u{1b}' {
            esc = true;
        } else {
            n += 1;
        }
    }
    n
}

/// Colour is used only when stdout is a terminal and NO_COLOR is unset.
pub fn colour_enabled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// A status, coloured on terminals.
pub fn phase(p: Phase, colour: bool) -> String {
    if !colour {
        return p.to_string();
    }
    let code = match p {
        Phase::Running | Phase::Completed => "32",
        Phase::Failed => "31",
        Phase::Degraded | Phase::Suspending | Phase::Resuming => "33",
        Phase::Suspended | Phase::Undefined => "2",
        Phase::Initializing => "36",
    };
    format!("\u{1b}[{code}m{p}\u{1b}[0m")
}

/// kubectl-style age (`45s`, `12m`, `3h`, `5d`, `2y`).
pub fn age(ts: Option<&str>) -> String {
    let Some(t) = ts.and_then(wlmap_engine::unix_seconds) else {
        return "<unknown>".into();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let s = (now - t).max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s if s < 365 * 86400 => format!("{}d", s / 86400),
        s => format!("{}y", s / (365 * 86400)),
    }
}

/// A GPU count without a trailing `.0`.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// Bytes as Ki/Mi/Gi.
pub fn bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    for (u, n) in UNITS {
        if b >= n && b.is_multiple_of((n / 1024).max(1)) {
            let v = b as f64 / n as f64;
            return if v.fract() == 0.0 {
                format!("{}{u}", v as u64)
            } else {
                format!("{v:.1}{u}")
            };
        }
    }
    b.to_string()
}

/// Millicores as kubectl prints them.
pub fn cpu(m: u64) -> String {
    if m.is_multiple_of(1000) {
        (m / 1000).to_string()
    } else {
        format!("{m}m")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_to_epoch_seconds() {
        assert_eq!(wlmap_engine::unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            wlmap_engine::unix_seconds("2026-09-16T14:00:00Z"),
            Some(1_789_567_200)
        );
        assert_eq!(wlmap_engine::unix_seconds("garbage"), None);
    }

    #[test]
    fn tables_align_on_visible_width() {
        let mut s = String::new();
        table(
            &mut s,
            &["A", "B"],
            &[
                vec!["\u{1b}[32mxx\u{1b}[0m".into(), "1".into()],
                vec!["yyyy".into(), "2".into()],
            ],
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "A      B");
        assert_eq!(lines[2], "yyyy   2");
    }

    #[test]
    fn quantities_print_like_kubectl() {
        assert_eq!(bytes(256 << 30), "256Gi");
        assert_eq!(cpu(1500), "1500m");
        assert_eq!(cpu(32000), "32");
        assert_eq!(num(12.0), "12");
    }
}
