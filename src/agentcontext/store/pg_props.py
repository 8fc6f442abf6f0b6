"""A node's props as PostgreSQL holds them from migration 13 (issue 23 s2): a memory's ``updated_at`` is its
``created_at`` until the memory is rewritten, the same ~45 bytes twice in every row; the row leaves it out and marks
that by the text's second character, a space (``{ "created_at": ...``). ``json.dumps`` of a dict (``props_to_json``,
what every write makes) never starts so, and JSON ignores the space, so the mark costs nothing and any JSON reader
still reads the other props. Every read that makes props (``rows.row_to_node``, the ranking's ``pg_search``, the lean
``node_briefs``, an export's text) gives ``updated_at`` back (``whole``, ``whole_text``); a SQL filter that names
``updated_at`` reads ``WHOLE_SQL``. SQLite and a store pinned to an older schema hold props as written: ``whole`` is
the plain ``json.loads`` for them (no text there starts with the mark).

From migration 16 (issue 23 s2/s3) the props the ranking reads (``MOVED``: a memory's conversation, its time, its
pair's vector hash, the turn before it, its user) are columns of ``nodes`` when their value is a string, cut from the
props text (``split``; ``pair_hash`` as bytes, ``pg_hash``), so a ranking reads them without parsing JSON and a memory
row is ~250 bytes shorter. Every read that makes props selects ``read_sql`` (``actx_props``): the text with the moved
keys after its other keys and a tab before its closing brace (JSON whitespace; ``json.dumps`` never writes it), so it
is JSON any reader parses, and ``whole`` sorts the keys back to the order the written text had. ``node_versions``
keeps the whole text (a version moved there is read through ``read_sql``).
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from ..model import json_text
from .pg_hash import to_bytes

MARK = "{ "  # the text of props held without their updated_at (equal to their created_at)
_to_json = json_text(sort_keys=True)  # rows.props_to_json (rows imports this module)
# SQL: a node row's props (``n.props``) as jsonb with its updated_at given back (a filter naming updated_at)
WHOLE_SQL = ("(CASE WHEN left({p}, 2) = '{{ ' THEN ({p}::jsonb) || jsonb_build_object('updated_at', "
             "({p}::jsonb) -> 'created_at') ELSE {p}::jsonb END)")
# SQL (migration 13): props text as held, where its top-level updated_at (a string equal to its created_at) is cut
# from the text and what is left parses to the same props without it; any other text as it is
HELD_SQL = (
    "CREATE OR REPLACE FUNCTION actx_props_held(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
    "SELECT CASE WHEN t IS NULL OR left(t, 2) <> '{\"' THEN t "
    "WHEN jsonb_typeof(t::jsonb -> 'updated_at') IS DISTINCT FROM 'string' "
    "OR (t::jsonb -> 'updated_at') IS DISTINCT FROM (t::jsonb -> 'created_at') THEN t "
    "ELSE (SELECT CASE WHEN h::jsonb = t::jsonb - 'updated_at' THEN h ELSE t END FROM (SELECT '{ ' || "
    "substr(replace(t, ', \"updated_at\": ' || (t::jsonb -> 'updated_at')::text, ''), 2) AS h) x) END $$")


# the props held as columns of ``nodes`` (migration 16), in their sorted order; ``pair_hash`` as bytes
MOVED = ("conversation_id", "created_at", "pair_hash", "prev", "user_id")
CUT = "\t"  # how a props text held without its moved props ends (JSON whitespace: ``json.dumps`` never ends so)
TAIL = "\t}"  # how a props text with the moved keys put back ends (``read_sql``)
NO_COLUMNS = (None, None, None, None, None)


def read_sql(alias: str = "") -> str:
    """SQL: a node row's props text with its moved props put back (``actx_props``), for a schema of migration 16."""
    a = f"{alias}." if alias else ""
    return f"actx_props({a}props, {', '.join(a + k for k in MOVED)})"


def has_columns(db: Any) -> bool:
    """Whether the schema holds the ranking's props as columns of ``nodes`` (migration 16)."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'nodes' AND column_name = 'pair_hash'").fetchone() is not None


def column_params(name: str, values: Sequence[str]) -> list[Any]:
    """Values compared with the column of the moved prop ``name`` (``pair_hash``'s as bytes)."""
    return [to_bytes(v) for v in values] if name == "pair_hash" else list(values)


def filter_sql(keys: Sequence[str], nodes_bytes: bool, columns: bool) -> str:
    """SQL: a node row's props (``n``) as jsonb for a filter naming the top-level ``keys``: the text as held when
    that holds them (the props' GIN index answers), else the props given back (``updated_at`` of migration 13, a
    moved prop of migration 16: no index then)."""
    text = read_sql("n") if columns and set(keys) & {*MOVED, "updated_at"} else "n.props"
    if nodes_bytes and "updated_at" in keys:
        return WHOLE_SQL.format(p=text)
    return f"({text}::jsonb)"


def split(props: dict[str, Any], text: str) -> tuple[str, tuple]:
    """The text a row of migration 16 holds (``text``: what ``held`` made of ``props``) and its ``MOVED`` columns:
    each moved prop whose value is a string is a column (``pair_hash`` as bytes) and leaves the text, which then ends
    in ``CUT``."""
    moved = tuple(v if type(v := props.get(k)) is str else None for k in MOVED)
    if moved == NO_COLUMNS:
        return text, moved
    marked = text.startswith(MARK)
    rest = {k: v for k, v in props.items()
            if not (k in MOVED and type(v) is str) and not (marked and k == "updated_at")}
    held_rest = (MARK if marked else "{") + _to_json(rest)[1:] + CUT
    return held_rest, (*moved[:2], None if moved[2] is None else to_bytes(moved[2]), *moved[3:])


def held_split(props: dict[str, Any], text: str) -> tuple[str, tuple]:
    """``split(props, held(props, text))`` with the props serialized once (``text``: ``props_to_json(props)``)."""
    moved = tuple(v if type(v := props.get(k)) is str else None for k in MOVED)
    if moved == NO_COLUMNS:
        return held(props, text), moved
    updated = props.get("updated_at")
    marked = type(updated) is str and props.get("created_at") == updated
    rest = {k: v for k, v in props.items()
            if not (k in MOVED and type(v) is str) and not (marked and k == "updated_at")}
    held_rest = (MARK if marked else "{") + _to_json(rest)[1:] + CUT
    return held_rest, (*moved[:2], None if moved[2] is None else to_bytes(moved[2]), *moved[3:])


def split_text(text: str | None) -> tuple[str | None, tuple]:
    """``split`` of a props text from elsewhere (an import) as a row holds it: the text ``props_to_json`` makes of
    its props (or its held form) is cut; any other text is kept whole, its moved props columns too (the ranking and
    a turn's followers read the columns)."""
    if not text or not text.startswith("{"):
        return text, NO_COLUMNS
    props = whole(text)
    if not isinstance(props, dict):
        return text, NO_COLUMNS
    cut, moved = split(props, text)
    return (cut if held(props, _to_json(props)) == text else text), moved


def held_split_text(text: str | None) -> tuple[str | None, tuple]:
    """``split_text(held_text(text))`` in one pass: an import's props text parsed once and, when it is what
    ``props_to_json`` makes of its props (a copy's usual text), serialized once more to check that and once for the
    text cut (``held_split``); any other text takes the two steps."""
    if not text or not text.startswith('{"'):
        return split_text(held_text(text))
    props = json.loads(text)
    if not isinstance(props, dict) or _to_json(props) != text:
        return split_text(held_text(text))
    return held_split(props, text)


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
    if (text.startswith(MARK) and give_back(props)) or text.endswith(TAIL):
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
    return _to_json(whole(text)) if text and (text.startswith(MARK) or text.endswith(TAIL)) else text


# SQL (migration 16): a row's props text with its moved props put back after the others (keys unsorted: ``whole``
# sorts them), ending in ``TAIL``, when the row holds it cut (``CUT``); else the text as held
READ_SQL = (
    "CREATE OR REPLACE FUNCTION actx_props(p text, c text, ca text, ph bytea, pv text, u text) RETURNS text "
    "LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT CASE WHEN right(p, 1) <> E'\\t' THEN p ELSE left(p, -2) || "
    "CASE WHEN p IN (E'{}\\t', E'{ }\\t') THEN '' ELSE ', ' END || concat_ws(', ', "
    "'\"conversation_id\": ' || to_json(c)::text, '\"created_at\": ' || to_json(ca)::text, "
    "'\"pair_hash\": ' || to_json(actx_hex(ph))::text, '\"prev\": ' || to_json(pv)::text, "
    "'\"user_id\": ' || to_json(u)::text) || E'\\t}' END $$")
# SQL (migration 16): a held props text split as ``split`` does: {the text without the moved string props and ending
# in CUT, their values} (six texts; pair_hash's as text), or {the text whole, their values} where the cut text would
# not parse to the same props (a value JSON writes otherwise than ``json.dumps``, the same text nested)
SPLIT_SQL = """CREATE OR REPLACE FUNCTION actx_props_split(t text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE
PARALLEL SAFE AS $$
DECLARE j jsonb; h text := t; k text; pat text; i int := 0; vals text[] := ARRAY[NULL, NULL, NULL, NULL, NULL];
  cut text[] := '{}';
BEGIN
  IF t IS NULL OR left(t, 1) <> '{' OR right(t, 1) = E'\\t' OR NOT pg_input_is_valid(t, 'jsonb') THEN
    RETURN ARRAY[t, NULL, NULL, NULL, NULL, NULL];
  END IF;
  j := t::jsonb;
  IF jsonb_typeof(j) <> 'object' THEN RETURN ARRAY[t, NULL, NULL, NULL, NULL, NULL]; END IF;
  FOREACH k IN ARRAY ARRAY['conversation_id', 'created_at', 'pair_hash', 'prev', 'user_id'] LOOP
    i := i + 1;
    IF jsonb_typeof(j -> k) = 'string' THEN
      pat := to_json(k)::text || ': ' || (j -> k)::text;
      IF position(', ' || pat IN h) > 0 THEN h := replace(h, ', ' || pat, '');
      ELSIF position(pat || ', ' IN h) > 0 THEN h := replace(h, pat || ', ', '');
      ELSE h := replace(h, pat, '');
      END IF;
      vals[i] := j ->> k;
      cut := cut || k;
    END IF;
  END LOOP;
  IF cardinality(cut) = 0 THEN RETURN ARRAY[t, NULL, NULL, NULL, NULL, NULL]; END IF;
  IF NOT pg_input_is_valid(h, 'jsonb') OR h::jsonb IS DISTINCT FROM j - cut THEN RETURN ARRAY[t] || vals; END IF;
  RETURN ARRAY[h || E'\\t'] || vals;
END $$"""
