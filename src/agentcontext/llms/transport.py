"""One HTTP POST with timeouts, retries and errors that say what to do (httpx underneath).

Retried: connection failures, timeouts, 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" too), up to
``max_retries`` more attempts. The wait is the server's ``Retry-After`` (seconds or an HTTP date;
``retry-after-ms`` too) when it sends one, else ``backoff * 2**n`` with up to 25% jitter, capped at
``max_backoff``. A ``Retry-After`` longer than ``max_retry_after`` is not slept through: the error is raised at
once with ``retry_after`` in its data, so a caller never hangs for an hour.

``deadline`` bounds the whole call, every attempt and wait included (default 120 s): each attempt's timeouts are cut
to what is left of it, no retry starts that could not finish in it, and the error says so with both figures. Without
it, a hung server took ``timeout`` x (``max_retries`` + 1) plus the waits (185 s with the defaults) to fail.
"""
from __future__ import annotations

import email.utils
import json
import random
import time
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import httpx

from ..errors import ProviderError

RETRY_STATUSES = frozenset({408, 409, 429})


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a response asks for, in seconds, or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


class Transport:
    """POSTs JSON to ``base_url + path`` for one provider; every failure is a ``ProviderError``."""

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str] | None = None, *,
                 timeout: float | httpx.Timeout = 60.0, max_retries: int = 2, backoff: float = 0.5,
                 max_backoff: float = 8.0, max_retry_after: float = 60.0, key_env: str | None = None,
                 secret: str | None = None, sleep: Callable[[float], None] = time.sleep,
                 deadline: float | None = 120.0) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline must be > 0 seconds (or None for no total limit)")
        self.deadline = None if deadline is None else float(deadline)
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        if not isinstance(timeout, httpx.Timeout):
            timeout = httpx.Timeout(float(timeout), connect=min(float(timeout), 10.0))
        self.timeout = timeout
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.key_env = key_env
        self._secret = secret
        self._sleep = sleep
        self._client = httpx.Client(headers=dict(headers or {}), timeout=self.timeout, follow_redirects=False)

    def close(self) -> None:
        self._client.close()

    def post_json(self, path: str, body: dict[str, Any], *, model: str | None = None) -> tuple[dict[str, Any], int]:
        """(the decoded JSON reply, how many attempts it took)."""
        url = self.base_url + path
        attempt = 0
        started = time.monotonic()
        while True:
            attempt += 1
            wait: float | None = None
            left = self._left(started)
            try:
                response = self._client.post(url, json=body, timeout=self._attempt_timeout(left))
            except httpx.TimeoutException as exc:
                if self._left(started) is not None and self._left(started) <= 0.05:
                    raise self._deadline_error(url, model, attempt, type(exc).__name__) from None
                failure = self._error(f"{self.provider} did not answer within the timeout "
                                      f"({_seconds(self.timeout)}s) at {url}: raise timeout=..., send less context, "
                                      "or check the server's load", reason="timeout", model=model,
                                      attempts=attempt, detail=type(exc).__name__, deadline=self.deadline)
            except httpx.TransportError as exc:
                failure = self._error(f"cannot reach {self.provider} at {self.base_url} ({exc}): is the server "
                                      "running and is base_url right? (local servers: `ollama serve`, "
                                      "`llama-server`, `vllm serve`; hosted: check the network or proxy)",
                                      reason="unreachable", model=model, attempts=attempt,
                                      detail=type(exc).__name__)
            else:
                if 200 <= response.status_code < 300:
                    return self._decode(response, model, attempt), attempt
                failure = self._status_error(response, model, attempt)
                if not self._retryable(response.status_code):
                    raise failure
                wait = retry_after_seconds(response.headers)
                if wait is not None and wait > self.max_retry_after:
                    raise self._status_error(response, model, attempt,
                                             note=f" (the server asks to wait {wait:.0f}s, longer than "
                                                  f"max_retry_after={self.max_retry_after:.0f}s: not retried)")
            if attempt > self.max_retries:
                raise failure
            if wait is None:
                wait = min(self.max_backoff, self.backoff * (2 ** (attempt - 1))) * (1 + 0.25 * random.random())
            wait = min(wait, self.max_retry_after)
            left = self._left(started)
            if left is not None and left <= wait + 0.05:  # no time for another attempt: say so, with the last failure
                raise self._deadline_error(url, model, attempt, str(failure))
            self._sleep(wait)

    # --- the total deadline ----------------------------------------------------------------
    def _left(self, started: float) -> float | None:
        return None if self.deadline is None else self.deadline - (time.monotonic() - started)

    def _attempt_timeout(self, left: float | None) -> httpx.Timeout:
        """The transport's timeouts, each cut to what is left of the deadline."""
        if left is None:
            return self.timeout
        left = max(left, 0.01)
        t = self.timeout
        return httpx.Timeout(connect=_cut(t.connect, left), read=_cut(t.read, left), write=_cut(t.write, left),
                             pool=_cut(t.pool, left))

    def _deadline_error(self, url: str, model: str | None, attempts: int, last: str) -> ProviderError:
        return self._error(f"{self.provider} gave no answer within the total deadline of {self.deadline:g}s "
                           f"({attempts} attempt(s), each allowed up to {_seconds(self.timeout)}s) at {url}: raise "
                           "deadline=... (or timeout=... / max_retries=...), send less context, or check the server's "
                           f"load. Last failure: {last}", reason="timeout", model=model, attempts=attempts,
                           deadline=self.deadline, detail=last)

    # --- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _retryable(status: int) -> bool:
        return status in RETRY_STATUSES or status >= 500

    def _decode(self, response: httpx.Response, model: str | None, attempt: int) -> dict[str, Any]:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):
            raise self._error(f"{self.provider} answered HTTP {response.status_code} but not with a JSON object "
                              f"({self._redact(response.text[:120])!r}): check that base_url points at the API "
                              "(OpenAI-compatible servers serve /v1/chat/completions)", reason="malformed_output",
                              status=response.status_code, model=model, attempts=attempt)
        return data

    def _status_error(self, response: httpx.Response, model: str | None, attempt: int,
                      note: str = "") -> ProviderError:
        status = response.status_code
        detail = self._redact(_detail(response))
        said = f": {detail}" if detail else ""
        key = f"set {self.key_env} or pass api_key=..." if self.key_env else "pass api_key=..."
        if status in (401, 403):
            reason = "auth"
            todo = (f"{self.provider} rejected the API key (HTTP {status}){said}. Check the key: {key}"
                    + (f"; the key may not have access to model {model!r}" if status == 403 and model else ""))
        elif status == 404:
            reason = "not_found"
            todo = (f"{self.provider} has no such endpoint or model (HTTP 404 for {self.base_url}, model "
                    f"{model!r}){said}. Check base_url (OpenAI-compatible servers end in /v1) and the model name")
        elif status == 429:
            reason = "rate_limited"
            todo = (f"{self.provider} rate-limited the request (HTTP 429) after {attempt} attempt(s){said}. Wait and "
                    "retry, lower the request rate, or raise max_retries")
        elif status >= 500:
            reason = "server_error"
            todo = (f"{self.provider} failed with HTTP {status} after {attempt} attempt(s){said}. The provider is "
                    "having trouble: retry later or raise max_retries")
        elif 300 <= status < 400:
            reason = "redirect"
            todo = (f"{self.provider} redirected the request (HTTP {status} to {response.headers.get('location')!r}); "
                    "set base_url to the final address")
        elif status == 413:
            reason = "too_large"
            todo = f"{self.provider} refused a request this large (HTTP 413){said}. Send less context"
        else:
            reason = "bad_request"
            todo = (f"{self.provider} rejected the request (HTTP {status}){said}. Check the model name and the "
                    "parameters; for JSON output on a server without json_schema support use json_mode='json_object' "
                    "or 'prompt'")
        retry_after = retry_after_seconds(response.headers)
        extra = {"retry_after": retry_after} if retry_after is not None else {}
        return self._error(todo + note, reason=reason, status=status, model=model, attempts=attempt, detail=detail,
                           **extra)

    def _error(self, message: str, *, reason: str, model: str | None, attempts: int, status: int | None = None,
               **data: Any) -> ProviderError:
        return ProviderError(message, provider=self.provider, status=status, reason=reason, model=model,
                             base_url=self.base_url, attempts=attempts, **data)

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _detail(response: httpx.Response) -> str:
    """The provider's own error message (OpenAI ``{"error": {"message"}}``, Anthropic, or plain text)."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text.strip()[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or json.dumps(err)[:300])[:300]
        return str(err)[:300]
    return json.dumps(data)[:300]


def _cut(value: float | None, left: float) -> float:
    return left if value is None else min(value, left)


def _seconds(timeout: httpx.Timeout) -> Any:
    return timeout.read if timeout.read is not None else "no"
