"""Graphs written by other tools, read by ``load_from_file`` / ``AgentContext.load_graph``.

- ``node_link``: networkx's node-link JSON (``json_graph.node_link_data``: ``nodes`` with ``id``, and
  ``links`` or ``edges`` with ``source`` and ``target``; ``directed``/``multigraph``/``graph`` at the top);
- ``plain``: ``{"nodes": [...], "edges": [...]}`` with the usual spellings of each field (below);
- ``graphml``: GraphML XML (``<key>`` declarations with types and defaults, ``<node>``, ``<edge>``, ``<data>``).

Every element is checked before the graph is cleared: a bad file raises a ``ValidationError`` naming
the file and the element (``node 3``, ``edge 7 (a -> b)``, ``<edge> 2``), and the graph is unchanged.
A node's other fields become its properties; an edge's, the edge's. An undirected graph's edges are
stored once, from source to target, with ``directed: false`` in their properties.
"""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..errors import ValidationError

NODE_ID = ("id", "node_id", "key", "name")
NODE_TYPE = ("type", "node_type", "kind", "label", "category")
NODE_CONTENT = ("content", "text", "description")
EDGE_SOURCE = ("source", "source_id", "src", "from", "u")
EDGE_TARGET = ("target", "target_id", "dst", "to", "v")
EDGE_TYPE = ("type", "edge_type", "relation", "relationship", "label", "predicate")
EDGE_WEIGHT = ("weight", "confidence", "score")
GRAPHML_TYPES = {"boolean": "bool", "int": "int", "long": "int", "float": "float", "double": "float",
                 "string": "str"}


def detect(state: Any) -> str | None:
    """The foreign format of a parsed JSON document, or None."""
    if not isinstance(state, dict) or not isinstance(state.get("nodes"), list):
        return None
    if isinstance(state.get("links"), list) or ("directed" in state and isinstance(state.get("edges"), list)):
        return "node_link"
    if isinstance(state.get("edges"), list):
        return "plain"
    return None


def _pick(item: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if name in item and item[name] is not None:
            return name, item[name]
    return None, None


def _scalar_id(value: Any, where: str, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or str(value).strip() == "":
        raise ValidationError(f"{where}: {what} must be a non-empty string or number (got {value!r})")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def from_json(state: dict[str, Any], fmt: str, path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, edges) for ``ContextGraph.add_nodes``/``add_edges`` from node-link or plain JSON."""
    directed = bool(state.get("directed", True))
    raw_edges = state.get("links") if isinstance(state.get("links"), list) else state.get("edges")
    if not isinstance(raw_edges, list):
        raise ValidationError(f"{path}: a {fmt} graph needs a list of edges ('edges' or 'links')", path=str(path))
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, item in enumerate(state["nodes"]):
        where = f"{path}: node {i}"
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            item = {"id": item}
        if not isinstance(item, dict):
            raise ValidationError(f"{where} is a {type(item).__name__}; a node is an object with an id",
                                  path=str(path), element=f"node {i}")
        key, value = _pick(item, NODE_ID)
        if key is None:
            raise ValidationError(f"{where} has no id (one of {', '.join(NODE_ID)})", path=str(path),
                                  element=f"node {i}")
        node_id = _scalar_id(value, where, key)
        if node_id in seen:
            raise ValidationError(f"{where}: node id {node_id!r} appears twice", path=str(path), element=f"node {i}")
        seen.add(node_id)
        nodes.append(_node(node_id, item, key, where, path, f"node {i}"))
    edges = []
    for i, item in enumerate(raw_edges):
        where = f"{path}: edge {i}"
        if isinstance(item, list) and len(item) in (2, 3):  # [source, target] or [source, target, attributes]
            item = {"source": item[0], "target": item[1], **(item[2] if len(item) == 3 and
                                                               isinstance(item[2], dict) else {})}
        if not isinstance(item, dict):
            raise ValidationError(f"{where} is a {type(item).__name__}; an edge is an object with a source and "
                                  "a target", path=str(path), element=f"edge {i}")
        edges.append(_edge(item, seen, directed, where, path, f"edge {i}"))
    return nodes, edges


def _node(node_id: str, item: dict[str, Any], id_key: str, where: str, path: Path,
          element: str) -> dict[str, Any]:
    tkey, kind = _pick(item, NODE_TYPE)
    ckey, content = _pick(item, NODE_CONTENT)
    nested = item.get("properties") if isinstance(item.get("properties"), dict) else {}
    props = {k: v for k, v in item.items() if k not in (id_key, tkey, ckey, "properties")}
    props.update(nested)
    if kind is not None and not isinstance(kind, str):
        raise ValidationError(f"{where}: {tkey} must be a string (got {kind!r})", path=str(path), element=element)
    _check_json(props, where, path, element)
    return {"node_id": node_id, "node_type": kind or "entity",
            "content": None if content is None else str(content), "properties": props}


def _edge(item: dict[str, Any], nodes: set[str], directed: bool, where: str, path: Path,
          element: str) -> dict[str, Any]:
    skey, src = _pick(item, EDGE_SOURCE)
    dkey, dst = _pick(item, EDGE_TARGET)
    if skey is None or dkey is None:
        raise ValidationError(f"{where} needs a source ({', '.join(EDGE_SOURCE)}) and a target "
                              f"({', '.join(EDGE_TARGET)})", path=str(path), element=element)
    src, dst = _scalar_id(src, where, skey), _scalar_id(dst, where, dkey)
    for end, value in (("source", src), ("target", dst)):
        if value not in nodes:
            raise ValidationError(f"{where} ({src} -> {dst}): {end} {value!r} is not a node of the file",
                                  path=str(path), element=element)
    tkey, kind = _pick(item, EDGE_TYPE)
    wkey, weight = _pick(item, EDGE_WEIGHT)
    if weight is None:
        weight = 1.0
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise ValidationError(f"{where} ({src} -> {dst}): {wkey} must be a finite number (got {weight!r})",
                              path=str(path), element=element)
    nested = item.get("properties") if isinstance(item.get("properties"), dict) else {}
    props = {k: v for k, v in item.items() if k not in (skey, dkey, tkey, wkey, "properties", "key")}
    props.update(nested)
    if not directed:
        props["directed"] = False
    _check_json(props, where, path, element)
    return {"source_id": src, "target_id": dst, "edge_type": str(kind) if kind is not None else "related_to",
            "weight": float(weight), "properties": props}


def _check_json(props: dict[str, Any], where: str, path: Path, element: str) -> None:
    try:
        json.dumps(props, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{where}: its attributes must be plain JSON values ({exc})", path=str(path),
                              element=element) from exc


# --- GraphML ----------------------------------------------------------------------------------------
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _typed(text: str | None, kind: str, where: str, path: Path, element: str) -> Any:
    value = (text or "").strip() if kind != "str" else (text or "")
    try:
        if kind == "bool":
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"{value!r} is not a boolean")
            return value.lower() in ("true", "1")
        if kind == "int":
            return int(value)
        if kind == "float":
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"{value!r} is not finite")
            return number
    except ValueError as exc:
        raise ValidationError(f"{where}: {exc}", path=str(path), element=element) from exc
    return value


def from_graphml(text: str, path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, edges) from a GraphML document (the first ``<graph>``; nested graphs are refused)."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise ValidationError(f"{path}: GraphML with a DOCTYPE or entity declarations is refused", path=str(path))
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValidationError(f"{path} is not well-formed XML: {exc}", path=str(path)) from exc
    if _local(root.tag) != "graphml":
        raise ValidationError(f"{path}: the root element is <{_local(root.tag)}>, not <graphml>", path=str(path))
    keys: dict[str, tuple[str, str, str, Any]] = {}  # id -> (for, name, type, default)
    for i, key in enumerate(e for e in root if _local(e.tag) == "key"):
        where, element = f"{path}: <key> {i}", f"key {i}"
        kid = key.get("id")
        if not kid:
            raise ValidationError(f"{where} has no id", path=str(path), element=element)
        kind = GRAPHML_TYPES.get(key.get("attr.type", "string"))
        if kind is None:
            raise ValidationError(f"{where} ({kid}): attr.type {key.get('attr.type')!r} is not a GraphML type",
                                  path=str(path), element=element)
        default = next((d for d in key if _local(d.tag) == "default"), None)
        keys[kid] = (key.get("for", "all"), key.get("attr.name") or kid, kind,
                     None if default is None else _typed(default.text, kind, where, path, element))
    graphs = [e for e in root if _local(e.tag) == "graph"]
    if len(graphs) != 1:
        raise ValidationError(f"{path}: expected one <graph>, found {len(graphs)}", path=str(path))
    graph = graphs[0]
    directed = graph.get("edgedefault", "directed") == "directed"

    def data_of(elem: ET.Element, kind: str, where: str, element: str) -> dict[str, Any]:
        out = {name: default for k, (scope, name, _, default) in keys.items()
               if scope in (kind, "all") and default is not None}
        for d in elem:
            if _local(d.tag) == "graph":
                raise ValidationError(f"{where}: nested graphs are not supported", path=str(path), element=element)
            if _local(d.tag) != "data":
                continue
            k = d.get("key")
            if k not in keys:
                raise ValidationError(f"{where}: <data key={k!r}> names no declared <key>", path=str(path),
                                      element=element)
            out[keys[k][1]] = _typed(d.text, keys[k][2], where, path, element)
        return out

    nodes, seen = [], set()
    for i, elem in enumerate(e for e in graph if _local(e.tag) == "node"):
        where, element = f"{path}: <node> {i}", f"node {i}"
        nid = elem.get("id")
        if not nid:
            raise ValidationError(f"{where} has no id", path=str(path), element=element)
        if nid in seen:
            raise ValidationError(f"{where}: node id {nid!r} appears twice", path=str(path), element=element)
        seen.add(nid)
        nodes.append(_node(nid, {"id": nid, **data_of(elem, "node", where, element)}, "id", where, path, element))
    edges = []
    for i, elem in enumerate(e for e in graph if _local(e.tag) == "edge"):
        where, element = f"{path}: <edge> {i}", f"edge {i}"
        attrs = data_of(elem, "edge", where, element)
        own = elem.get("directed")
        item = {**attrs, "source": elem.get("source"), "target": elem.get("target")}
        if elem.get("id"):
            item["graphml_id"] = elem.get("id")
        edges.append(_edge(item, seen, directed if own is None else own == "true", where, path, element))
    return nodes, edges
