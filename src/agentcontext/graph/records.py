"""The dict shapes ContextGraph returns, and the parsing of bulk add items."""
from __future__ import annotations

from typing import Any, Callable

from ..errors import ValidationError
from ..model import Edge, Node

NODE_KEYS = {"node_id": ("node_id", "id"), "node_type": ("node_type", "type"),
             "properties": ("properties", "metadata")}


def _pick(raw: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if raw.get(name) is not None:
            return raw[name]
    return None


def parse_node_item(raw: dict[str, Any], index: int) -> dict[str, Any]:
    """A bulk node item, keyed like add_node's parameters (``id``/``type``/``metadata`` accepted too)."""
    if not isinstance(raw, dict):
        raise ValidationError(f"add_nodes item {index} is {type(raw).__name__}, expected a dict", index=index)
    item = dict(raw)
    for canon, names in NODE_KEYS.items():
        item[canon] = _pick(raw, names)
    if item["node_id"] is None or str(item["node_id"]).strip() == "":
        raise ValidationError(f"add_nodes item {index} has no node_id (or id)", index=index)
    item["node_id"] = str(item["node_id"])
    props = item.get("properties")
    if props is not None and not isinstance(props, dict):
        raise ValidationError(f"node {item['node_id']!r}: properties must be a dict", node_id=item["node_id"])
    return item


def parse_edge_item(raw: dict[str, Any], index: int) -> tuple[str, str, str, float, dict[str, Any], Any, Any]:
    """A bulk edge item as (source, target, type, weight, properties, valid_from, valid_until).

    Items are keyed like add_edge's parameters; ``source``/``target``/``type``/``metadata`` are accepted too.
    """
    if not isinstance(raw, dict):
        raise ValidationError(f"add_edges item {index} is {type(raw).__name__}, expected a dict", index=index)
    get = raw.get
    src = get("source_id")
    if src is None:
        src = get("source")
    dst = get("target_id")
    if dst is None:
        dst = get("target")
    if src is None or dst is None or str(src).strip() == "" or str(dst).strip() == "":
        raise ValidationError(f"add_edges item {index} needs source_id and target_id (or source/target)",
                              index=index)
    etype = get("edge_type") or get("type") or get("relationship") or "related_to"
    weight = get("weight", 1.0)
    if weight is None:
        weight = 1.0
    elif type(weight) is not float:
        try:
            weight = float(weight)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"add_edges item {index}: weight {weight!r} is not a number", index=index) from exc
    props = get("properties")
    if props is None:
        props = get("metadata")
    if props is None:
        props = {}
    elif not isinstance(props, dict):
        raise ValidationError(f"add_edges item {index}: properties must be a dict", index=index)
    return str(src), str(dst), str(etype), weight, props, get("valid_from"), get("valid_until")


def node_dict(node: Node, user_id: Callable[[str], str]) -> dict[str, Any]:
    uid = user_id(node.id)
    return {
        "id": uid, "type": node.kind, "content": node.content, "metadata": dict(node.props),
        "properties": dict(node.props), "tags": list(node.tags), "valid_from": node.valid_from,
        "valid_until": node.valid_until, "recorded_at": node.recorded_at, "retracted_at": node.retracted_at,
        "version": node.version, "namespace": node.namespace,
    }


def edge_dict(edge: Edge, user_id: Callable[[str], str]) -> dict[str, Any]:
    return {
        "id": edge.id, "source": user_id(edge.src), "target": user_id(edge.dst), "type": edge.type,
        "weight": edge.weight, "metadata": dict(edge.props), "properties": dict(edge.props),
        "valid_from": edge.valid_from, "valid_until": edge.valid_until, "recorded_at": edge.recorded_at,
        "retracted_at": edge.retracted_at,
    }
