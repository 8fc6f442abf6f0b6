"""langchain-tests' async standard tests are plain ``async def`` methods (LangChain runs them with pytest-asyncio's
auto mode); here they are marked for pytest-asyncio as they are collected, which is all this file does."""
from __future__ import annotations

import inspect

import pytest


def pytest_pycollect_makeitem(collector, name, obj):
    if inspect.iscoroutinefunction(obj) and collector.funcnamefilter(name):
        pytest.mark.asyncio(obj)
    return None  # collection goes on as usual
