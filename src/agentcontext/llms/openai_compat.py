"""The OpenAI chat-completions wire format, and the servers that speak it (by ``base_url``).

``OpenAICompatible(base_url=..., model=...)`` talks to any of them; the presets only fill in the address,
the environment variable holding the key, and the JSON mode the service is known to accept:

| class            | default base_url                          | key from             | json_mode   |
|------------------|-------------------------------------------|----------------------|-------------|
| OpenAI           | https://api.openai.com/v1 (OPENAI_BASE_URL)| OPENAI_API_KEY       | json_schema |
| Groq             | https://api.groq.com/openai/v1            | GROQ_API_KEY         | json_object |
| Together         | https://api.together.xyz/v1               | TOGETHER_API_KEY     | json_object |
| OpenRouter       | https://openrouter.ai/api/v1              | OPENROUTER_API_KEY   | json_object |
| Ollama           | http://127.0.0.1:11434/v1 (OLLAMA_HOST)   | none                 | json_schema |
| VLLM             | http://127.0.0.1:8000/v1                  | VLLM_API_KEY, if set | json_schema |
| LlamaCpp         | http://127.0.0.1:8080/v1                  | LLAMA_API_KEY, if set| json_schema |
| LMStudio         | http://127.0.0.1:1234/v1                  | none                 | json_schema |

``OpenAICompatible`` itself reads no key from the environment (sending ``OPENAI_API_KEY`` to an arbitrary
server would leak it): pass ``api_key=`` or name the variable with ``api_key_env=``.
JSON modes: ``json_schema`` sends ``response_format: {"type": "json_schema", ...}``, ``json_object`` sends
``{"type": "json_object"}``, ``prompt`` sends none; all three also put the schema in the system prompt and
check the reply against it.
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import ProviderError, ValidationError
from .base import BaseProvider, Completion, Message, Usage, count
from .transport import Transport

JSON_MODES = ("json_schema", "json_object", "prompt")


class OpenAICompatible(BaseProvider):
    """Any server with ``POST {base_url}/chat/completions`` in OpenAI's shape."""

    provider = "openai-compatible"
    path = "/chat/completions"
    default_base_url: str | None = None
    base_url_env: str | None = None
    key_env: str | None = None
    needs_key = False
    default_model: str | None = None
    default_json_mode = "json_schema"
    max_tokens_field = "max_tokens"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str | None = None, json_mode: str | None = None,
                 timeout: float | httpx.Timeout = 60.0, max_retries: int = 2, backoff: float = 0.5,
                 max_backoff: float = 8.0, max_retry_after: float = 60.0, deadline: float | None = 120.0,
                 headers: dict[str, str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None, **params: Any) -> None:
        url = base_url or (os.environ.get(self.base_url_env) if self.base_url_env else None) or self.default_base_url
        if not url:
            raise ValidationError(f"{self.provider}: pass base_url=... (for example http://127.0.0.1:8000/v1)",
                                  provider=self.provider)
        url = self._normalize_base_url(url)
        env = api_key_env or self.key_env
        key = api_key or (os.environ.get(env) if env else None)
        if self.needs_key and not key:
            raise ProviderError(f"{self.provider}: no API key. Pass api_key=... or set {env}", provider=self.provider,
                                status=None, reason="no_api_key", env=env)
        mode = json_mode or self.default_json_mode
        if mode not in JSON_MODES:
            raise ValidationError(f"json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}", json_mode=mode)
        self.json_mode = mode
        sent = {"Accept": "application/json", **(headers or {})}
        if key:
            sent["Authorization"] = f"Bearer {key}"
        transport = Transport(self.provider, url, sent, timeout=timeout, max_retries=max_retries, backoff=backoff,
                              max_backoff=max_backoff, max_retry_after=max_retry_after, deadline=deadline,
                              key_env=env, secret=key)
        super().__init__(model or self.default_model or "", transport, max_tokens=max_tokens,
                         temperature=temperature, **params)

    @staticmethod
    def _normalize_base_url(url: str) -> str:
        if "://" not in url:
            raise ValidationError(f"base_url {url!r} needs a scheme, e.g. http://{url}", base_url=url)
        return url.rstrip("/")

    # --- wire format -----------------------------------------------------------------------
    def _request(self, messages: list[Message], *, max_tokens: int | None, temperature: float | None,
                 stop: list[str] | None, json_schema: dict[str, Any] | None,
                 options: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {**options, "model": self.model,
                                "messages": [{"role": m.role, "content": m.content} for m in messages]}
        if max_tokens is not None:
            body[self.max_tokens_field] = int(max_tokens)
        if temperature is not None:
            body["temperature"] = float(temperature)
        if stop:
            body["stop"] = stop
        if json_schema is not None and self.json_mode == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "response", "schema": json_schema}}
        elif json_schema is not None and self.json_mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _parse(self, raw: dict[str, Any], json_schema: dict[str, Any] | None) -> Completion:
        choices = raw.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._malformed("no 'choices'", raw)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._malformed("no 'choices[0].message'", raw)
        content = message.get("content")
        if isinstance(content, list):  # some servers send content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise self._malformed("'content' is not text", raw)
        if not content and message.get("refusal"):
            raise ProviderError(f"{self.provider} model {self.model!r} refused: {message['refusal']}",
                                provider=self.provider, status=200, reason="refused", model=self.model,
                                base_url=self.base_url, refusal=str(message["refusal"]))
        usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else {}
        return Completion(text=content or "", raw=raw, provider=self.provider,
                          model=str(raw.get("model") or self.model),
                          usage=Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))),
                          finish_reason=choice.get("finish_reason"),
                          reasoning=message.get("reasoning_content") or message.get("reasoning") or None)



class OpenAI(OpenAICompatible):
    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    base_url_env = "OPENAI_BASE_URL"
    key_env = "OPENAI_API_KEY"
    needs_key = True
    default_model = "gpt-4o-mini"
    max_tokens_field = "max_completion_tokens"  # o-series models reject max_tokens


class Groq(OpenAICompatible):
    provider = "groq"
    default_base_url = "https://api.groq.com/openai/v1"
    base_url_env = "GROQ_BASE_URL"
    key_env = "GROQ_API_KEY"
    needs_key = True
    default_model = "llama-3.3-70b-versatile"
    default_json_mode = "json_object"  # json_schema only on some Groq models


class Together(OpenAICompatible):
    provider = "together"
    default_base_url = "https://api.together.xyz/v1"
    key_env = "TOGETHER_API_KEY"
    needs_key = True
    default_json_mode = "json_object"


class OpenRouter(OpenAICompatible):
    provider = "openrouter"
    default_base_url = "https://openrouter.ai/api/v1"
    key_env = "OPENROUTER_API_KEY"
    needs_key = True
    default_json_mode = "json_object"


class Ollama(OpenAICompatible):
    """Ollama's OpenAI-compatible endpoint; ``base_url`` may be the bare host (``http://host:11434``)."""

    provider = "ollama"
    default_base_url = "http://127.0.0.1:11434"
    base_url_env = "OLLAMA_HOST"
    default_model = "llama3.2"

    @staticmethod
    def _normalize_base_url(url: str) -> str:
        if "://" not in url:  # OLLAMA_HOST is often host:port
            url = "http://" + url
        url = url.rstrip("/")
        return url if urlsplit(url).path not in ("", "/") else url + "/v1"


class VLLM(OpenAICompatible):
    provider = "vllm"
    default_base_url = "http://127.0.0.1:8000/v1"
    key_env = "VLLM_API_KEY"


class LlamaCpp(OpenAICompatible):
    provider = "llama.cpp"
    default_base_url = "http://127.0.0.1:8080/v1"
    key_env = "LLAMA_API_KEY"
    default_model = "default"  # llama-server answers with whatever model it loaded


class LMStudio(OpenAICompatible):
    provider = "lmstudio"
    default_base_url = "http://127.0.0.1:1234/v1"
