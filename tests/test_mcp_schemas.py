"""How MCP tool schemas are normalised for the model: data kept verbatim, names beside a
``$ref`` kept, boolean subschemas turned into objects the validator reads."""

from __future__ import annotations

from reasonix.mcp import normalize_schema


def test_schema_data_values_are_kept_verbatim() -> None:
    """``default``/``examples``/``const``/``enum`` hold data, not schemas: keys such as ``title``
    or ``$id`` in them are the tool's values and must reach the model unchanged."""
    out = normalize_schema(
        {
            "type": "object",
            "properties": {
                "page": {
                    "type": "object",
                    "default": {"title": "Untitled", "$id": "p1"},
                    "examples": [{"title": "Notes"}],
                },
                "kind": {"const": {"title": "x"}},
                "pick": {"enum": [{"title": "a"}, {"title": "b"}]},
            },
        }
    )
    props = out["properties"]
    assert props["page"]["default"] == {"$id": "p1", "title": "Untitled"}
    assert props["page"]["examples"] == [{"title": "Notes"}]
    assert props["kind"]["const"] == {"title": "x"}
    assert props["pick"]["enum"] == [{"title": "a"}, {"title": "b"}]


def test_properties_beside_a_ref_keep_their_names() -> None:
    """Draft 2019+ allows keywords beside ``$ref``; a property named ``title`` there is a
    property, not an annotation."""
    out = normalize_schema(
        {
            "type": "object",
            "$defs": {"Base": {"type": "object", "required": ["title"]}},
            "properties": {
                "doc": {
                    "$ref": "#/$defs/Base",
                    "title": "Doc",
                    "properties": {"title": {"type": "string", "title": "Title"}},
                }
            },
        }
    )
    assert out["properties"]["doc"] == {
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "type": "object",
    }


def test_boolean_subschemas_become_objects_the_validator_reads() -> None:
    """``true``/``false`` are valid JSON Schemas; left as booleans they crash argument
    validation (the agent's turn) instead of validating."""
    tool_schema = {
        "type": "object",
        "properties": {"anything": True, "never": False, "either": {"anyOf": [True, False]}},
    }
    out = normalize_schema(tool_schema)
    assert out["properties"] == {
        "anything": {},
        "either": {"anyOf": [{}, {"not": {}}]},
        "never": {"not": {}},
    }
    from reasonix.tools.registry import validate_arguments

    assert validate_arguments(out, {"anything": [1, 2], "either": "x"}) == []
