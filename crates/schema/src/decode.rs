//! Strict decoding of definition files (YAML or JSON, one or many documents, or `List`s).

use crate::types::{API_VERSION, KIND, Karta, LEGACY_API_VERSION, LEGACY_KIND};
use crate::{Error, Location};

/// Decode every definition in a file: multi-document YAML, JSON, and `List`/`KartaList`
/// objects are all accepted; legacy `ResourceInterface` documents are converted.
///
/// Decoding is strict: an unknown field or a wrong type is an error that names the field and
/// its line and column.
///
/// ```
/// let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec:\n  structureDefinition:\n    rootComponent: {name: x, ownerName: y}\n";
/// let err = wlmap_schema::decode(text, "bad.yaml").unwrap_err();
/// assert!(err.to_string().contains("ownerName"));
/// assert_eq!(err.location().unwrap().line, 5);
/// ```
pub fn decode(text: &str, file: &str) -> Result<Vec<Karta>, Error> {
    let json = looks_like_json(text);
    // Most definitions are in the plain subset of YAML that `fast_yaml` reads; anything else,
    // and every error, goes through serde-saphyr.
    if !json
        && let Some(values) = crate::fast_yaml::parse(text)
        && let Ok(kartas) = from_values(&values, file, crate::fast_yaml::from_value)
    {
        return kartas.into_iter().map(|k| convert(k, file)).collect();
    }
    decode_with_saphyr(text, file)
}

/// [`decode`] without the fast reader of plain YAML: every text through serde-saphyr (or
/// serde_json). The reference the fast reader is tested against.
///
/// ```
/// let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec:\n  structureDefinition:\n    rootComponent: {name: x}\n";
/// assert_eq!(wlmap_schema::decode(text, "x.yaml").unwrap(),
///            wlmap_schema::decode_with_saphyr(text, "x.yaml").unwrap());
/// ```
#[doc(hidden)]
pub fn decode_with_saphyr(text: &str, file: &str) -> Result<Vec<Karta>, Error> {
    let json = looks_like_json(text);
    // YAML is parsed once, straight into definitions, unless a document may be a `List`
    // (a top-level `items` key, or a flow-style document): parsing is most of a decode.
    if !json && !may_hold_a_list(text) {
        let kartas: Vec<Karta> = serde_saphyr::from_multiple_with_options(text, options())
            .map_err(|e| yaml_error(&e, file))?;
        return kartas.into_iter().map(|k| convert(k, file)).collect();
    }
    let values: Vec<serde_json::Value> = if json {
        let mut out = Vec::new();
        for v in serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>() {
            out.push(v.map_err(|e| json_error(&e, file))?);
        }
        out
    } else {
        serde_saphyr::from_multiple_with_options(text, options())
            .map_err(|e| yaml_error(&e, file))?
    };
    let values: Vec<serde_json::Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    let mut kartas = Vec::new();
    if is_list(&values) {
        kartas = from_values(&values, file, |v| serde_json::from_value(v.clone()))?;
    } else if json {
        for k in serde_json::Deserializer::from_str(text).into_iter::<Karta>() {
            kartas.push(k.map_err(|e| json_error(&e, file))?);
        }
    } else {
        kartas = serde_saphyr::from_multiple_with_options(text, options())
            .map_err(|e| yaml_error(&e, file))?;
    }
    kartas.into_iter().map(|k| convert(k, file)).collect()
}

/// A JSON text (an object or an array first), read by serde_json rather than as YAML.
pub(crate) fn looks_like_json(text: &str) -> bool {
    let trimmed = text.trim_start();
    trimmed.starts_with('{') || trimmed.starts_with('[')
}

/// True when one of the documents is a `List` (it has `items` and no `spec`).
fn is_list(values: &[serde_json::Value]) -> bool {
    values
        .iter()
        .any(|v| v.get("items").is_some() && v.get("spec").is_none())
}

/// The definitions of decoded documents, `List`s unpacked, each decoded by `decode_item`.
/// Errors have no line: the callers that can locate them decode from the text instead.
pub(crate) fn from_values(
    values: &[serde_json::Value],
    file: &str,
    decode_item: impl Fn(&serde_json::Value) -> Result<Karta, serde_json::Error>,
) -> Result<Vec<Karta>, Error> {
    let list = is_list(values);
    let mut kartas = Vec::new();
    for (d, v) in values.iter().enumerate() {
        let items = match v.get("items") {
            Some(serde_json::Value::Array(items)) if list => items.iter().collect(),
            _ => vec![v],
        };
        for (i, item) in items.into_iter().enumerate() {
            let k: Karta = decode_item(item).map_err(|e| Error::Decode {
                location: Some(Location::new(file, 0, 0)),
                message: format!("document {} item {}: {}", d + 1, i, e),
            })?;
            kartas.push(k);
        }
    }
    Ok(kartas)
}

/// True when a YAML text may hold a `List`: a line that starts with an `items` key, or a
/// flow-style (`{`, `[`) or anchored top-level node. False positives only cost a second parse.
fn may_hold_a_list(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.strip_prefix("---").map_or(l, str::trim_start);
        let key = l.trim_start();
        ["items", "\"items\"", "'items'"]
            .iter()
            .any(|p| key.starts_with(p))
            || ["{", "[", "&", "!", "?"].iter().any(|p| l.starts_with(p))
    })
}

/// Decode a file that must hold exactly one definition.
///
/// ```
/// # let yaml = serde_json::to_string(&wlmap_schema::Karta::example()).unwrap();
/// let k = wlmap_schema::decode_one(&yaml, "pod.json").unwrap();
/// assert_eq!(k.name(), "core-pod-v1");
/// ```
pub fn decode_one(text: &str, file: &str) -> Result<Karta, Error> {
    let mut all = decode(text, file)?;
    if all.len() != 1 {
        return Err(Error::Decode {
            location: Some(Location::new(file, 1, 1)),
            message: format!("expected exactly one definition, found {}", all.len()),
        });
    }
    Ok(all.remove(0))
}

/// Check apiVersion/kind and convert a legacy `ResourceInterface` into a `Karta`.
pub(crate) fn convert(mut k: Karta, file: &str) -> Result<Karta, Error> {
    match (k.api_version.as_str(), k.kind.as_str()) {
        (API_VERSION, KIND) => Ok(k),
        (LEGACY_API_VERSION, LEGACY_KIND) => {
            // The legacy format has the same spec; only the group and kind were renamed.
            k.api_version = API_VERSION.into();
            k.kind = KIND.into();
            Ok(k)
        }
        (av, kind) => Err(Error::Decode {
            location: Some(Location::new(file, 1, 1)),
            message: format!(
                "not a definition: apiVersion {av:?} kind {kind:?} (expected {API_VERSION} {KIND} or {LEGACY_API_VERSION} {LEGACY_KIND})"
            ),
        }),
    }
}

/// YAML options used everywhere: YAML 1.1 booleans and octals like kubectl, duplicate keys
/// rejected, alias expansion budgeted (billion laughs), no code snippets in messages.
///
/// ```
/// let o = wlmap_schema::yaml_options();
/// assert!(o.legacy_octal_numbers); // `0755` reads as octal, like kubectl
/// assert!(!o.with_snippet);
/// ```
pub fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.legacy_octal_numbers = true;
    o.with_snippet = false;
    o
}

pub(crate) fn yaml_error(e: &serde_saphyr::Error, file: &str) -> Error {
    let location = e
        .location()
        .map(|l| Location::new(file, l.line(), l.column()));
    // The user-facing wording: the library's default one gives advice to programmers
    // ("set DuplicateKeyPolicy in Options"). It appends " at line X column Y"; the location is
    // carried separately.
    let mut message = budget_words(e)
        .unwrap_or_else(|| e.render_with_formatter(&serde_saphyr::UserMessageFormatter));
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    Error::Decode { location, message }
}

/// A reading budget that a text breaks (an alias bomb, nesting too deep), in wlmap's words:
/// the library's own shows its internal counters as Rust values.
fn budget_words(e: &serde_saphyr::Error) -> Option<String> {
    use serde_saphyr::Error as E;
    use serde_saphyr::budget::BudgetBreach as B;
    // The breach may come wrapped: with a snippet, or with the aliases that led to it.
    let mut e = e.without_snippet();
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = e {
        e = error;
    }
    let what = match e {
        E::Budget { breach, .. } => match breach {
            B::Events { events: n } => format!("{n} parser events"),
            B::Aliases { aliases: n } => format!("{n} aliases"),
            B::Anchors { anchors: n } => format!("{n} anchors"),
            B::Depth { depth: n } => format!("{n} levels of nesting"),
            B::Documents { documents: n } => format!("{n} documents"),
            B::Nodes { nodes: n } => format!("{n} nodes"),
            B::ScalarBytes {
                total_scalar_bytes: n,
            } => format!("{n} bytes of values"),
            B::MergeKeys { merge_keys: n } => format!("{n} merge keys"),
            B::InputBytes { input_bytes: n } => format!("{n} bytes"),
            _ => "its size".to_string(),
        },
        E::AliasReplayCounterOverflow { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. } => "the aliases it expands".to_string(),
        _ => return None,
    };
    Some(format!(
        "YAML document too large or too complex: over the reading budget at {what}"
    ))
}

pub(crate) fn json_error(e: &serde_json::Error, file: &str) -> Error {
    let mut message = e.to_string();
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    Error::Decode {
        location: Some(Location::new(file, e.line() as u64, e.column() as u64)),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example definition as block-style YAML, indented by `indent` spaces.
    fn yaml(indent: usize) -> String {
        let v = serde_json::to_value(Karta::example()).unwrap();
        let text = serde_saphyr::to_string(&v).unwrap();
        text.lines()
            .map(|l| format!("{}{l}\n", " ".repeat(indent)))
            .collect()
    }

    #[test]
    fn lists_and_documents_decode_alike() {
        let one = yaml(0);
        let items = yaml(4).replacen("    ", "  - ", 1);
        let json = serde_json::to_string(&Karta::example()).unwrap();
        let cases = [
            (one.clone(), 1),
            (format!("{one}---\n{one}"), 2),
            (
                format!("apiVersion: v1\nkind: List\nitems:\n{items}{items}"),
                2,
            ),
            (format!("kind: KartaList\n'items':\n{items}"), 1),
            (
                format!("{one}---\n{{\"kind\": \"List\", \"items\": [{json}]}}\n"),
                2,
            ),
            (
                format!("{{\"kind\": \"List\", \"items\": [{json}, {json}]}}"),
                2,
            ),
            (json.clone(), 1),
        ];
        for (text, n) in cases {
            let all = decode(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(all.len(), n, "{text}");
            assert!(all.iter().all(|k| *k == Karta::example()), "{text}");
        }
        // A one-pass decode still reports unknown fields with their line.
        let bad = one.replacen("spec:", "spec:\n  extra: 1", 1);
        let e = decode(&bad, "t.yaml").unwrap_err();
        assert!(e.to_string().contains("extra"), "{e}");
        assert!(e.location().is_some_and(|l| l.line > 1), "{e:?}");
    }
}
