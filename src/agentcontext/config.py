"""Where the workspace lives: explicit home (``--home``) > ``AGENTCONTEXT_URL`` > ``AGENTCONTEXT_HOME`` > the
nearest ``.agentcontext/`` found upward from the current directory."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import NotFoundError

HOME_DIR = ".agentcontext"
STORE_FILE = "store.db"
OWNER = "owner"


def find_home(start: str | Path | None = None) -> Path | None:
    """The nearest ``.agentcontext/`` folder at or above ``start`` (like git), or None."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / HOME_DIR
        if candidate.is_dir():
            return candidate
    return None


def resolve_store_url(home: str | Path | None = None, create: bool = False) -> str:
    """The store URL to open, following the precedence above; ``create`` makes a home in the cwd."""
    url = os.environ.get("AGENTCONTEXT_URL")
    if url and home is None:
        return url
    chosen = Path(home) if home else (Path(os.environ["AGENTCONTEXT_HOME"]) if os.environ.get("AGENTCONTEXT_HOME")
                                      else find_home())
    if chosen is None:
        if not create:
            raise NotFoundError("no agentcontext workspace here or above; run `agentcontext init` or set "
                                "AGENTCONTEXT_HOME", cwd=str(Path.cwd()))
        chosen = Path.cwd() / HOME_DIR
    if create:
        chosen.mkdir(parents=True, exist_ok=True)
    elif not chosen.is_dir():
        raise NotFoundError(f"workspace folder {chosen} does not exist; run `agentcontext init` there",
                            home=str(chosen))
    return f"sqlite:///{(chosen / STORE_FILE).resolve()}"
