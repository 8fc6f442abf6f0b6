"""Save and load a ContextGraph as JSON or as a Markdown directory, history included.

The saved form holds every node version (retractions are versions too), every edge interval
(retracted ones included), the tombstones of purged nodes and the cross-graph links, so a load
replays the same history: ``as_of`` queries answer the same after a round trip. Writes are atomic:
a JSON file is replaced in one rename; a Markdown directory is built beside the target and swapped in.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from .. import access, copies, files, safe_yaml
from ..errors import ValidationError
from ..ids import check_id
from ..decisions import checkpoints
from ..model import MEMORY_KIND, Edge, Node, utcnow
from . import formats
from .crossgraph import LINK_KIND
from .protocol import GraphLike
from .writes import node_text


FORMAT = "agentcontext.graph.v1"
UNSEARCHED = frozenset({MEMORY_KIND, "decision", "checkpoint", "graph_link"})  # embedded by their own services
NODE_FIELDS = ("id", "kind", "namespace", "key", "title", "summary", "content", "props", "tags", "valid_from",
               "valid_until", "recorded_at", "retracted_at", "version", "created_by")


# --- export / import of the state dict ------------------------------------------------------------
def export_state(graph: GraphLike) -> dict[str, Any]:
    store = graph.store
    nodes = []
    ids = store.node_ids(graph.scope, include_retracted=True)
    for sid in ids:
        versions = [{k: v for k, v in n.to_dict().items() if k in NODE_FIELDS} for n in store.node_versions(sid)]
        nodes.append({"id": sid, "versions": versions})
    history = store.edge_history(graph.scope)
    if access.sight(graph.workspace, graph.principal) is not None:  # only edges between nodes the principal sees
        kept = set(ids)
        history = [e for e in history if e.src in kept and e.dst in kept]
    edges = [e.to_dict() for e in history]
    for e in edges:
        e.pop("id", None)
    links = [value for _, value in store.list_records(LINK_KIND, prefix=graph.namespace + ":")]
    return {"format": FORMAT, "name": graph.name, "namespace": graph.namespace, "graph_id": graph.graph_id,
            "saved_at": utcnow(), "nodes": nodes, "edges": edges, "tombstones": store.tombstones(graph.scope),
            "links": links}


def _remapper(old_ns: str, new_ns: str):
    old_prefix, new_prefix = old_ns + "/", new_ns + "/"

    def remap(value: str) -> str:
        return new_prefix + value[len(old_prefix):] if value.startswith(old_prefix) else value

    return remap


def check_state_ids(graph: GraphLike, state: dict[str, Any], source: Path) -> None:
    """Refuse a saved state holding an id the store would refuse (ids.py), before the load clears the graph."""
    remap = _remapper(state.get("namespace") or graph.namespace, graph.namespace)
    for entry in state.get("nodes") or []:
        for v in (entry.get("versions") or []) if isinstance(entry, dict) else []:
            if isinstance(v, dict):
                check_id(remap(v.get("id")) if isinstance(v.get("id"), str) else v.get("id"), f"{source}: node id")
    for e in state.get("edges") or []:
        if isinstance(e, dict):
            for end in ("src", "dst"):
                check_id(remap(e[end]) if isinstance(e.get(end), str) else e.get(end), f"{source}: edge {end}")
            check_id(e.get("type"), f"{source}: edge type")
    for t in state.get("tombstones") or []:
        if isinstance(t, dict):
            check_id(remap(t["id"]) if isinstance(t.get("id"), str) else t.get("id"), f"{source}: tombstone id")


def check_item_ids(graph: GraphLike, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], source: Path) -> None:
    """The same for the nodes and edges of a foreign file, as the graph would store them."""
    for n in nodes:
        check_id(graph.store_id(n["node_id"]), f"{source}: node id")
    for e in edges:
        for end in ("source_id", "target_id"):
            check_id(graph.store_id(e[end]), f"{source}: edge {end}")
        if e.get("edge_type") is not None:
            check_id(e["edge_type"], f"{source}: edge type")


def import_state(graph: GraphLike, state: dict[str, Any]) -> dict[str, int]:
    """Replay a saved state into ``graph`` (which the caller has cleared)."""
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValidationError(f"not a saved agentcontext graph (format {FORMAT} expected)",
                              got=state.get("format") if isinstance(state, dict) else type(state).__name__)
    old_ns = state.get("namespace") or graph.namespace
    remap = _remapper(old_ns, graph.namespace)

    def ns_of(ns: str | None) -> str | None:
        return graph.namespace if ns == old_ns else ns

    events: list[tuple[str, int, str, Any]] = []  # (time, order, op, payload); puts before retractions
    for entry in state.get("nodes", []):
        for v in entry["versions"]:
            node = Node(**{k: v.get(k) for k in NODE_FIELDS if k in v})
            node.id, node.namespace = remap(node.id), ns_of(node.namespace)
            node.props, node.tags = node.props or {}, node.tags or []
            if node.namespace == graph.namespace and node.kind not in UNSEARCHED:  # found by meaning (node_search)
                node.embed_text = node_text(node)
            if v.get("retracted_at"):
                events.append((v["retracted_at"], 2, "retract_node", node.id))
            else:
                events.append((v["recorded_at"], 0, "put_node", node))
    by_eid: dict[str, list[Edge]] = {}
    for raw in state.get("edges", []):
        e = Edge(**{k: raw[k] for k in ("src", "type", "dst", "namespace", "weight", "props", "valid_from",
                                        "valid_until", "recorded_at", "retracted_at", "position") if k in raw})
        e.src, e.dst, e.namespace = remap(e.src), remap(e.dst), ns_of(e.namespace)
        by_eid.setdefault(e.id, []).append(e)
    for rows in by_eid.values():
        rows.sort(key=lambda r: r.recorded_at or "")
        for i, e in enumerate(rows):
            events.append((e.recorded_at or "", 1, "put_edge", e))
            superseded = i + 1 < len(rows) and rows[i + 1].recorded_at == e.retracted_at
            if e.retracted_at and not superseded:
                events.append((e.retracted_at, 3, "retract_edge", e.id))
    store = graph.store
    named = {ev[3].id if ev[2] == "put_node" else ev[3] for ev in events if ev[2] in ("put_node", "retract_node")}
    named |= {end for rows in by_eid.values() for e in rows for end in (e.src, e.dst)}
    gone = store.erased(sorted(named))
    scrubbed = 0
    for ev in events:  # a checkpoint's snapshot names records too: what an erasure removed stays out of it
        if ev[2] == "put_node" and ev[3].kind == checkpoints.NODE_KIND:
            scrubbed += checkpoints.without_erased(store, (ev[3].props or {}).get("snapshot"), remap)
    if gone:  # an erased node never comes back from a file, nor do the edges that touched it
        cut = {e.id for rows in by_eid.values() for e in rows if e.src in gone or e.dst in gone}
        events = [ev for ev in events if not (
            (ev[2] == "put_node" and ev[3].id in gone) or (ev[2] == "retract_node" and ev[3] in gone)
            or (ev[2] == "put_edge" and ev[3].id in cut) or (ev[2] == "retract_edge" and ev[3] in cut))]
    events.sort(key=lambda ev: (ev[0], ev[1]))
    counts: dict[str, Any] = {"node_versions": 0, "edges": 0, "tombstones": 0, "links": 0,
                              "skipped_erased": sorted(gone), "checkpoint_versions_scrubbed": scrubbed}
    with store.transaction():
        i = 0
        while i < len(events):
            at, order, op, _ = events[i]
            j = i
            while j < len(events) and events[j][0] == at and events[j][2] == op:
                j += 1
            batch = [ev[3] for ev in events[i:j]]
            if op == "put_node":
                for node in batch:  # one call per node: a batch may hold two versions of one node
                    store.put_nodes([node], actor=node.created_by, at=at)
                counts["node_versions"] += len(batch)
            elif op == "retract_node":
                store.retract_nodes(batch, at=at)
            elif op == "put_edge":
                for e in batch:
                    e.recorded_at = None
                store.put_edges(batch, at=at)
                counts["edges"] += len(batch)
            else:
                store.retract_edges(batch, at=at)
            i = j
        stones = [{**t, "id": remap(t["id"]), "namespace": ns_of(t.get("namespace"))}
                  for t in state.get("tombstones", [])]
        if stones:
            store.put_tombstones(stones)
            counts["tombstones"] = len(stones)
        for link in state.get("links", []):
            store.put_record(LINK_KIND, f"{graph.namespace}:{link['link_id']}", link)
            counts["links"] += 1
    return counts


# --- files ------------------------------------------------------------------------------------
def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise ValidationError(f"{path} is a symbolic link; refusing to write through it", path=str(path))


def save_graph(graph: GraphLike, path: str | os.PathLike, format: str = "json") -> None:
    target = Path(path)
    _refuse_link(target)
    state = export_state(graph)
    if format == "json":
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(state, fh, ensure_ascii=False, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    elif format == "markdown":
        _write_markdown(state, target)
    else:
        raise ValidationError(f"unknown format {format!r}; use json or markdown", format=format)
    copies.record(graph.store, f"graph.save.{format}", target, {n["versions"][-1]["namespace"] for n in state["nodes"]
                                                                if n["versions"]} or {graph.namespace},
                  [n["id"] for n in state["nodes"]], graph.actor)


FORMATS = ("json", "markdown", "node_link", "plain", "graphml")


def load_graph(graph: GraphLike, path: str | os.PathLike, format: str | None = None) -> dict[str, Any]:
    """Replace ``graph``'s state from a file: a saved graph (JSON or a Markdown directory), networkx node-link
    JSON, plain ``{"nodes", "edges"}`` JSON or GraphML (graph/formats.py). ``format`` defaults by the path:
    a directory is Markdown, ``.graphml``/``.xml`` GraphML, anything else JSON of any of the three kinds."""
    source = Path(path)
    if not source.exists():
        from ..errors import NotFoundError

        raise NotFoundError(f"no saved graph at {source}", path=str(source))
    _refuse_link(source)
    if format is not None and format not in FORMATS:
        raise ValidationError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}", format=format)
    fmt = format or ("markdown" if source.is_dir() else
                     "graphml" if source.suffix.lower() in (".graphml", ".xml") else "json")
    if fmt == "markdown":
        state = _read_markdown(source)
    elif fmt == "graphml":
        return _load_foreign(graph, source, "graphml", *formats.from_graphml(
            files.read_text(source, None, "graph file (GraphML)"), source))
    else:
        text = files.read_text(source, None, "graph file (JSON)")
        try:
            state = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValidationError(f"{source} is not valid JSON: {exc}", path=str(source)) from exc
        kind = formats.detect(state) if not (isinstance(state, dict) and state.get("format") == FORMAT) else "json"
        if fmt != "json" and kind != fmt:
            raise ValidationError(f"{source} is not a {fmt} graph (it reads as {kind or 'none of them'})",
                                  path=str(source), format=fmt)
        if kind in ("node_link", "plain"):
            return _load_foreign(graph, source, kind, *formats.from_json(state, kind, source))
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValidationError(f"{source} is not a saved agentcontext graph, node-link JSON, {{\"nodes\", \"edges\"}} "
                              "JSON or GraphML", path=str(source))
    own = state.get("namespace") or graph.namespace  # replayed into the graph's own namespace
    foreign = {v.get("namespace") for n in state.get("nodes") or [] if isinstance(n, dict)
               for v in n.get("versions") or [] if isinstance(v, dict)} - {own, None}
    for ns in sorted(str(x) for x in foreign):  # a saved graph brings records of other namespaces back only
        access.require(graph.workspace, graph.principal, ns, "admin", "graph.load", ns)  # for their admins
    check_state_ids(graph, state, source)
    graph.clear()
    return import_state(graph, state)


def _load_foreign(graph: GraphLike, source: Path, fmt: str, nodes: list[dict[str, Any]],
                  edges: list[dict[str, Any]]) -> dict[str, Any]:
    """Replace the graph with checked nodes and edges; erased nodes (and their edges) stay out."""
    check_item_ids(graph, nodes, edges, source)
    graph.clear()  # a private graph gets a new store here: read graph.store only after it
    store = graph.store
    gone = set(store.erased([graph.store_id(n["node_id"]) for n in nodes])) if nodes else set()
    if gone:
        nodes = [n for n in nodes if graph.store_id(n["node_id"]) not in gone]
        edges = [e for e in edges if graph.store_id(e["source_id"]) not in gone
                 and graph.store_id(e["target_id"]) not in gone]
    with store.transaction():
        graph.add_nodes(nodes)
        graph.add_edges(edges)
    return {"format": fmt, "nodes": len(nodes), "edges": len(edges),
            "skipped_erased": sorted(gone)}


# --- markdown directory -----------------------------------------------------------------------
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _filename(node_id: str) -> str:
    import hashlib

    stem = _SAFE.sub("_", node_id.split("/")[-1])[:60].strip("._") or "node"
    return f"{stem}-{hashlib.sha256(node_id.encode()).hexdigest()[:10]}.md"


def _dump(front: dict[str, Any], body: str) -> str:
    return "---\n" + safe_yaml.dump(front) + "---\n\n" + body


def _write_markdown(state: dict[str, Any], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_dir():
        raise ValidationError(f"{target} exists and is not a directory", path=str(target))
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        (tmp / "nodes").mkdir()
        node_ids = {n["id"] for n in state["nodes"]}
        out_edges: dict[str, list[dict[str, Any]]] = {}
        loose = []
        for e in state["edges"]:
            (out_edges.setdefault(e["src"], []) if e["src"] in node_ids else loose).append(e)
        for entry in state["nodes"]:
            versions = [dict(v) for v in entry["versions"]]
            body = versions[-1].pop("content", "") if versions else ""
            front = {"id": entry["id"], "versions": versions, "edges": out_edges.get(entry["id"], [])}
            (tmp / "nodes" / _filename(entry["id"])).write_text(_dump(front, body or ""), encoding="utf-8")
        index = {k: state[k] for k in ("format", "name", "namespace", "graph_id", "saved_at", "tombstones", "links")}
        index["edges"] = loose
        body = (f"# Graph {state['name']}\n\n{len(state['nodes'])} nodes, {len(state['edges'])} edge records, "
                f"{len(state['tombstones'])} tombstones. One file per node under nodes/.\n")
        (tmp / "graph.md").write_text(_dump(index, body), encoding="utf-8")
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _split(text: str, where: Path) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        raise ValidationError(f"{where} has no YAML front matter", path=str(where))
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValidationError(f"{where}: front matter is not closed with ---", path=str(where))
    front = safe_yaml.load(text[4:end], str(where), "YAML front matter", line_offset=1)
    if front is not None and not isinstance(front, dict):
        raise ValidationError(f"{where}: the front matter must be a mapping", path=str(where))
    body = text[end + 5:]
    return front or {}, body[1:] if body.startswith("\n") else body


def _read_markdown(source: Path) -> dict[str, Any]:
    """graph.md and nodes/*.md, opened through the folder without following links (files.py)."""
    if not (source / "graph.md").exists():
        raise ValidationError(f"{source} has no graph.md; not a saved Markdown graph", path=str(source))
    root_fd = files.open_folder(source)
    nodes_fd = None
    try:
        index_file = source / "graph.md"
        state, _ = _split(files.read_text(index_file, root_fd, "saved graph file"), index_file)
        edges = list(state.pop("edges", []) or [])
        nodes = []
        folder = source / "nodes"
        if folder.exists() or folder.is_symlink():
            nodes_fd = files.open_folder(folder, root_fd)
            for name in files.names(folder, nodes_fd, ".md"):
                f = folder / name
                front, body = _split(files.read_text(f, nodes_fd, "saved graph file"), f)
                versions = front.get("versions") or []
                if not isinstance(front.get("id"), str) or not isinstance(versions, list) or not all(
                        isinstance(v, dict) for v in versions):
                    raise ValidationError(f"{f}: a node file needs an id and a list of versions", path=str(f))
                if versions:
                    versions[-1]["content"] = body
                nodes.append({"id": front["id"], "versions": versions})
                edges.extend(front.get("edges") or [])
    finally:
        for fd in (nodes_fd, root_fd):
            if fd is not None:
                os.close(fd)
    state["nodes"] = nodes
    state["edges"] = edges
    return state
