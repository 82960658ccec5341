#!/usr/bin/env python3
"""Seeds for the `definition` target made of the `expression` target's corpus: each kept
expression placed in the smallest valid definition (schema_seeds.BASE), where the target
evaluates it.

Why: the `definition` target runs a definition's expressions (resolve, status, update) on one
fixed object, so its mutations reach the evaluator only through definitions; the `expression`
target, fuzzed to its plateau, has already found the inputs that reach every part of the
evaluator. Each expression is written twice in each of two places:
  - as it is (run on the target's object, and used as a path by the update);
  - after its JSON input as a literal, `(<input>) | (<expression>)` (the value it was fuzzed on).
The places: the root's `podTemplateSpecPath` (resolve, attribution, update) and its
`conditionsDefinition.path` (status).

    python3 fuzz/definition_from_expressions.py [OUT=fuzz/corpus/definition]

Reads fuzz/corpus/expression (`tar -xJf fuzz/corpus.tar.xz -C fuzz`).
"""
import copy
import json
import pathlib
import sys

from schema_seeds import BASE, emit

HERE = pathlib.Path(__file__).resolve().parent


def yaml_string(s):
    """A double-quoted YAML scalar for any string: JSON's escapes, plus the characters YAML
    does not allow raw (DEL, C1 controls, BOM, non-characters) escaped as \\u or \\U."""
    out = []
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif c < 0x20 or 0x7F <= c <= 0x9F or c in (0xFEFF, 0xFFFE, 0xFFFF) or 0xD800 <= c <= 0xDFFF:
            out.append("\\u%04x" % c)
        elif c > 0xFFFF and (c & 0xFFFE) == 0xFFFE:
            out.append("\\U%08x" % c)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def reject(name):
    raise ValueError(name)  # NaN and Infinity are not JSON: serde_json refuses them


MARK = "\x00expression\x00"


def definition(where, text):
    doc = copy.deepcopy(BASE)
    root = doc["spec"]["structureDefinition"]["rootComponent"]
    if where == "template":
        root["specDefinition"]["podTemplateSpecPath"] = MARK
    else:
        root["statusDefinition"]["conditionsDefinition"]["path"] = MARK
    lines = "\n".join(emit(doc)) + "\n"
    # emit() would quote the marker with json.dumps; the expression is written by yaml_string.
    return lines.replace(json.dumps(MARK), yaml_string(text))


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus/definition"
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for f in sorted((HERE / "corpus/expression").iterdir()):
        try:
            data = f.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # the target skips what is not UTF-8
        expr, _, raw = data.partition("\n")
        try:
            value = json.loads(raw, parse_constant=reject) if raw else None
        except ValueError:
            value = None  # the target evaluates on null then
        literal = json.dumps(value, ensure_ascii=False)
        for form, text in (("as-is", expr), ("on-input", f"({literal}) | ({expr})")):
            for where in ("template", "conditions"):
                (out / f"expr-{f.name[:16]}-{form}-{where}").write_text(definition(where, text))
                n += 1
    print(f"wrote {n} seeds from {HERE / 'corpus/expression'} to {out}")


if __name__ == "__main__":
    main()
