"""JSON Schema pieces for the MCP tools: output schemas that say what a result really holds, and the few
input types pydantic cannot describe portably.

Output schemas are the contract a client validates ``structuredContent`` against (the TypeScript SDK does,
with Ajv), so they declare every field a tool returns, with its real type, and list as required only the
fields that are always there. They stay open (no ``additionalProperties: false``) so a client built today
keeps working when a field is added; tests/test_mcp_schemas.py checks that every field a tool returns is
declared. Every subschema carries a validation keyword and a single ``type`` (unions are ``anyOf``), which
is what the MCP Inspector's schema portability check asks for.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, JsonValue, WithJsonSchema

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
ANY_JSON: dict[str, Any] = {"anyOf": [{"type": t} for t in ("string", "number", "boolean", "object", "array",
                                                              "null")],
                            "description": "Any JSON value."}
JSON_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": ANY_JSON,
                               "description": "Free-form JSON object."}
# The largest integer every JSON client reads exactly (JavaScript's Number.MAX_SAFE_INTEGER); also far below
# SQLite's and PostgreSQL's 64-bit limits, so a bounded argument never overflows a store.
MAX_INT = 2**53 - 1


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


STRINGS = array(STR)


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object schema: ``required`` fields are always present, ``optional`` ones may be absent."""
    schema: dict[str, Any] = {"type": "object", "properties": {**required, **(optional or {})}}
    if required:
        schema["required"] = list(required)
    return schema


def free_json(max_properties: int) -> Any:
    """A free-form JSON object argument (metadata): validated as JSON, described portably."""
    return Annotated[dict[str, JsonValue], Field(max_length=max_properties),
                     WithJsonSchema({**JSON_OBJECT, "maxProperties": max_properties})]
