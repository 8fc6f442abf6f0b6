"""The provider protocol and what every provider shares: messages in; text, usage and the raw response out.

A provider is anything with ``complete(messages, ...) -> Completion`` (and the ``provider`` / ``model``
names); ``BaseProvider`` adds ``generate`` (text only) and ``generate_json`` (parsed, schema-checked JSON)
on top of one provider-specific pair: ``_request`` (the body to send) and ``_parse`` (the reply).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from ..errors import ProviderError, ValidationError
from .output import check_schema, json_instruction, parse_json_output, split_thinking
from .transport import Transport

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass
class Usage:
    """Token counts as the provider reported them; ``None`` when it did not report one (never a made-up 0)."""

    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def to_dict(self) -> dict[str, int | None]:
        return {**asdict(self), "total_tokens": self.total_tokens}


@dataclass
class Completion:
    """One reply: ``text``, ``usage``, the ``raw`` response body, and ``data`` when JSON output was asked for."""

    text: str
    usage: Usage
    raw: dict[str, Any]
    provider: str
    model: str
    finish_reason: str | None = None
    data: Any = None
    reasoning: str | None = None  # a <think> block or reasoning_content the model sent apart from its answer
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def count(value: Any) -> int | None:
    """A token count from a response body, or None when the provider did not send a number."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


MessagesIn = str | Message | dict[str, Any] | Sequence[Message | dict[str, Any]]


@runtime_checkable
class LLMProvider(Protocol):
    """What ``query_with_reasoning`` and ``store(..., infer=True)`` need from a model."""

    provider: str
    model: str

    def complete(self, messages: MessagesIn, *, system: str | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, stop: Sequence[str] | None = None,
                 json_schema: dict[str, Any] | None = None, **params: Any) -> Completion: ...


def normalize_messages(messages: MessagesIn, system: str | None = None) -> list[Message]:
    """A prompt string, a Message, an OpenAI-style dict or a list of them, as a checked list of Messages."""
    if isinstance(messages, (str, Message, dict)):
        messages = [messages]
    out: list[Message] = [Message("system", system)] if system else []
    for i, m in enumerate(_iterate(messages)):
        if isinstance(m, str):
            m = Message("user", m)
        elif isinstance(m, dict):
            if not isinstance(m.get("content"), str):
                raise ValidationError(f"message {i} needs a text 'content'", index=i)
            m = Message(str(m.get("role", "user")), m["content"])
        elif not isinstance(m, Message):
            raise ValidationError(f"message {i} must be a str, a dict or a Message, not {type(m).__name__}", index=i)
        if m.role not in ROLES:
            raise ValidationError(f"message {i} has role {m.role!r}; use one of {', '.join(ROLES)}", index=i)
        out.append(m)
    if not any(m.role != "system" for m in out):
        raise ValidationError("complete() needs at least one user message")
    return out


def _iterate(messages: Any) -> Iterable[Any]:
    if not isinstance(messages, (list, tuple)):
        raise ValidationError(f"messages must be a str or a list of messages, not {type(messages).__name__}")
    return messages


class BaseProvider:
    """Shared behaviour: message checks, JSON output, the never-empty rule. Subclasses speak one wire format."""

    provider = "provider"
    path = ""

    def __init__(self, model: str, transport: Transport, *, max_tokens: int | None = None,
                 temperature: float | None = None, **params: Any) -> None:
        if not model or not isinstance(model, str):
            raise ValidationError(f"{self.provider}: pass model=... (the model name the server serves)",
                                  provider=self.provider)
        self.model = model
        self.transport = transport
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.params = params

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "BaseProvider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- the protocol ----------------------------------------------------------------------
    def complete(self, messages: MessagesIn, *, system: str | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, stop: Sequence[str] | None = None,
                 json_schema: dict[str, Any] | None = None, **params: Any) -> Completion:
        msgs = normalize_messages(messages, system)
        if json_schema is not None:
            if not isinstance(json_schema, dict):
                raise ValidationError("json_schema must be a JSON Schema dict", got=type(json_schema).__name__)
            check_schema(json_schema)
            msgs = _with_system(msgs, json_instruction(json_schema))
        options = {**self.params, **params}
        body = self._request(msgs, max_tokens=self.max_tokens if max_tokens is None else max_tokens,
                             temperature=self.temperature if temperature is None else temperature,
                             stop=list(stop) if stop else None, json_schema=json_schema, options=options)
        raw, attempts = self.transport.post_json(self.path, body, model=self.model)
        completion = self._parse(raw, json_schema)
        completion.attempts = attempts
        thinking, completion.text = split_thinking(completion.text)
        completion.reasoning = completion.reasoning or thinking
        if json_schema is not None:
            if completion.data is None:
                completion.data = parse_json_output(completion.text, json_schema, **self._error_data(completion))
        elif not completion.text.strip():
            raise self._empty(completion)
        return completion

    def generate(self, prompt: MessagesIn, **kwargs: Any) -> str:
        """The reply's text (seed 003's ``llm.generate(prompt)``)."""
        return self.complete(prompt, **kwargs).text

    def generate_json(self, prompt: MessagesIn, schema: dict[str, Any], **kwargs: Any) -> Any:
        """The reply parsed as JSON and checked against ``schema`` (a ``ProviderError`` if it does not match)."""
        return self.complete(prompt, json_schema=schema, **kwargs).data

    # --- for subclasses --------------------------------------------------------------------
    def _request(self, messages: list[Message], *, max_tokens: int | None, temperature: float | None,
                 stop: list[str] | None, json_schema: dict[str, Any] | None,
                 options: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, raw: dict[str, Any], json_schema: dict[str, Any] | None) -> Completion:
        raise NotImplementedError

    def _malformed(self, what: str, raw: Any) -> ProviderError:
        return ProviderError(f"{self.provider} returned a malformed response ({what}); the server at {self.base_url} "
                             "may not speak this API: check base_url and that it is the right provider class",
                             provider=self.provider, status=200, reason="malformed_output", model=self.model,
                             base_url=self.base_url, body=repr(raw)[:300])

    def _error_data(self, completion: Completion) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "finish_reason": completion.finish_reason}

    def _empty(self, completion: Completion) -> ProviderError:
        why = completion.finish_reason
        if why in ("length", "max_tokens"):
            hint = "it stopped at the token limit before writing any answer: raise max_tokens"
        elif why in ("content_filter", "refusal"):
            hint = "the provider's content filter withheld the answer"
        else:
            hint = f"finish_reason={why!r}; retry, or try another model"
        return ProviderError(f"{self.provider} returned an empty reply for model {self.model!r}: {hint}",
                             reason="empty_output", status=200, attempts=completion.attempts,
                             **self._error_data(completion))


def _with_system(messages: list[Message], text: str) -> list[Message]:
    """Append ``text`` to the system message (or start one), leaving the conversation as it is."""
    if messages and messages[0].role == "system":
        return [Message("system", messages[0].content + "\n\n" + text), *messages[1:]]
    return [Message("system", text), *messages]
