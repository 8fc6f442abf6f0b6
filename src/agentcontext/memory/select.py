"""Which memories of a namespace a call names: by conversation, user and type (their tags), and what ``forget``
deletes (by id, by conversation/user, older than a number of days; combined, all must match)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ..model import Node
from ..store.base import Store
from .records import CONV, KIND, TYPE, USER, time_key


def tagged(store: Store, namespace: str, conversation_id: str | None = None, user_id: str | None = None,
           type: str | None = None) -> list[Node]:
    """The namespace's memories with every given tag, oldest first."""
    tags = []
    if conversation_id is not None:
        tags.append(CONV + str(conversation_id))
    if user_id is not None:
        tags.append(USER + str(user_id))
    if type is not None:
        tags.append(TYPE + str(type))
    return store.find_nodes(namespace=namespace, kind=KIND, tags=tags or None, order="key")


def to_forget(store: Store, namespace: str, memory_id: str | None, conversation_id: str | None,
              user_id: str | None, days_old: int | float | None) -> list[Node] | None:
    """The memories ``forget`` deletes: every condition given must hold (none given is the caller's error); None
    when ``memory_id`` names no memory of the namespace (nothing to forget, nothing to audit)."""
    if memory_id is not None:
        node = store.get_node(memory_id)
        if node is None or node.kind != KIND or node.namespace != namespace:
            return None
        props = node.props or {}
        if conversation_id is not None and props.get("conversation_id") != str(conversation_id):
            return []
        if user_id is not None and props.get("user_id") != str(user_id):
            return []
        candidates = [node]
    else:
        candidates = tagged(store, namespace, conversation_id, user_id)
    if days_old is not None:
        cutoff = time_key((datetime.now(timezone.utc) - timedelta(days=float(days_old))).isoformat())
        candidates = [n for n in candidates if n.key < cutoff]
    return candidates
