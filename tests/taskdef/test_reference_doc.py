"""docs/task-yaml-reference.md is generated from the JSON Schema: it lists
every key the schema accepts, and is exactly the generator's output."""
import json
from pathlib import Path

from avhb.taskdef.schema.reference import SCHEMA, reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "task-yaml-reference.md"


def test_reference_is_generated_from_the_schema():
    assert DOC.read_text(encoding="utf-8") == reference(), \
        "regenerate: python -m avhb.taskdef.schema.reference > docs/task-yaml-reference.md"


def test_every_schema_key_is_documented():
    schema = json.loads(SCHEMA.read_text())
    text = DOC.read_text(encoding="utf-8")
    for key in schema["properties"]:
        assert f"| `{key}` |" in text
    for key in schema["$defs"]["media"]["properties"]:
        assert f"| `media.{key}` |" in text
    for key in schema["$defs"]["judge_role"]["properties"]:
        assert f"| `judges.ROLE.{key}` |" in text
    undocumented = [k for k, v in schema["properties"].items() if not v.get("description")]
    assert not undocumented, undocumented
