"""Types the operations' inputs and outputs share, described portably: every JSON Schema node carries a
validation keyword and a single ``type`` (unions are ``anyOf``), which is what the MCP Inspector's portability
check asks for, and every integer is bounded to what every JSON client reads exactly."""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import Field, JsonValue, WithJsonSchema
from typing_extensions import TypedDict

# The largest integer every JSON client reads exactly (JavaScript's Number.MAX_SAFE_INTEGER); also far below
# SQLite's and PostgreSQL's 64-bit limits, so a bounded argument never overflows a store.
MAX_INT = 2**53 - 1
ANY_JSON_SCHEMA: dict[str, Any] = {"anyOf": [{"type": t} for t in ("string", "number", "boolean", "object",
                                                                    "array", "null")],
                                   "description": "Any JSON value."}
JSON_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": ANY_JSON_SCHEMA,
                                      "description": "Free-form JSON object."}

JsonObject = Annotated[dict[str, Any], WithJsonSchema(JSON_OBJECT_SCHEMA)]
AnyJson = Annotated[Any, WithJsonSchema(ANY_JSON_SCHEMA)]
Signals = Annotated[dict[str, float], Field(description="Each signal that matched and its value.")]


class ConfigEcho(TypedDict):
    """The retrieval configuration a result ran with: engine/retrieval_config.py's ``RetrievalConfig.echo`` (declared
    here so the doors' output types need not import the engine)."""

    sources: list[str]
    hybrid_alpha: float
    proximity_weight: float
    hops: int  # expansion hops that ran (0: no expansion)
    min_score: float
    rerank: bool
    ranker: str  # "linear" (the fusion), "learned" (engine/ltr.py) or "facets" (memory/facet_search.py)
    weights: str  # "default", or a short digest of the fusion weights
    truth_filter: Optional[str]  # the truth filter's session id, or None


def free_json(max_properties: int) -> Any:
    """A free-form JSON object argument (metadata): validated as JSON, described portably."""
    return Annotated[dict[str, JsonValue], Field(max_length=max_properties),
                     WithJsonSchema({**JSON_OBJECT_SCHEMA, "maxProperties": max_properties})]
