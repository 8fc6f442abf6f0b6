"""The provider named by the environment: ``AGENTCONTEXT_LLM_BASE_URL`` (an OpenAI-compatible server),
``AGENTCONTEXT_LLM_MODEL`` and, if the server needs one, ``AGENTCONTEXT_LLM_API_KEY`` (read by name, never
stored or printed). Used by the console's Ask page and ``agentcontext eval locomo --rewrite``."""
from __future__ import annotations

import os
from typing import Any

ENV_BASE_URL, ENV_MODEL, ENV_KEY = "AGENTCONTEXT_LLM_BASE_URL", "AGENTCONTEXT_LLM_MODEL", "AGENTCONTEXT_LLM_API_KEY"


def configured_model() -> dict[str, str] | None:
    """The model named by the environment (base URL and model, never the key), or None."""
    base, model = os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)
    return {"base_url": base, "model": model} if base and model else None


def provider_from_env(**options: Any) -> Any:
    """An ``OpenAICompatible`` for the configured model (``options`` passed on), or None when none is set."""
    from .openai_compat import OpenAICompatible

    model = configured_model()
    if model is None:
        return None
    return OpenAICompatible(model=model["model"], base_url=model["base_url"], api_key_env=ENV_KEY, **options)
