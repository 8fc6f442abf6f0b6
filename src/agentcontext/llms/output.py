"""What comes back from a model: JSON found in a reply and checked against a schema, <think> blocks set apart."""
from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from ..errors import ProviderError, ValidationError

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.S)
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n(.*?)\n?```\s*$", re.S)


def json_instruction(schema: dict[str, Any]) -> str:
    """The system-prompt line that asks for JSON (sent in every JSON mode; some servers need it to comply)."""
    return ("Reply with a single JSON value and nothing else (no prose, no code fence). It must validate against "
            "this JSON Schema:\n" + json.dumps(schema, sort_keys=True))


def check_schema(schema: dict[str, Any]) -> None:
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValidationError(f"json_schema is not a valid JSON Schema: {exc.message}") from None


def split_thinking(text: str) -> tuple[str | None, str]:
    """(the leading <think>...</think> block of a reasoning model, the answer after it)."""
    m = _THINK.match(text or "")
    if not m:
        return None, text or ""
    return m.group(1).strip(), text[m.end():]


def parse_json_output(text: str, schema: dict[str, Any], **error_data: Any) -> Any:
    """The JSON value in ``text`` (bare, fenced, or the first object/array in prose), valid against ``schema``.

    Raises ``ProviderError(reason="malformed_output")`` saying what was wrong; never returns None for junk.
    """
    value = _find_json(text)
    provider = error_data.get("provider", "provider")
    if value is _MISSING:
        raise ProviderError(f"{provider} did not return JSON (got {text[:120]!r}); use a model that follows "
                            "instructions, json_mode='json_schema' if the server supports it, or a lower temperature",
                            reason="malformed_output", status=200, text=text[:500], **error_data)
    errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(value), key=lambda e: e.path)
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
        raise ProviderError(f"{provider} returned JSON that does not match the schema at {where}: "
                            f"{errors[0].message}; use a stronger model or json_mode='json_schema'",
                            reason="malformed_output", status=200, text=text[:500], path=where, **error_data)
    return value


_MISSING = object()


def _find_json(text: str) -> Any:
    text = (text or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text, i)[0]
            except json.JSONDecodeError:
                continue
    return _MISSING
