"""The memory operations (seed 003's AgentMemory), declared once for every door, on the workspace's memory store
(``memory:<namespace>``: ``default`` for MCP and the console, ``--namespace`` on the CLI; no eviction, no expiry:
limits are an application policy). Results are what the Python calls return.

Access: the memory service checks and audits every call (read to retrieve and read, write to store, edit and
forget); the operations only pass the caller's principal on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from typing_extensions import TypedDict

from pydantic import Field

from ..errors import NotFoundError, ValidationError
from .base import Args, Caller, Cli, Operation, declare
from .types import ConfigEcho, JsonObject, Signals, free_json

if TYPE_CHECKING:  # the memory service loads when an operation runs, not when a door lists them
    from ..memory import AgentMemory

ID = Field(min_length=1, max_length=300, description="A memory id as store_memory or retrieve_memories returned.")
CONVERSATION = Field(None, min_length=1, max_length=300, description="A conversation id: memories of one "
                     "conversation are linked in order.")
USER = Field(None, min_length=1, max_length=300, description="The user the memory is about or from.")
MAX_DAYS = 100_000  # about 270 years: any older cut-off is before every memory
CONTENT_LIMIT = 1_000_000


def open_memory(ctx: Caller) -> AgentMemory:
    """The caller's memory store, acting as the caller's principal."""
    from ..memory.service import workspace_memory

    return workspace_memory(ctx.ws, ctx.namespace, ctx.principal)


class StoreArgs(Args):
    content: str = Field(min_length=1, max_length=CONTENT_LIMIT, description="The text to remember.")
    metadata: Optional[free_json(100)] = Field(None, description="Free-form JSON metadata (e.g. type, speaker, "
                                               "entities); retrieval can filter on it.")
    conversation_id: Optional[str] = CONVERSATION
    user_id: Optional[str] = USER


class RetrieveArgs(Args):
    query: str = Field(min_length=1, max_length=10_000, description="What you want to recall, in words.")
    max_results: int = Field(5, ge=1, le=100, description="At most this many memories, best first.")
    conversation_id: Optional[str] = Field(None, min_length=1, max_length=300,
                                           description="Only memories of this conversation.")
    user_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Only memories of this user.")
    min_score: Optional[float] = Field(None, ge=0.0, description="Drop results scoring below this (the best is "
                                       "near 1).")
    filters: Optional[free_json(100)] = Field(None, description="Only memories whose metadata holds these "
                                              "key/value pairs.")


class ForgetArgs(Args):
    memory_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Forget this one memory.")
    conversation_id: Optional[str] = Field(None, min_length=1, max_length=300,
                                           description="Forget this conversation's memories.")
    user_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Forget this user's memories.")
    days_old: Optional[float] = Field(None, ge=0.0, le=MAX_DAYS, description="Forget memories older than this "
                                      "many days.")


class GetArgs(Args):
    memory_id: str = ID


class HistoryArgs(Args):
    conversation_id: str = Field(min_length=1, max_length=300, description="The conversation id.")
    max_items: int = Field(50, ge=1, le=1000, description="The last this many memories, oldest first.")


class EditArgs(Args):
    memory_id: str = ID
    content: Optional[str] = Field(None, min_length=1, max_length=CONTENT_LIMIT, description="The new text (a new "
                                   "version; the previous one stays in the memory's history).")
    metadata: Optional[free_json(100)] = Field(None, description="Metadata keys to set (merged into the memory's "
                                               "metadata).")
    expected_version: Optional[int] = Field(None, ge=1, le=10**9, description="Write only if the memory is still "
                                            "at this version (else a ConflictError: it changed since you read it).")


class VersionsArgs(Args):
    memory_id: str = ID


def _store(ctx: Caller, a: StoreArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    mid = mem.store(a.content, metadata=a.metadata, conversation_id=a.conversation_id, user_id=a.user_id)
    return {"id": mid, "namespace": mem.namespace}


def _retrieve(ctx: Caller, a: RetrieveArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    rows = mem.retrieve(a.query, max_results=a.max_results, min_score=a.min_score or 0.0,
                        conversation_id=a.conversation_id, user_id=a.user_id, filters=a.filters or None)
    return {"namespace": mem.namespace, "results": rows}


def _forget(ctx: Caller, a: ForgetArgs) -> dict[str, Any]:
    given = {k: v for k, v in a.model_dump().items() if v is not None}
    if not given:
        raise ValidationError("forget_memories needs at least one of memory_id, conversation_id, user_id, days_old",
                              fields=list(ForgetArgs.model_fields))
    mem = open_memory(ctx)
    count = mem.forget(a.memory_id, a.conversation_id, a.days_old, a.user_id)
    return {"namespace": mem.namespace, "forgotten": count}


def _get(ctx: Caller, a: GetArgs) -> dict[str, Any]:
    return open_memory(ctx).require(a.memory_id)  # NotFoundError when absent


def _history(ctx: Caller, a: HistoryArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    return {"conversation_id": a.conversation_id,
            "memories": mem.get_conversation_history(a.conversation_id, a.max_items)}


def _edit(ctx: Caller, a: EditArgs) -> dict[str, Any]:
    if a.content is None and not a.metadata:
        raise ValidationError("edit_memory needs the new content or metadata to set", fields=["content", "metadata"])
    mem = open_memory(ctx)
    node = ctx.ws.store.get_node(a.memory_id)  # the version edited; shown only once the write is allowed
    if not mem.update(a.memory_id, content=a.content, metadata=a.metadata,  # write checked (and audited) first
                      expected_version=a.expected_version):
        raise NotFoundError(f"no memory {a.memory_id!r} in {mem.namespace}; retrieve_memories lists ids",
                            memory_id=a.memory_id)
    return {**mem.require(a.memory_id), "previous_version": node.version if node is not None else None}


def _versions(ctx: Caller, a: VersionsArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    current = mem.require(a.memory_id)  # read access checked, NotFoundError when absent
    rows = [{"version": n.version, "content": n.content,
             "metadata": dict((n.props or {}).get("metadata") or {}),
             "updated_at": (n.props or {}).get("updated_at") or n.recorded_at, "by": n.created_by}
            for n in ctx.ws.store.node_versions(a.memory_id)]
    return {"memory_id": current["id"], "namespace": mem.namespace, "versions": rows}


class Memory(TypedDict):
    id: str
    memory_id: str
    content: str
    metadata: JsonObject
    conversation_id: Optional[str]
    user_id: Optional[str]
    timestamp: Optional[str]
    created_at: Optional[str]
    updated_at: Optional[str]
    version: int


class Recalled(Memory):
    score: float
    signals: Signals
    source: str
    config: ConfigEcho  # the retrieval configuration that ran (engine/retrieval_config.py)


class StoreOut(TypedDict):
    id: str
    namespace: str


class RetrieveOut(TypedDict):
    namespace: str
    results: list[Recalled]


class ForgetOut(TypedDict):
    namespace: str
    forgotten: int


class HistoryOut(TypedDict):
    conversation_id: str
    memories: list[Memory]


class Edited(Memory):
    previous_version: Optional[int]


class Version(TypedDict):
    version: int
    content: str
    metadata: JsonObject
    updated_at: Optional[str]
    by: Optional[str]


class VersionsOut(TypedDict):
    memory_id: str
    namespace: str
    versions: list[Version]


def _metadata(values: dict[str, Any]) -> dict[str, Any]:
    """The CLI's ``--meta key=value`` (repeatable) and ``--entity`` (repeatable) as the metadata object."""
    pairs, entities = values.pop("meta", None) or [], values.pop("entity", None) or []
    metadata: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"--meta expects key=value, got {pair!r}", meta=pair)
        metadata[key] = value
    if entities:
        if "entities" in metadata:
            raise ValidationError("give entities with --entity (repeatable), not also -m entities=...")
        metadata["entities"] = list(entities)
    return metadata


def _store_cli(values: dict[str, Any]) -> dict[str, Any]:
    metadata = _metadata(values)
    return {**values, "metadata": metadata}


def _retrieve_cli(values: dict[str, Any]) -> dict[str, Any]:
    filters = _metadata(values)
    return {**values, "filters": filters or None}


def _edit_cli(values: dict[str, Any]) -> dict[str, Any]:
    metadata = _metadata(values)
    return {**values, "metadata": metadata or None}


WHO = {"conversation_id": ("--conversation", "-c"), "user_id": ("--user", "-u")}
WHO_HELP = {"conversation_id": "A conversation id.", "user_id": "A user id."}
META = ("--meta", "-m")

STORE = Operation(
    "store_memory", "Store a memory",
    "Remember something for later sessions: a fact, a preference, a turn of a conversation. Pass conversation_id "
    "for turns of one conversation (they are linked in order) and user_id for what belongs to one user. Returns "
    "the new memory's id.",
    StoreArgs, StoreOut, _store, read_only=False,
    cli=Cli(("memory", "store"), args=("content",), flags=WHO, help={**WHO_HELP, "content": "The memory text."},
            extra={"meta": (META, "Metadata key=value (repeatable).", True),
                   "entity": (("--entity", "-e"), "An entity the memory is about (repeatable; metadata "
                                                  "'entities').", True)},
            prepare=_store_cli, namespace=True))
RETRIEVE = Operation(
    "retrieve_memories", "Retrieve memories",
    "Recall what was remembered before: the memories most relevant to a query (meaning, keywords and conversation "
    "context), best first, each with its score and the signals behind it. Use before answering anything that may "
    "depend on earlier sessions.",
    RetrieveArgs, RetrieveOut, _retrieve,
    cli=Cli(("memory", "retrieve"), args=("query",), flags={**WHO, "max_results": ("--k", "-k")},
            help={**WHO_HELP, "max_results": "At most this many, best first."},
            extra={"meta": (META, "Metadata filter key=value.", True)}, prepare=_retrieve_cli,
            pick=lambda r: r["results"], namespace=True))
FORGET = Operation(
    "forget_memories", "Forget memories",
    "Delete memories for good: one by memory_id, a whole conversation, a user's, or those older than days_old "
    "(give at least one; given together, all must match). Returns how many were deleted.",
    ForgetArgs, ForgetOut, _forget, read_only=False, destructive=True,
    cli=Cli(("memory", "forget"), args=("memory_id",), flags=WHO, help={**WHO_HELP, "days_old": "Older than this "
                                                                         "many days."},
            pick=lambda r: {"forgotten": r["forgotten"]}, namespace=True))
GET = Operation(
    "get_memory", "Get a memory",
    "Read one memory by id (its full text, metadata, conversation, user and times), e.g. one that "
    "retrieve_memories returned. Fails with NotFoundError for an unknown id.",
    GetArgs, Memory, _get, cli=Cli(("memory", "get"), args=("memory_id",), namespace=True))
HISTORY = Operation(
    "conversation_history", "Conversation history",
    "The last max_items memories of one conversation in the order they were stored (oldest first). Use to pick a "
    "conversation up where it stopped.",
    HistoryArgs, HistoryOut, _history,
    cli=Cli(("memory", "conversation"), args=("conversation_id",), help={"max_items": "The last this many."},
            pick=lambda r: r["memories"], namespace=True),
    skips={"web": "the memory page lists a conversation's memories by its facet (/memory?conversation=...)"})
EDIT = Operation(
    "edit_memory", "Edit a memory",
    "Change a memory's text and/or set metadata keys: the id stays and a new version is written; the previous "
    "versions stay in its history (memory_versions). Fails with NotFoundError for an unknown id.",
    EditArgs, Edited, _edit, read_only=False,
    cli=Cli(("memory", "edit"), args=("memory_id", "content"), help={"content": "The new text."},
            extra={"meta": (META, "Metadata key=value to set (repeatable).", True)}, prepare=_edit_cli,
            namespace=True))
VERSIONS = Operation(
    "memory_versions", "A memory's versions",
    "Every version of one memory, oldest first (its text, metadata, when and by whom), as edits left them.",
    VersionsArgs, VersionsOut, _versions,
    cli=Cli(("memory", "versions"), args=("memory_id",), namespace=True))

MCP_TOOLS = [STORE, RETRIEVE, FORGET, GET, HISTORY, EDIT, VERSIONS]
declare(*MCP_TOOLS)
