"""LLM providers: a small protocol and clients for the OpenAI-compatible and Anthropic APIs.

```python
from agentcontext.llms import Groq, Ollama, OpenAICompatible

llm = Groq(model="llama-3.3-70b-versatile")            # key from GROQ_API_KEY
llm = Ollama(model="llama3.2")                         # http://127.0.0.1:11434, or OLLAMA_HOST
llm = OpenAICompatible(base_url="http://127.0.0.1:8000/v1", model="qwen2.5-7b")   # vLLM, llama.cpp, LM Studio...
reply = llm.complete([{"role": "user", "content": "Hi"}], max_tokens=50)
reply.text, reply.usage.total_tokens, reply.raw
facts = llm.generate_json("List two facts about Paris", {"type": "array", "items": {"type": "string"}})
```

The protocol (``LLMProvider``) is one method, ``complete(messages, *, system, max_tokens, temperature, stop,
json_schema, **params) -> Completion`` with ``text``, ``usage`` (as reported; ``None`` when not),
``raw`` (the response body), ``finish_reason`` and, for JSON output, ``data`` (parsed and checked
against the schema). Anything with that method can be passed where a provider is asked for.

Every failure is a ``ProviderError`` (in ``agentcontext.errors``) naming the provider, the HTTP status,
a ``reason`` and what to do; an empty reply is an error too, never a silent ``""``. Retries: see
``transport.py``.

Why httpx and not the vendors' SDKs: one small, well-kept HTTP client (already a dependency of the MCP
SDK) speaks both wire formats, and the OpenAI one alone covers OpenAI, Groq, Together, OpenRouter, vLLM,
Ollama, llama.cpp server and LM Studio. The SDKs would add two large dependency trees, each with its own
retry, timeout and error classes to translate, for two POST requests; and a local scripted HTTP server can
test every path (retries, Retry-After, bad keys, malformed bodies) without reaching the network.
"""
from __future__ import annotations

from .anthropic import Anthropic
from .base import BaseProvider, Completion, LLMProvider, Message, Usage
from .openai_compat import VLLM, Groq, LlamaCpp, LMStudio, Ollama, OpenAI, OpenAICompatible, OpenRouter, Together

__all__ = [
    "Anthropic", "BaseProvider", "Completion", "Groq", "LLMProvider", "LlamaCpp", "LMStudio", "Message", "Ollama",
    "OpenAI", "OpenAICompatible", "OpenRouter", "Together", "Usage", "VLLM",
]
