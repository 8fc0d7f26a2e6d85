"""The compiled schema check answers as jsonschema does: on every shipped task
file and on thousands of broken variants of them."""
from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import jsonschema
import pytest

from avhb.taskdef import schema_check, yaml_file
from avhb.taskdef.schema_compiled import Unsupported, compile_schema

ROOT = Path(__file__).resolve().parents[2]
# values of every JSON type and the Python types YAML makes, including the edge cases of JSON Schema's
# equality and number types (1.0 is an integer, True is not)
ODD = [None, True, False, 0, 1, -1, 1.0, 1.5, 0.0, "", "x", "${v}", [], ["x"], ["x", "x"], [1], [True], {},
       {"function": "hooks.f"}, {"function": "bad name"}, {"function": 1}, {"x": 1}, {"metric": "m"},
       {"function": "a.b", "metric": "m"}, ["video", "video"], ["image", "audio"]]


def _corpus() -> list[dict]:
    docs = []
    for path in sorted(itertools.chain(ROOT.glob("tasks/**/*.yaml"), ROOT.glob("tests/fixtures/**/*.yaml"))):
        try:
            docs.append(yaml_file.read_yaml(path).data)
        except Exception:
            continue
    return docs


def _variants(doc: dict):
    """The document with one value replaced (at every depth) by each odd value, or one key removed or added."""
    yield doc
    def walk(node, path):
        yield path, node
        if isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, path + (i,))

    for n, (path, _) in enumerate(walk(doc, ())):
        if not path:
            continue
        for odd in (ODD[(n + 7 * j) % len(ODD)] for j in range(5)):  # five odd values per place, rotating
            new = copy.deepcopy(doc)
            node = new
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = copy.deepcopy(odd)
            yield new
        new = copy.deepcopy(doc)
        node = new
        for k in path[:-1]:
            node = node[k]
        del node[path[-1]]
        yield new
    for extra in ("unknown_key", "frames", "function"):
        yield {**doc, extra: 1}


def test_shipped_schema_compiles():
    assert schema_check._fast_check() is not None


def test_checker_agrees_with_jsonschema_on_the_corpus_and_its_variants():
    schema = json.loads(schema_check.SCHEMA_FILE.read_text())
    reference = jsonschema.Draft202012Validator(schema)
    check = compile_schema(schema)
    docs = _corpus()
    assert len(docs) >= 15
    checked = unsure = 0
    for doc in docs:
        for variant in _variants(doc):
            valid = reference.is_valid(variant)
            fast = check(variant)
            checked += 1
            if fast:
                assert valid, f"fast check passed an invalid document: {variant}"
            elif valid:
                unsure += 1  # allowed only where the checker says it cannot tell (non-string enum/uniqueItems)
    assert checked > 2000
    assert unsure <= checked // 100, f"{unsure} of {checked} valid documents sent to jsonschema"


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "integer", "minimum": 1}, [1, 2.0, 10**30], [0, 1.5, True, "1", None]),
    ({"type": "number", "exclusiveMinimum": 0, "maximum": 2}, [0.5, 2, 1], [0, 2.5, False, "1"]),
    ({"enum": ["a", "b"]}, ["a"], ["c", 1, None, ["a"]]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": True},
     [["a"], ["a", "b"]], [[], ["a", "a"], ["a", "b", "c"], [1], "a"]),
    ({"oneOf": [{"type": "string"}, {"type": "string", "pattern": "^x"}]}, ["a"], ["x", 1]),
    ({"type": "object", "required": ["k"], "additionalProperties": False, "properties": {"k": {"const": "v"}}},
     [{"k": "v"}], [{}, {"k": "w"}, {"k": "v", "j": 1}, {1: "v"}]),
    ({"type": "object", "additionalProperties": {"type": "array"}}, [{"a": []}, {}], [{"a": 1}]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "abc"], ["a", "abcd"]),
    ({"not": {"type": "null"}, "anyOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1], [None, 1.5]),
])
def test_keywords_against_jsonschema(schema, good, bad):
    full = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    reference = jsonschema.Draft202012Validator(full)
    check = compile_schema(full)
    for value in good:
        assert reference.is_valid(value) and check(value), value
    for value in bad:
        assert not reference.is_valid(value) and not check(value), value


def test_unknown_keyword_is_refused_at_compile_time():
    with pytest.raises(Unsupported):
        compile_schema({"type": "object", "patternProperties": {"^x": {"type": "string"}}})
    with pytest.raises(Unsupported):
        compile_schema({"$ref": "https://example.com/remote.json"})


def test_validate_doc_falls_back_to_jsonschema_without_the_checker(tmp_path, monkeypatch):
    """With a schema the checker cannot compile, every document goes to jsonschema: same verdicts."""
    path = tmp_path / "t.yaml"
    path.write_text("task: t1\ndoc_to_text: x\nmedia:\n  frames: 0\n")
    doc = yaml_file.read_yaml(path)
    monkeypatch.setattr(schema_check, "_fast_check", lambda: None)
    with pytest.raises(Exception, match=r"t.yaml:4: media.frames: "):
        schema_check.validate_doc(doc)
