"""A node's props as PostgreSQL holds them from migration 13 (issue 23 s2): a memory's ``updated_at`` is its
``created_at`` until the memory is rewritten, the same ~45 bytes twice in every row; the row leaves it out and marks
that by the text's second character, a space (``{ "created_at": ...``). ``json.dumps`` of a dict (``props_to_json``,
what every write makes) never starts so, and JSON ignores the space, so the mark costs nothing and any JSON reader
still reads the other props. Every read that makes props (``rows.row_to_node``, the ranking's ``pg_search``, the lean
``node_briefs``, an export's text) gives ``updated_at`` back (``whole``, ``whole_text``); a SQL filter that names
``updated_at`` reads ``WHOLE_SQL``. SQLite and a store pinned to an older schema hold props as written: ``whole`` is
the plain ``json.loads`` for them (no text there starts with the mark).
"""
from __future__ import annotations

import json
from typing import Any

from ..model import json_text

MARK = "{ "  # the text of props held without their updated_at (equal to their created_at)
_to_json = json_text(sort_keys=True)  # rows.props_to_json (rows imports this module)
# SQL: a node row's props (``n.props``) as jsonb with its updated_at given back (a filter naming updated_at)
WHOLE_SQL = ("(CASE WHEN left(n.props, 2) = '{ ' THEN (n.props::jsonb) || jsonb_build_object('updated_at', "
             "(n.props::jsonb) -> 'created_at') ELSE n.props::jsonb END)")
# SQL (migration 13): props text as held, where its top-level updated_at (a string equal to its created_at) is cut
# from the text and what is left parses to the same props without it; any other text as it is
HELD_SQL = (
    "CREATE OR REPLACE FUNCTION actx_props_held(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
    "SELECT CASE WHEN t IS NULL OR left(t, 2) <> '{\"' THEN t "
    "WHEN jsonb_typeof(t::jsonb -> 'updated_at') IS DISTINCT FROM 'string' "
    "OR (t::jsonb -> 'updated_at') IS DISTINCT FROM (t::jsonb -> 'created_at') THEN t "
    "ELSE (SELECT CASE WHEN h::jsonb = t::jsonb - 'updated_at' THEN h ELSE t END FROM (SELECT '{ ' || "
    "substr(replace(t, ', \"updated_at\": ' || (t::jsonb -> 'updated_at')::text, ''), 2) AS h) x) END $$")


def held(props: dict[str, Any], text: str) -> str:
    """The text of ``props`` (``text``: ``props_to_json(props)``) as a row holds it: without ``updated_at`` and
    marked when it is a string equal to ``created_at``."""
    updated = props.get("updated_at")
    if type(updated) is not str or props.get("created_at") != updated:
        return text
    return MARK + _to_json({k: v for k, v in props.items() if k != "updated_at"})[1:]


def held_text(text: str | None) -> str | None:
    """A props text from elsewhere (an import) as a row holds it; text that is not what ``props_to_json`` makes of
    it is kept as it is."""
    if not text or not text.startswith('{"'):
        return text
    props = json.loads(text)
    return held(props, text) if isinstance(props, dict) and _to_json(props) == text else text


def whole(text: str | None) -> dict[str, Any]:
    """The props of a row's text, ``updated_at`` given back where the row left it out."""
    if not text:
        return {}
    props = json.loads(text)
    if text.startswith(MARK) and give_back(props):
        props = dict(sorted(props.items()))  # the order the written text had (its keys sorted)
    return props


def give_back(props: dict[str, Any]) -> bool:
    """``updated_at`` put back into the parsed props of a marked text (last: the caller sorts if order matters);
    whether it was."""
    if "created_at" in props and "updated_at" not in props:
        props["updated_at"] = props["created_at"]
        return True
    return False


def whole_text(text: str | None) -> str | None:
    """A row's props text as it was written (an export carries it so)."""
    return _to_json(whole(text)) if text and text.startswith(MARK) else text
