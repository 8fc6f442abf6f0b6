"""Templates and the few formatting helpers pages share: Jinja2 (autoescaped), URLs, sanitised Markdown."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

HERE = Path(__file__).resolve().parent
# Raw HTML in a doc is shown as text, never rendered; link targets go through markdown-it's validateLink,
# which refuses javascript:, vbscript:, file: and non-image data: URLs. The page's CSP blocks remote images.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def markdown(text: str) -> Markup:
    return Markup(_md.render(text or ""))  # noqa: S704  (html disabled above: the output is escaped)


def seg(value: str) -> str:
    """One URL path segment (pack names keep their colon, selectors their dots)."""
    return quote(str(value), safe=":@")


def pack_url(pack: str, *parts: str, **query: Any) -> str:
    url = "/packs/" + seg(pack) + "".join("/" + seg(p) for p in parts)
    return with_query(url, **query)


def doc_url(pack: str, selector: str, *parts: str, **query: Any) -> str:
    return pack_url(pack, "docs", selector, *parts, **query)


def with_query(url: str, **query: Any) -> str:
    pairs = [(k, v) for k, v in query.items() if v not in (None, "", False)]
    return url + ("?" + urlencode(pairs, doseq=True) if pairs else "")


def as_json(value: Any) -> Markup:
    """JSON for a <script type="application/json"> block: '<', '>' and '&' escaped so no tag can close it."""
    text = json.dumps(value, separators=(",", ":"), default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def short_time(value: Any) -> str:
    text = str(value or "")
    return text[:19].replace("T", " ") if text else ""


env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                  trim_blocks=True, lstrip_blocks=True)
env.globals.update(pack_url=pack_url, doc_url=doc_url, with_query=with_query)
env.filters.update(markdown=markdown, as_json=as_json, short_time=short_time, seg=seg)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    session = request.scope.get("session")
    html = env.get_template(template).render(request=request, session=session,
                                             csrf=session.csrf if session else "", **context)
    return HTMLResponse(html, status_code=status)
