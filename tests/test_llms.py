"""LLM providers against scripted servers on 127.0.0.1: requests as each API expects them, retries with
Retry-After, and a ProviderError that says what to do for every way a provider fails."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from agentcontext.errors import AgentContextError, ProviderError, ValidationError
from agentcontext.llms import (Anthropic, Completion, Groq, LLMProvider, Ollama, OpenAI, OpenAICompatible,
                               OpenRouter, Together)
from agentcontext.llms.transport import retry_after_seconds
from tests.llm_server import (Reply, ScriptedServer, anthropic_reply, closed_port_url, openai_error,
                              openai_reply)

FAST = {"backoff": 0.01, "max_backoff": 0.05}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "pop": {"type": "integer"}},
          "required": ["city", "pop"]}


def compat(server, **kw):
    return OpenAICompatible(base_url=server.url + "/v1", model="m", **{**FAST, **kw})


# --- the OpenAI-compatible wire format -----------------------------------------------------------
def test_openai_compatible_round_trip_sends_messages_and_returns_text_usage_raw():
    with ScriptedServer([openai_reply("Paris.", usage=(11, 2))]) as server:
        llm = compat(server, api_key="sk-local", temperature=0.1, top_p=0.9)
        out = llm.complete([{"role": "user", "content": "Capital of France?"}], system="Be brief.", max_tokens=20,
                           stop=["\n\n"])
    assert isinstance(out, Completion) and isinstance(llm, LLMProvider)
    assert out.text == "Paris." and out.finish_reason == "stop" and out.attempts == 1
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.total_tokens) == (11, 2, 13)
    assert out.raw["choices"][0]["message"]["content"] == "Paris."
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-local"
    assert req.body["model"] == "m" and req.body["max_tokens"] == 20 and req.body["stop"] == ["\n\n"]
    assert req.body["temperature"] == 0.1 and req.body["top_p"] == 0.9
    assert req.body["messages"] == [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Capital of France?"}]


def test_generate_takes_a_prompt_string_and_usage_may_be_unreported():
    with ScriptedServer([openai_reply("ok", usage=None)]) as server:
        llm = compat(server)
        assert llm.generate("hello") == "ok"
        assert "authorization" not in server.requests[0].headers  # no key given, none sent
    with ScriptedServer([openai_reply("ok", usage=None)]) as server:
        out = compat(server).complete("hello")
    assert out.usage.input_tokens is None and out.usage.total_tokens is None  # unknown, not a made-up 0


def test_presets_read_keys_and_addresses_from_the_environment(monkeypatch):
    with ScriptedServer([openai_reply("a"), openai_reply("b"), openai_reply("c")]) as server:
        monkeypatch.setenv("GROQ_API_KEY", "gsk-env")
        monkeypatch.setenv("GROQ_BASE_URL", server.url + "/openai/v1")
        groq = Groq(model="llama-3.3-70b-versatile", api_key=None, **FAST)  # the seed passes os.getenv(...) = None
        assert groq.generate("x") == "a"
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert OpenAI(**FAST).complete("y", max_tokens=5).text == "b"
        monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))  # OLLAMA_HOST is host:port
        assert Ollama(model="llama3.2").generate("z") == "c"
    groq_req, openai_req, ollama_req = server.requests
    assert groq_req.path == "/openai/v1/chat/completions" and groq_req.headers["authorization"] == "Bearer gsk-env"
    assert groq_req.body["model"] == "llama-3.3-70b-versatile"
    assert openai_req.body["max_completion_tokens"] == 5 and "max_tokens" not in openai_req.body
    assert openai_req.body["model"] == "gpt-4o-mini"
    assert ollama_req.path == "/v1/chat/completions" and "authorization" not in ollama_req.headers


def test_ollama_takes_a_bare_host_as_base_url():
    with ScriptedServer([openai_reply("hi")]) as server:
        Ollama(model="llama3.2", base_url=server.url).generate("x")
    assert server.requests[0].path == "/v1/chat/completions"


def test_a_generic_server_never_gets_the_openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with ScriptedServer([openai_reply("hi"), openai_reply("hi")]) as server:
        compat(server).generate("x")
        monkeypatch.setenv("MY_VLLM_KEY", "v-key")
        compat(server, api_key_env="MY_VLLM_KEY").generate("x")
    assert "authorization" not in server.requests[0].headers
    assert server.requests[1].headers["authorization"] == "Bearer v-key"


@pytest.mark.parametrize("cls, env", [(Groq, "GROQ_API_KEY"), (OpenAI, "OPENAI_API_KEY"),
                                      (Together, "TOGETHER_API_KEY"), (OpenRouter, "OPENROUTER_API_KEY"),
                                      (Anthropic, "ANTHROPIC_API_KEY")])
def test_hosted_providers_without_a_key_fail_at_construction(monkeypatch, cls, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ProviderError) as err:
        cls(model="x")
    assert err.value.reason == "no_api_key" and env in str(err.value)
    assert isinstance(err.value, AgentContextError)


def test_bad_messages_and_options_are_validation_errors():
    llm = OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m")
    for bad in ([{"role": "robot", "content": "x"}], [{"role": "user"}], [], 42, [{"role": "system", "content": "s"}]):
        with pytest.raises(ValidationError):
            llm.complete(bad)
    with pytest.raises(ValidationError):
        llm.complete("x", json_schema={"type": "no-such-type"})
    with pytest.raises(ValidationError):
        OpenAICompatible(model="m")  # no base_url
    with pytest.raises(ValidationError):
        OpenAICompatible(base_url="127.0.0.1:8000/v1", model="m")  # no scheme
    with pytest.raises(ValidationError):
        OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m", json_mode="xml")
    assert "sk-" not in repr(OpenAICompatible(base_url="http://h/v1", model="m", api_key="sk-hidden"))


# --- errors ------------------------------------------------------------------------------------------
def test_a_rejected_key_says_so_without_retrying_or_echoing_the_key():
    with ScriptedServer([openai_error(401, "Invalid API Key: sk-bad-key-123")]) as server:
        monkey = Groq(model="llama", api_key="sk-bad-key-123", base_url=server.url + "/v1", **FAST)
        with pytest.raises(ProviderError) as err:
            monkey.generate("x")
    e = err.value
    assert (e.provider, e.status, e.reason, e.data["attempts"]) == ("groq", 401, "auth", 1)
    assert "rejected the API key" in str(e) and "GROQ_API_KEY" in str(e) and "Invalid API Key" in str(e)
    assert "sk-bad-key-123" not in str(e) and "sk-bad-key-123" not in repr(e.data)
    assert len(server.requests) == 1


def test_429_is_retried_after_the_servers_retry_after():
    with ScriptedServer([openai_error(429, "slow down", **{"Retry-After": "0.3"}), openai_reply("done")]) as server:
        out = compat(server).complete("x")
    assert out.text == "done" and out.attempts == 2
    first, second = server.requests
    assert second.at - first.at >= 0.3
    assert first.body == second.body


def test_5xx_is_retried_with_backoff_then_reported_with_the_status():
    with ScriptedServer([openai_error(503, "overloaded")] * 3) as server:
        with pytest.raises(ProviderError) as err:
            compat(server, max_retries=2).generate("x")
    assert len(server.requests) == 3
    assert (err.value.status, err.value.reason, err.value.data["attempts"]) == (503, "server_error", 3)
    assert "after 3 attempt" in str(err.value)


def test_a_retry_after_beyond_the_cap_is_raised_at_once():
    with ScriptedServer([openai_error(429, "quota", **{"Retry-After": "3600"})]) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError) as err:
            compat(server, max_retry_after=5).generate("x")
    assert time.monotonic() - started < 2 and len(server.requests) == 1
    assert err.value.reason == "rate_limited" and err.value.data["retry_after"] == 3600


@pytest.mark.parametrize("status, reason", [(400, "bad_request"), (404, "not_found"), (413, "too_large"),
                                            (302, "redirect")])
def test_client_errors_are_not_retried(status, reason):
    with ScriptedServer([Reply(status, {"error": {"message": "nope"}}, headers={"Location": "http://elsewhere/"})]
                        ) as server:
        with pytest.raises(ProviderError) as err:
            compat(server).generate("x")
    assert (err.value.status, err.value.reason) == (status, reason) and len(server.requests) == 1


def test_an_unreachable_server_is_named_with_what_to_check():
    url = closed_port_url()
    with pytest.raises(ProviderError) as err:
        OpenAICompatible(base_url=url + "/v1", model="m", max_retries=1, **FAST).generate("x")
    assert err.value.reason == "unreachable" and err.value.status is None and err.value.data["attempts"] == 2
    assert url in str(err.value) and "running" in str(err.value)


def test_a_slow_server_times_out():
    with ScriptedServer([Reply(delay=1.0, json={})]) as server:
        with pytest.raises(ProviderError) as err:
            compat(server, timeout=0.2, max_retries=0).generate("x")
    assert err.value.reason == "timeout" and "timeout" in str(err.value)


def test_a_hung_server_fails_within_the_total_deadline_and_says_so():
    """Issue 26 s4: a hung LLM took 185 s with the defaults (60 s x 3 attempts) and the message named only 60 s."""
    with ScriptedServer([Reply(delay=2.0, json={})] * 6) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError) as err:
            compat(server, timeout=0.6, max_retries=5, deadline=1.0).generate("x")
        took = time.monotonic() - started
    message = str(err.value)
    assert took < 1.6, took  # without the deadline: 6 attempts x 0.6 s
    assert err.value.reason == "timeout" and err.value.data["deadline"] == 1.0
    assert "total deadline of 1s" in message and "0.6s" in message and "deadline=" in message
    assert 1 <= err.value.data["attempts"] <= 2


def test_the_deadline_is_a_parameter_of_both_providers():
    assert OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m").transport.deadline == 120.0
    assert OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m", deadline=None).transport.deadline is None
    with pytest.raises(ValueError):
        OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m", deadline=0)


@pytest.mark.parametrize("reply", [Reply(200, body=b"<html>not an api</html>"), Reply(200, {"object": "list"}),
                                   Reply(200, {"choices": [{"message": {"content": 7}}]}),
                                   Reply(200, body=b"[1, 2]")])
def test_malformed_bodies_are_errors(reply):
    with ScriptedServer([reply]) as server:
        with pytest.raises(ProviderError) as err:
            compat(server).generate("x")
    assert err.value.reason == "malformed_output" and err.value.status == 200


@pytest.mark.parametrize("reply, hint", [(openai_reply("", finish_reason="length"), "max_tokens"),
                                         (openai_reply(None, finish_reason="stop"), "empty"),
                                         (openai_reply("  ", finish_reason="content_filter"), "filter")])
def test_an_empty_reply_is_an_error_never_a_silent_empty_answer(reply, hint):
    with ScriptedServer([reply]) as server:
        with pytest.raises(ProviderError) as err:
            compat(server).generate("x")
    assert err.value.reason == "empty_output" and hint in str(err.value)


def test_a_refusal_is_reported():
    with ScriptedServer([openai_reply(None, refusal="I can't help with that.")]) as server:
        with pytest.raises(ProviderError) as err:
            compat(server).generate("x")
    assert err.value.reason == "refused" and "can't help" in str(err.value)


def test_think_blocks_are_set_apart_from_the_answer():
    with ScriptedServer([openai_reply("<think>user wants a city</think>\nParis")]) as server:
        out = compat(server).complete("x")
    assert out.text == "Paris" and out.reasoning == "user wants a city"


# --- JSON output -------------------------------------------------------------------------------------
def test_json_schema_mode_sends_the_schema_and_returns_checked_data():
    with ScriptedServer([openai_reply('```json\n{"city": "Paris", "pop": 2100000}\n```')]) as server:
        data = compat(server).generate_json("Biggest French city?", SCHEMA)
    assert data == {"city": "Paris", "pop": 2100000}
    body = server.requests[0].body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}}
    assert body["messages"][0]["role"] == "system" and '"required": ["city", "pop"]' in body["messages"][0]["content"]


@pytest.mark.parametrize("mode, expected", [("json_object", {"type": "json_object"}), ("prompt", None)])
def test_other_json_modes(mode, expected):
    with ScriptedServer([openai_reply('Sure: {"city": "Lyon", "pop": 500000} hope that helps')]) as server:
        data = compat(server, json_mode=mode).generate_json("x", SCHEMA)
    assert data == {"city": "Lyon", "pop": 500000}
    assert server.requests[0].body.get("response_format") == expected


@pytest.mark.parametrize("text, where", [("no json here", "did not return JSON"),
                                         ('{"city": "Paris", "pop": "many"}', "at pop")])
def test_json_that_is_missing_or_off_schema_is_malformed_output(text, where):
    with ScriptedServer([openai_reply(text)]) as server:
        with pytest.raises(ProviderError) as err:
            compat(server).generate_json("x", SCHEMA)
    assert err.value.reason == "malformed_output" and where in str(err.value)


# --- Anthropic ---------------------------------------------------------------------------------------
def anthropic(server, **kw):
    return Anthropic(model="claude-x", api_key="ak-test", base_url=server.url, **{**FAST, **kw})


def test_anthropic_messages_shape():
    with ScriptedServer([anthropic_reply("Bonjour.", usage=(30, 4))]) as server:
        out = anthropic(server).complete([{"role": "system", "content": "Answer in French."},
                                          {"role": "user", "content": "Hello"}], temperature=0, stop=["END"])
    assert out.text == "Bonjour." and out.provider == "anthropic" and out.finish_reason == "end_turn"
    assert (out.usage.input_tokens, out.usage.output_tokens) == (30, 4)
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ak-test" and req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.body["system"] == "Answer in French." and req.body["max_tokens"] == 1024
    assert req.body["messages"] == [{"role": "user", "content": "Hello"}]
    assert req.body["temperature"] == 0 and req.body["stop_sequences"] == ["END"]


def test_anthropic_json_through_a_forced_tool_call():
    with ScriptedServer([anthropic_reply(tool_input={"city": "Nice", "pop": 340000}),
                         anthropic_reply(tool_input={"value": ["a", "b"]})]) as server:
        llm = anthropic(server)
        assert llm.generate_json("x", SCHEMA) == {"city": "Nice", "pop": 340000}
        assert llm.generate_json("y", {"type": "array", "items": {"type": "string"}}) == ["a", "b"]
    first, second = server.requests
    assert first.body["tools"][0]["input_schema"] == SCHEMA
    assert first.body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert second.body["tools"][0]["input_schema"]["properties"]["value"]["type"] == "array"


def test_anthropic_errors_and_overload_retries():
    auth = Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    with ScriptedServer([auth]) as server:
        with pytest.raises(ProviderError) as err:
            anthropic(server).generate("x")
    assert err.value.reason == "auth" and "invalid x-api-key" in str(err.value)
    assert "ANTHROPIC_API_KEY" in str(err.value)
    overloaded = Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with ScriptedServer([overloaded, anthropic_reply("fine")]) as server:
        assert anthropic(server).complete("x").attempts == 2
    with ScriptedServer([Reply(200, {"type": "message", "content": "oops"})]) as server:
        with pytest.raises(ProviderError) as err:
            anthropic(server).generate("x")
    assert err.value.reason == "malformed_output"


# --- Retry-After parsing -----------------------------------------------------------------------------
def test_retry_after_forms():
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert retry_after_seconds({"retry-after": "7"}) == 7
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    when = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": when}, now=now) == 30
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "-3"}) == 0
