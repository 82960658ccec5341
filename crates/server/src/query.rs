//! The query string of a request, decoded (`a=1&b=x%20y`).

/// Decoded `key=value` pairs of a query string, in order; `+` is a space, `%XX` a byte, and
/// bytes that do not form UTF-8 are replaced (names in Kubernetes are ASCII anyway).
pub fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The value of `key` in a query string.
pub fn get(query: &str, key: &str) -> Option<String> {
    pairs(query)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_and_plus() {
        assert_eq!(
            pairs("name=llm%2Dtrain&q=a+b&x"),
            vec![
                ("name".into(), "llm-train".into()),
                ("q".into(), "a b".into()),
                ("x".into(), "".into())
            ]
        );
        assert_eq!(get("group=&kind=Job", "group").as_deref(), Some(""));
        assert_eq!(get("a=%zz%4", "a").as_deref(), Some("%zz%4"));
        assert_eq!(get("a=%3Cscript%3E", "a").as_deref(), Some("<script>"));
    }
}
