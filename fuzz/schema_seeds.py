#!/usr/bin/env python3
"""Seeds for the `definition` target from the Karta CRD's schema: every object of the format,
with every field set, and with each field missing, doubled, null, given a value of each kind
(bool, numbers, string, lists, maps), or the object written as a sequence of each length; each
object in each YAML (and JSON) way to spell a mapping (`syntax_seeds`); each path field
pointing at places an update must refuse (`path_seeds`).

    python3 fuzz/schema_seeds.py [OUT_DIR=fuzz/corpus/definition]

It also writes the catalog's definitions as JSON and as a `List` (`fuzz_seed` writes them as
YAML).

Why: the catalog seeds use the fields the catalog needs. Late in a run the `definition` target
was still finding, a few a minute, branches of the strict decoders for fields no seed sets (a
duplicate `podGroups`, a `null` `topologyName`), each per reader (the fast YAML reader and
serde-saphyr). Byte mutations rarely spell a nested field name under the right parent, so the
seeds spell each one once, in each form `decode` reads: plain YAML (the fast reader's subset,
which serde-saphyr reads too), JSON and a YAML `List`. The varied object is placed at its own
path in a small valid definition. The schema is read from the checked-in CRD
(`crates/schema/crd/kartas.run.ai.yaml`, generated from the Rust types), so the seeds follow the
format as it changes.
"""
import base64
import copy
import json
import pathlib
import re
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
CRD = HERE.parent / "crates/schema/crd/kartas.run.ai.yaml"

# A plausible value for a string field, by its name: expressions get a jq path, names the root
# component's name (so `ownerRef` and `componentName` refer to something that exists).
STRINGS = {
    "apiVersion": "run.ai/v1alpha1", "kind": "W", "group": "g", "version": "v1",
    "name": "w", "ownerRef": "w", "componentName": "w", "status": "True", "byPhase": "Running",
    "type": "Ready", "expectedResult": "True", "reason": "a", "value": "true",
    "statusFieldName": "status", "typeFieldName": "type", "reasonFieldName": "reason",
    "messageFieldName": "message", "topologyName": "t", "preferredTopologyLevel": "zone",
    "requiredTopologyLevel": "rack",
}


def string_for(name):
    return STRINGS.get(name, ".spec")


def minimal(schema, name):
    """The smallest value the schema allows: required fields only."""
    t = schema.get("type")
    if "properties" in schema:
        return {k: minimal(schema["properties"][k], k) for k in schema.get("required", [])}
    if t == "array":
        return []
    if t == "object":
        return {}
    return scalar(schema, name)


def scalar(schema, name):
    t = schema.get("type")
    if t == "string":
        return string_for(name)
    if t == "boolean":
        return True
    if t in ("integer", "number"):
        return 1
    return {}


def full(schema, name):
    """Every field of this object set; objects below it minimal, arrays with one element."""
    if "properties" in schema:
        return {k: one_level(v, k) for k, v in schema["properties"].items()}
    return one_level(schema, name)


def one_level(schema, name):
    t = schema.get("type")
    if "properties" in schema:  # its scalar fields set, the objects below it minimal
        props = schema["properties"]
        out = minimal(schema, name)
        for k, v in props.items():
            if "properties" not in v and v.get("type") not in ("array", "object"):
                out[k] = scalar(v, k)
        return out
    if t == "array":
        return [minimal(schema["items"], name)]
    if "additionalProperties" in schema:
        return {"app": minimal(schema["additionalProperties"], name)}
    return scalar(schema, name)


def wrong(schema, name):
    """A value of another type than the field's."""
    t = schema.get("type")
    if "properties" in schema or t == "array" or "additionalProperties" in schema:
        return "a"
    if t == "string":
        return {"a": 1}
    return "a"


# A value of each kind YAML and JSON have: each field is given each one in turn. A derived
# decoder has a branch per kind a field's visitor is handed (a string where a list goes, a
# negative number where a string goes), in each reader: `wrong-type` alone reaches one of them.
KINDS = {"bool": True, "int": 1, "negative": -1, "float": 1.5, "string": "a", "empty-list": [],
         "list": ["a"], "empty-map": {}, "map": {"a": "a"}}


def objects(schema, path=()):
    """(path, schema) of every object with properties; arrays' items at index 0."""
    if "properties" in schema:
        yield path, schema
        for k, v in schema["properties"].items():
            yield from objects(v, path + (k,))
    elif schema.get("type") == "array":
        yield from objects(schema["items"], path + (0,))
    elif "additionalProperties" in schema:
        yield from objects(schema["additionalProperties"], path + ("app",))


# The smallest valid definition (a root with a pod template and a status mapping, one child):
# each seed changes one object in it, so the rest still validates and compiles.
BASE = {
    "apiVersion": "run.ai/v1alpha1",
    "kind": "Karta",
    "metadata": {"name": "seed"},
    "spec": {"structureDefinition": {
        "rootComponent": {
            "name": "w",
            "kind": {"group": "g", "version": "v1", "kind": "W"},
            "specDefinition": {"podTemplateSpecPath": ".spec.template"},
            "statusDefinition": {
                "conditionsDefinition": {"path": ".status.conditions", "typeFieldName": "type",
                                         "statusFieldName": "status"},
                "statusMappings": {"running": [{"byConditions": [
                    {"type": "Ready", "status": "True"}]}]},
            },
        },
        "childComponents": [{
            "name": "c",
            "kind": {"group": "g", "version": "v1", "kind": "C"},
            "ownerRef": "w",
            "specDefinition": {"podTemplateSpecPath": ".spec.template"},
        }],
    }},
}


def place(root_schema, path, node):
    """BASE with `node` at `path` (the objects on the way created minimal where BASE has none)."""
    if not path:
        return node
    doc = copy.deepcopy(BASE)
    at, schema = doc, root_schema
    for i, step in enumerate(path):
        last = i == len(path) - 1
        if step == 0:
            schema = schema["items"]
            if not at:
                at.append(minimal(schema, ""))
            if last:
                at[0] = node
            at = at[0]
        else:
            schema = (schema["properties"][step] if "properties" in schema
                      else schema["additionalProperties"])
            if last:
                at[step] = node
            elif step not in at or not isinstance(at[step], (dict, list)):
                at[step] = [] if schema.get("type") == "array" else minimal(schema, step)
            at = at[step]
    return doc


PLAIN = re.compile(r"^[A-Za-z./_][A-Za-z0-9./_-]*$")
SPECIAL = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def emit_scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if PLAIN.match(v) and v.lower() not in SPECIAL:
        return v
    return json.dumps(v)


def emit(v, indent=0, dup=None, hook=None):
    """Block YAML. `dup` = (object, key): that object's key is written twice. `hook` =
    (object, how): that object is written as the lines `how(object)` (see `syntax_seeds`)."""
    pad = " " * indent
    if hook is not None and v is hook[0]:
        return [pad + line for line in hook[1](v)]
    lines = []
    if isinstance(v, dict):
        if not v:
            return [pad + "{}"]
        items = list(v.items())
        if dup is not None and dup[0] is v:
            items.append((dup[1], v[dup[1]]))
        for k, x in items:
            if isinstance(x, (dict, list)) and (x or hooked(x, hook)):
                lines.append(f"{pad}{k}:")
                lines += emit(x, indent + 2, dup, hook)
            else:
                lines.append(f"{pad}{k}: {emit_value_inline(x)}")
    elif isinstance(v, list):
        if not v:
            return [pad + "[]"]
        for x in v:
            if isinstance(x, (dict, list)) and (x or hooked(x, hook)):
                sub = emit(x, indent + 2, dup, hook)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines += sub[1:]
            else:
                lines.append(f"{pad}- {emit_value_inline(x)}")
    else:
        lines.append(pad + emit_scalar(v))
    return lines


def hooked(x, hook):
    return hook is not None and x is hook[0]


def emit_value_inline(x):
    if isinstance(x, dict):
        return "{}"
    if isinstance(x, list):
        return "[]"
    return emit_scalar(x)


def schema_root():
    """The Karta CRD's OpenAPI schema (its first version)."""
    crd = yaml.safe_load(CRD.read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def seeds():
    root = schema_root()
    for path, schema in objects(root):
        where = ".".join(str(p) for p in path) or "root"
        node = full(schema, path[-1] if path else "")
        yield f"{where}.full", place(root, path, node), None
        unknown = dict(node, zzUnknownField="a")
        yield f"{where}.unknown", place(root, path, unknown), None
        yield f"{where}.as-sequence", place(root, path, list(node.values()) or ["a"]), None
        # A struct read from a sequence takes its fields in order, each length stops elsewhere.
        values = list(node.values())
        for n in range(len(values) + 2):
            prefix = (values + ["a"])[:n]
            yield f"{where}.as-sequence-{n}", place(root, path, prefix), None
        for k, v in schema["properties"].items():
            without = {f: x for f, x in node.items() if f != k}
            yield f"{where}.{k}.missing", place(root, path, without), None
            yield f"{where}.{k}.null", place(root, path, dict(node, **{k: None})), None
            yield f"{where}.{k}.wrong-type", place(root, path, dict(node, **{k: wrong(v, k)})), None
            for kind, value in KINDS.items():
                yield f"{where}.{k}.{kind}", place(root, path, dict(node, **{k: value})), None
            # Several elements, and a bad one after good ones: what a decoder allocated for
            # the elements before an error is dropped, at each kind of element.
            if v.get("type") == "array" or "additionalProperties" in v:
                item = minimal(v.get("items") or v["additionalProperties"], k)
                for n in (2, 5):
                    for bad in (False, True):
                        elems = [item] * n + (["a"] if bad else [])
                        value = elems if v.get("type") == "array" else {
                            f"k{i}": e for i, e in enumerate(elems)}
                        name = f"{where}.{k}.{n}{'-then-bad' if bad else ''}"
                        yield name, place(root, path, dict(node, **{k: value})), None
            doubled = dict(node)
            yield f"{where}.{k}.twice", place(root, path, doubled), (doubled, k)


def escaped(key):
    """A key spelled with an escape (its first letter as \\uXXXX), in double quotes: the reader
    has to build the string instead of borrowing it from the text."""
    return '"\\u%04x%s"' % (ord(key[0]), json.dumps(key[1:])[1:-1]) if key else '""'


def as_binary(key):
    return "!!binary " + base64.b64encode(key.encode()).decode()


def entries(node, key=emit_scalar, value=None):
    """`node` as one line per field, `key: value`, the value in flow style (JSON is YAML)."""
    value = value or (lambda k, x: emit_json(x))
    return [f"{key(k)}: {value(k, x)}" for k, x in node.items()] or ["{}"]


def separated(node):
    """`node` with a comment between each key and its value, the value on the next line."""
    return [line for k, x in node.items()
            for line in (f"{k}: # value on the next line", f"  {emit_json(x)}")] or ["{}"]


WHITESPACE = " \t\r\n"

STRING_STYLES = {
    "literal-strings": lambda k, x: [f"{k}: |-", f"  {x}"],
    "folded-strings": lambda k, x: [f"{k}: >-", f"  {x}"],
    "single-quoted-strings": lambda k, x: [f"{k}: '{x}'"],
    "single-quoted-escape-strings": lambda k, x: [f"{k}: '" + x.replace("'", "''") + "'' '"],
    "two-line-strings": lambda k, x: [f"{k}: {x}", f"  {x}"] if PLAIN.match(x) else [
        f"{k}: {json.dumps(x)}"],
}


def field_value(field, text):
    """`entries`, with `field` (added when the object has no such field) written as `text`."""
    def how(node):
        items = dict(node) if field in node else dict(node, **{field: None})
        return entries(items, value=lambda k, x: text if k == field else emit_json(x))
    return how


def syntax_seeds():
    """(name, text) of each object of the format written in each of the YAML (and JSON) ways
    to spell the same mapping: keys that cannot be borrowed from the text (escaped, base64 in a
    `!!binary` tag), tagged, quoted, explicit or non-string keys, comments (after a key too),
    merge keys (`<<`), anchors and aliases, tagged or null-like values, and strings the reader
    builds (escaped, block scalars, over two lines); and in JSON, escaped keys and values and
    whitespace in every gap. Why: serde-saphyr hands a derived decoder a key or a value on a
    different path for each of them (an owned key goes to `visit_string`, a merged or aliased
    entry is replayed), and each path has its own copy of every struct's field matching;
    serde_json's parser is inlined into each struct's decoder. These seeds reach about 2,000
    edges (the JSON whitespace about 600 of them) that hours of byte mutations do not."""
    root = schema_root()
    for path, schema in objects(root):
        where = ".".join(str(p) for p in path) or "root"
        node = full(schema, path[-1] if path else "")
        doc = place(root, path, node)
        items = list(node.items())
        first, second = dict(items[: len(items) // 2]), dict(items[len(items) // 2:])
        flow = emit_json
        ways = {
            "escaped-keys": lambda n: entries(n, escaped),
            "escaped-keys-unknown": lambda n: entries(dict(n, zzUnknownField="a"), escaped),
            "binary-keys": lambda n: entries(n, as_binary),
            "binary-keys-unknown": lambda n: entries(dict(n, zzUnknownField="a"), as_binary),
            "str-tag-keys": lambda n: entries(n, lambda k: "!!str " + k),
            "single-quoted-keys": lambda n: entries(n, lambda k: f"'{k}'"),
            "explicit-keys": lambda n: [f"{m} {x}" for k, v in n.items()
                                        for m, x in (("?", k), (":", flow(v)))] or ["{}"],
            "comments": lambda n: [m for k, v in n.items()
                                   for m in (f"# {k}", f"{k}: {flow(v)} # after")] or ["{} # c"],
            "merge": lambda n: [f"<<: {flow(n)}"],
            "merge-half": lambda n: entries(first) * bool(first) + [f"<<: {flow(second)}"],
            "merge-sequence": lambda n: [f"<<: [{flow(first)}, {flow(second)}]"],
            "merge-then-unknown": lambda n: [f"<<: {flow(n)}", "zzUnknownField: a"],
            "merge-unknown": lambda n: [f"<<: {flow(dict(n, zzUnknownField='a'))}"],
            "merge-under-fields": lambda n: entries(n) * bool(n) + [f"<<: {flow(n)}"],
            "merge-tagged": lambda n: [f"!!merge <<: {flow(n)}"],
            "merge-escaped-keys": lambda n: [f"<<: {flow(n, spell=(n, escaped))}"],
            "comment-separator": separated,
            "comment-separator-unknown": lambda n: separated(dict(n, zzUnknownField="a")),
            "escaped-values": lambda n: entries(n, value=lambda k, x: flow(x, text=escaped)),
            # the object's keys and every string value, as `escaped-all.json` below
            "escaped-all": lambda n: entries(n, escaped, value=lambda k, x: flow(x, text=escaped)),
        }
        # Strings that the reader builds rather than borrows: block scalars, a quote escaped
        # in single quotes, a plain scalar over two lines.
        if any(isinstance(x, str) for x in node.values()):
            for style, spell in STRING_STYLES.items():
                ways[style] = lambda n, spell=spell: [
                    line for k, x in n.items()
                    for line in (spell(k, x) if isinstance(x, str) else [f"{k}: {flow(x)}"])]
        for odd_name, odd in (("int", "1"), ("bool", "true"), ("null", "~"), ("float", "1.5"),
                              ("empty", '""'), ("sequence", "[a]"), ("map", "{a: b}")):
            line = [f"? {odd}", ": a"] if odd[0] in "[{" else [f"{odd}: a"]
            # (`* bool(n)`: an empty object's `entries` is `{}`, which cannot take more keys)
            ways[f"{odd_name}-key-first"] = lambda n, line=line: line + entries(n) * bool(n)
            ways[f"{odd_name}-key-last"] = lambda n, line=line: entries(n) * bool(n) + line
        for k, v in schema["properties"].items():
            typo = k[:-1] + ("a" if k[-1] != "a" else "b")  # same length, last letter differs
            renamed = {(typo if f == k else f): x for f, x in node.items()} | (
                {} if k in node else {typo: "a"})
            ways[f"{k}.typo"] = lambda n, r=renamed: entries(r)
            ways[f"{k}.typo-escaped"] = lambda n, r=renamed: entries(r, escaped)
            ways[f"{k}.typo-binary"] = lambda n, r=renamed: entries(r, as_binary)
            ways[f"{k}.merge-wrong-type"] = lambda n, k=k, v=v: [
                f"<<: {flow(dict(n, **{k: wrong(v, k)}))}"]
            for name, text in (("tilde", "~"), ("empty", ""), ("Null", "Null"),
                               ("null-tag", '!!null ""'), ("str-tag", "!!str a"),
                               ("custom-tag", "!x a"), ("map-tag", "!!map {}"),
                               ("seq-tag", "!!seq []")):
                ways[f"{k}.{name}"] = field_value(k, text)
        for name, how in ways.items():
            yield f"{where}.{name}", "\n".join(emit(doc, 0, hook=(node, how))) + "\n"
        # JSON: escaped keys and values (serde_json copies them out of the text), and each
        # whitespace character in every gap (serde_json's parser is inlined into each decoder).
        yield f"{where}.escaped-keys.json", emit_json(doc, spell=(node, escaped)) + "\n"
        yield f"{where}.escaped-values.json", emit_json(doc, text=escaped) + "\n"
        yield f"{where}.escaped-all.json", emit_json(
            doc, spell=(node, escaped), text=escaped) + "\n"
        for name, spelled in (("", node), ("-unknown", dict(node, zzUnknownField="a")),
                              ("-empty", {})):
            yield f"{where}.whitespace{name}.json", emit_json(
                place(root, path, spelled), gap=WHITESPACE) + "\n"
        # Anchors and aliases: the object, each of its fields' values and its first key through
        # an alias of an anchor under the free-form `status`, and `<<: *alias`.
        if not path:
            continue
        rest = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
        aliased = {"object-alias": (flow(node), lambda n: ["*a"]),
                   "merge-alias": (flow(node), lambda n: ["<<: *a"])}
        if node:
            k0 = next(iter(node))
            aliased["alias-key"] = (k0, lambda n, k0=k0: [
                f"{'*a ' if k == k0 else k}: {flow(x)}" for k, x in n.items()])
        for k, x in node.items():
            aliased[f"{k}.alias"] = (flow(x), lambda n, k=k: [
                f"{f}: {'*a' if f == k else flow(y)}" for f, y in n.items()])
        for name, (anchored, how) in aliased.items():
            head = f'apiVersion: run.ai/v1alpha1\nkind: Karta\nstatus: {{"x": &a {anchored}}}\n'
            yield f"{where}.{name}", head + "\n".join(emit(rest, 0, hook=(node, how))) + "\n"


# Where a path expression can point: at a value of another kind than the field writes (the whole
# object, a string, through a string), at an index, a slice, several places or none.
PLACES = {
    "whole": ".", "kind": ".kind", "name": ".metadata.name", "through-string": ".metadata.name.x",
    "metadata": ".metadata", "labels": ".metadata.labels", "uid": ".metadata.uid",
    "index": ".spec.a[0]", "index-negative": ".spec.a[-1]", "slice": ".spec.a[1:2]",
    "deep": ".spec.a.b.c", "alternative": ".spec.a // .spec.b", "empty": "empty",
    "two": ".spec.a, .spec.b", "optional": ".spec.a?", "string-key": '.spec["a b"]',
    "computed": ".spec[.kind]", "list": ".spec.template.spec.containers",
}


def path_seeds():
    """(name, text): each path field of a component pointing at each of PLACES. Why: the fuzz
    target reads and updates (labels, scheduler name) every instance, and an update refuses to
    change a value's kind; byte mutations of `.spec.template` rarely reach those refusals."""
    root = schema_root()
    for path, schema in objects(root):
        if "structureDefinition" not in path:
            continue
        where = ".".join(str(p) for p in path)
        node = full(schema, path[-1])
        for k, v in schema["properties"].items():
            if v.get("type") == "string" and (k.endswith("Path") or k == "path"):
                for name, expr in PLACES.items():
                    doc = place(root, path, dict(node, **{k: expr}))
                    yield f"{where}.{k}.{name}", "\n".join(emit(doc)) + "\n"


def emit_json(v, dup=None, spell=None, gap="", text=json.dumps):
    """JSON; `dup` as in `emit`; `spell` = (object, key): that object's keys are written by
    `key` (`escaped`); `gap` is written around every token (whitespace); `text` writes the
    strings that are values."""
    def again(x):
        return emit_json(x, dup, spell, gap, text)
    if isinstance(v, dict):
        items = list(v.items())
        if dup is not None and dup[0] is v:
            items.append((dup[1], v[dup[1]]))
        key = spell[1] if spell is not None and spell[0] is v else json.dumps
        inner = ",".join(f"{gap}{key(k)}{gap}:{gap}{again(x)}{gap}" for k, x in items)
        return "{" + gap + inner + gap + "}"
    if isinstance(v, list):
        return "[" + gap + ",".join(f"{gap}{again(x)}{gap}" for x in v) + gap + "]"
    return text(v) if isinstance(v, str) else json.dumps(v)


def forms(doc, dup):
    """The text of a seed in each way `decode` reads a definition: plain YAML (the fast reader,
    and serde-saphyr), JSON (serde_json on the text) and a YAML `List` (serde-saphyr into JSON
    values, then serde_json from the value). Each is its own instance of the decoders."""
    yield "", "\n".join(emit(doc, 0, dup)) + "\n"
    yield ".json", emit_json(doc, dup) + "\n"
    wrapped = {"apiVersion": "v1", "kind": "List", "items": [doc]}
    yield ".list", "\n".join(emit(wrapped, 0, dup)) + "\n"


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus/definition"
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, doc, dup in seeds():
        for suffix, text in forms(doc, dup):
            (out / f"schema-{name}{suffix}").write_text(text)
            n += 1
    for prefix, make in (("syntax", syntax_seeds), ("path", path_seeds)):
        for name, text in make():
            (out / f"{prefix}-{name}").write_text(text)
            n += 1
    # The catalog's definitions (fuzz_seed writes them as YAML) in the other two forms.
    for path in sorted((HERE.parent / "crates/catalog/definitions").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for suffix, text in list(forms(doc, None))[1:]:
                (out / f"catalog-{path.stem}{suffix}").write_text(text)
                n += 1
    print(f"wrote {n} seeds from {CRD.name} and the catalog to {out}")


if __name__ == "__main__":
    main()
