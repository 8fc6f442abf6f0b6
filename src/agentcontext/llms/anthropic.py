"""Anthropic's Messages API (``POST /v1/messages``).

System messages go to the top-level ``system`` field; ``max_tokens`` is required by the API (default 1024).
JSON output uses a forced tool call: the schema is the tool's ``input_schema`` (a non-object schema is
wrapped in ``{"value": ...}`` and unwrapped again), so the reply is structured by the API rather than by
asking nicely; it is still checked against the schema here.
"""
from __future__ import annotations

import json
import os
from typing import Any

import httpx

from ..errors import ProviderError
from .base import BaseProvider, Completion, Message, Usage, count
from .transport import Transport

TOOL = "respond"
API_VERSION = "2023-06-01"


class Anthropic(BaseProvider):
    provider = "anthropic"
    path = "/v1/messages"

    def __init__(self, model: str = "claude-3-5-haiku-latest", *, api_key: str | None = None,
                 base_url: str | None = None, version: str = API_VERSION, timeout: float | httpx.Timeout = 60.0,
                 max_retries: int = 2, backoff: float = 0.5, max_backoff: float = 8.0, max_retry_after: float = 60.0,
                 deadline: float | None = 120.0,
                 headers: dict[str, str] | None = None, max_tokens: int = 1024, temperature: float | None = None,
                 **params: Any) -> None:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderError("anthropic: no API key. Pass api_key=... or set ANTHROPIC_API_KEY",
                                provider="anthropic", status=None, reason="no_api_key", env="ANTHROPIC_API_KEY")
        url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")
        url = url[:-3] if url.endswith("/v1") else url
        sent = {"x-api-key": key, "anthropic-version": version, "Accept": "application/json", **(headers or {})}
        transport = Transport(self.provider, url, sent, timeout=timeout, max_retries=max_retries, backoff=backoff,
                              max_backoff=max_backoff, max_retry_after=max_retry_after, deadline=deadline,
                              key_env="ANTHROPIC_API_KEY", secret=key)
        super().__init__(model, transport, max_tokens=max_tokens, temperature=temperature, **params)

    def _request(self, messages: list[Message], *, max_tokens: int | None, temperature: float | None,
                 stop: list[str] | None, json_schema: dict[str, Any] | None,
                 options: dict[str, Any]) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {**options, "model": self.model, "max_tokens": int(max_tokens or 1024),
                                "messages": [{"role": m.role, "content": m.content}
                                             for m in messages if m.role != "system"]}
        if system:
            body["system"] = system
        if temperature is not None:
            body["temperature"] = float(temperature)
        if stop:
            body["stop_sequences"] = stop
        if json_schema is not None:
            body["tools"] = [{"name": TOOL, "description": "Give the answer in this structure.",
                              "input_schema": _tool_schema(json_schema)}]
            body["tool_choice"] = {"type": "tool", "name": TOOL}
        return body

    def _parse(self, raw: dict[str, Any], json_schema: dict[str, Any] | None) -> Completion:
        blocks = raw.get("content")
        if not isinstance(blocks, list):
            raise self._malformed("no 'content' list", raw)
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        thinking = "".join(b.get("thinking", "") for b in blocks if isinstance(b, dict) and b.get("type") == "thinking")
        if json_schema is not None:
            calls = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == TOOL]
            if calls:  # the structured answer; base.complete checks it against the schema
                value = calls[0].get("input")
                if _wrapped(json_schema) and isinstance(value, dict):
                    value = value.get("value")
                text = json.dumps(value)
        if raw.get("stop_reason") == "refusal" and not text:
            raise ProviderError(f"anthropic model {self.model!r} refused to answer", provider=self.provider, status=200,
                                reason="refused", model=self.model, base_url=self.base_url)
        usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else {}
        return Completion(text=text, raw=raw, provider=self.provider, model=str(raw.get("model") or self.model),
                          usage=Usage(count(usage.get("input_tokens")), count(usage.get("output_tokens"))),
                          finish_reason=raw.get("stop_reason"), reasoning=thinking or None)


def _wrapped(schema: dict[str, Any]) -> bool:
    return schema.get("type") != "object"


def _tool_schema(schema: dict[str, Any]) -> dict[str, Any]:
    if not _wrapped(schema):
        return schema
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}

