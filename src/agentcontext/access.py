"""Who may do what to which record: the one access rule every service applies, whichever door a call came through.

A grant gives a principal ``read``, ``write`` or ``admin`` on a PATTERN, a glob over access names. Every
record lives in a namespace, and the namespace is its access name: a pack (``lib:<slug>``,
``pkg:<scope>.<repo>.<package>.<pack>``), a memory store (``memory:<name>``, ``memory:default`` being the one
the CLI and MCP use) or a graph (``graph:<name>``; ``graph:default`` is the workspace graph decisions,
policies and checkpoints live in). A pattern without ``/`` covers whole namespaces (``lib:hr-*``,
``memory:*``, ``*``); a pattern with ``/`` is a glob over doc ids ``<pack>/<selector>`` (``lib:eng/api.*``)
and covers only the docs it matches. Reading needs ``read``; writing (storing, recording, checking
compliance, editing) needs ``write``; changing a record of another namespace than the one a call works on
(an erasure reaching a doc) needs ``admin`` on it.

The owner holds admin on everything, and a call without a principal acts as the owner. Until a workspace
has another principal (a grant or a token was ever issued) everything is allowed (single-user mode); after
that every call is checked and a revoked principal does not fall back to single-user mode.

A principal sees a record when it may read the record's namespace (for a pack: that doc), and an edge when
it sees both ends and may read the edge's namespace (``Sight``). Traversals return only what the principal
sees and never walk through anything else; a record it may not see answers like one that does not exist.

Denied attempts are appended to the audit log before the error is raised; successful writes are audited by
the service that made them (``record``).
"""
from __future__ import annotations

import fnmatch
import hashlib
import re
import secrets
from typing import Any, Callable, Iterable, Sequence

from .errors import AccessDeniedError, NotFoundError, ReadOnlyError, ValidationError
from .model import to_utc_iso, utcnow
from .store import Capability
from .workspace import Workspace

LEVELS = {"read": 1, "write": 2, "admin": 3}
GRANT = "grant"
TOKEN = "token"
ACCESS = "access"  # record kind; key "mode" marks a workspace that went multi-user
TOKEN_PREFIX = "actx_"
PRINCIPAL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
PATTERN_RE = re.compile(r"^[A-Za-z0-9_.:*?\[\]/!-]{1,200}$")


def effective_principal(ws: Workspace, principal: str | None) -> str:
    return principal or ws.owner


# --- state ---------------------------------------------------------------------------------------


def _state(ws: Workspace) -> tuple[list[dict], bool]:
    def build() -> tuple[list[dict], bool]:
        grants = [v for _, v in ws.store.list_records(GRANT)]
        return grants, bool(grants) or ws.store.get_record(ACCESS, "mode") is not None

    return ws.cached("access.state", build)


def _grants(ws: Workspace) -> list[dict]:
    return _state(ws)[0]


def multi_user(ws: Workspace) -> bool:
    return _state(ws)[1]


def _mark_multi_user(ws: Workspace, actor: str) -> None:
    if ws.store.get_record(ACCESS, "mode") is None:
        ws.store.put_record(ACCESS, "mode", {"multi_user": True, "since": utcnow()}, actor=actor)


def _split(pattern: str) -> tuple[str, str | None]:
    pack, _, doc = pattern.partition("/")
    return pack, (doc if "/" in pattern else None)


def _unrestricted(ws: Workspace, who: str) -> bool:
    return who == ws.owner or not multi_user(ws)


# --- checks --------------------------------------------------------------------------------------


def level_for(ws: Workspace, principal: str | None, pack: str) -> int:
    """The level ``principal`` holds on the whole of ``pack`` (0 = none)."""
    who = effective_principal(ws, principal)
    if _unrestricted(ws, who):
        return LEVELS["admin"]
    best = 0
    for g in _grants(ws):
        if g["principal"] == who and "/" not in g["pattern"] and fnmatch.fnmatchcase(pack, g["pattern"]):
            best = max(best, LEVELS[g["level"]])
    return best


def level_for_doc(ws: Workspace, principal: str | None, pack: str, selector: str) -> int:
    """The level on one doc: the pack-wide level or a doc-pattern grant, whichever is higher."""
    best = level_for(ws, principal, pack)
    if best == LEVELS["admin"]:
        return best
    who = effective_principal(ws, principal)
    target = f"{pack}/{selector}"
    for g in _grants(ws):
        if g["principal"] == who and "/" in g["pattern"] and fnmatch.fnmatchcase(target, g["pattern"]):
            best = max(best, LEVELS[g["level"]])
    return best


def can(ws: Workspace, principal: str | None, pack: str, level: str = "read") -> bool:
    """Whether ``principal`` holds ``level`` on every doc of ``pack``."""
    return level_for(ws, principal, pack) >= LEVELS[level]


def can_doc(ws: Workspace, principal: str | None, pack: str, selector: str, level: str = "read") -> bool:
    return level_for_doc(ws, principal, pack, selector) >= LEVELS[level]


def can_see(ws: Workspace, principal: str | None, pack: str) -> bool:
    """Whether ``principal`` may read the pack or at least some of its docs (so it may know it exists)."""
    if can(ws, principal, pack, "read"):
        return True
    who = effective_principal(ws, principal)
    for g in _grants(ws):
        if g["principal"] == who and "/" in g["pattern"]:
            pack_pattern, _ = _split(g["pattern"])
            if fnmatch.fnmatchcase(pack, pack_pattern):
                return True
    return False


def doc_filter(ws: Workspace, principal: str | None, pack: str, level: str = "read"
               ) -> Callable[[str], bool] | None:
    """None when ``principal`` holds ``level`` on the whole pack, else a predicate over selectors."""
    need = LEVELS[level]
    if level_for(ws, principal, pack) >= need:
        return None
    who = effective_principal(ws, principal)
    patterns = [g["pattern"] for g in _grants(ws)  # one snapshot of the grants for the whole call
                if g["principal"] == who and "/" in g["pattern"] and LEVELS[g["level"]] >= need]
    return lambda selector: any(fnmatch.fnmatchcase(f"{pack}/{selector}", p) for p in patterns)


def deny(ws: Workspace, principal: str | None, action: str, target: str, needed: str, pack: str,
         selector: str | None = None, hint: str | None = None) -> AccessDeniedError:
    """Audit a denied attempt and return the error to raise."""
    who = effective_principal(ws, principal)
    detail: dict[str, Any] = {"needed": needed}
    if selector is not None:
        detail["selector"] = selector
    ws.store.append_audit(who, action, target, "denied", detail)
    what = f"{selector!r} in {pack}" if selector is not None else pack
    grant_on = f"{pack}/{selector}" if selector is not None else pack
    message = (f"{who} may not {action} {what}: needs {needed}; "
               + (hint or f"ask an admin for `agentcontext grant {who} {grant_on} {needed}`"))
    data: dict[str, Any] = {"principal": who, "pack": pack, "target": target, "needed": needed}
    if selector is not None:
        data["selector"] = selector
    return AccessDeniedError(message, **data)


def require(ws: Workspace, principal: str | None, pack: str, level: str, action: str, target: str = "") -> None:
    """Raise AccessDeniedError (and audit the attempt) unless ``principal`` holds ``level`` on all of ``pack``."""
    if not can(ws, principal, pack, level):
        raise deny(ws, principal, action, target or pack, level, pack)


def require_visible(ws: Workspace, principal: str | None, pack: str, action: str, target: str = "") -> None:
    """For reads that work on the readable part of a pack: deny only if no doc of it is readable.

    Callers check this before looking the pack up, so a pack one may not read and a pack that does
    not exist answer alike (the existence of an unreadable pack is not revealed).
    """
    if not can_see(ws, principal, pack):
        raise deny(ws, principal, action, target or pack, "read", pack)


def require_doc(ws: Workspace, principal: str | None, pack: str, selector: str, level: str, action: str) -> None:
    if not can_doc(ws, principal, pack, selector, level):
        raise deny(ws, principal, action, f"{pack}/{selector}", level, pack, selector)


def require_writable(pack: str) -> None:
    if pack.startswith("pkg:"):
        raise ReadOnlyError(f"{pack} is package knowledge and read-only; copy it with `agentcontext pack add PATH "
                            "--as-lib SLUG` to edit", pack=pack)


def visible(ws: Workspace, principal: str | None, packs: Iterable[str]) -> list[str]:
    return [p for p in packs if can_see(ws, principal, p)]


def is_superadmin(ws: Workspace, principal: str | None) -> bool:
    """The owner, anyone in single-user mode, or a principal granted admin on ``*``."""
    who = effective_principal(ws, principal)
    if _unrestricted(ws, who):
        return True
    return any(g["principal"] == who and g["level"] == "admin" and g["pattern"] == "*" for g in _grants(ws))


def can_administer(ws: Workspace, principal: str | None, pattern: str) -> bool:
    """Whether ``principal`` may grant or revoke on ``pattern``: admin on a pattern that covers it."""
    who = effective_principal(ws, principal)
    if _unrestricted(ws, who):
        return True
    return any(g["principal"] == who and g["level"] == "admin" and fnmatch.fnmatchcase(pattern, g["pattern"])
               for g in _grants(ws))


def record(ws: Workspace, principal: str | None, action: str, target: str, detail: dict[str, Any] | None = None,
           outcome: str = "ok") -> None:
    """Audit a successful write (or another outcome) under the acting principal."""
    ws.store.append_audit(effective_principal(ws, principal), action, target, outcome, detail or {})


def require_own(ws: Workspace, principal: str | None, namespace: str, found: str, node_id: str, action: str) -> None:
    """A call working on ``namespace`` that would change a record of ``found``: refused for ``pkg:`` docs
    (read-only to everyone), else it needs admin on ``found``."""
    if found == namespace:
        return
    if found.startswith("pkg:"):
        ws.store.append_audit(effective_principal(ws, principal), action, node_id, "denied", {"reason": "read-only"})
        require_writable(found)
    require(ws, principal, found, "admin", action, node_id)


# --- what a principal sees -----------------------------------------------------------------------


PACK_PREFIXES = ("lib:", "pkg:")


def reads_everything(ws: Workspace, principal: str | None) -> bool:
    """The owner, anyone in single-user mode, and a principal granted read (or more) on ``*``."""
    who = effective_principal(ws, principal)
    return _unrestricted(ws, who) or any(g["principal"] == who and g["pattern"] == "*" for g in _grants(ws))


def require_whole_view(ws: Workspace, principal: str | None, action: str, target: str, what: str,
                       hint: str) -> None:
    """Refuse (audited) a caller-chosen id to a principal who does not read every namespace.

    Some ids name one record across the whole workspace (a decision id, a policy id, an exception's or an
    approval's id, a checkpoint label). Had such a principal chosen one, the answer would depend on records it
    may not read (taken by a hidden one: a conflict; free: success), which tells it that they exist. So only a
    principal who reads everything chooses them, and anyone else gets this same refusal whether or not the id is
    taken, with ``hint`` saying what to do instead (most often: let the service assign the id)."""
    if reads_everything(ws, principal):
        return
    who, target = effective_principal(ws, principal), str(target)[:300]
    ws.store.append_audit(who, action, target, "denied", {"needed": "read on *", "reason": "chosen id"})
    raise AccessDeniedError(f"{who} may not choose {what}: it names one record across the whole workspace, so "
                            f"choosing it needs read on every namespace (`agentcontext grant {who} * read`); {hint}",
                            principal=who, target=target, needed="read", pack="*")


def require_chosen_ids(ws: Workspace, principal: str | None, ids: Sequence[str], action: str, what: str,
                       hint: str) -> None:
    """``require_whole_view`` for writes that may name existing records by id (a memory import, a batch with
    ``id``): ids of records the principal sees pass (they update its own records), and any other chosen id
    (free, or held by a record it may not read: the two answer alike) needs read on every namespace."""
    if not ids or reads_everything(ws, principal):
        return
    sight = Sight(ws, principal)
    found = ws.store.get_nodes(list(ids))
    unseen = [i for i in ids if i not in found or not sight.node(found[i])]
    if unseen:
        require_whole_view(ws, principal, action, unseen[0], what, hint)


class Sight:
    """What one principal may read, from one snapshot of its grants.

    ``namespace(ns)``: it may read all of ``ns``; ``node(node)``: it may read that record (its namespace, or
    for a pack that doc); ``edge(edge, seen)``: it may read the edge's namespace and ``seen`` (a predicate over
    store ids, or a set) holds both ends; ``namespaces()``: the namespaces it may read whole that hold
    records, the world a workspace-wide traversal walks for it."""

    def __init__(self, ws: Workspace, principal: str | None) -> None:
        self.ws = ws
        self.principal = principal
        self.who = effective_principal(ws, principal)
        self._whole: dict[str, bool] = {}
        self._docs: dict[str, Callable[[str], bool]] = {}

    def namespace(self, ns: str) -> bool:
        found = self._whole.get(ns)
        if found is None:
            found = self._whole[ns] = can(self.ws, self.principal, ns, "read")
        return found

    def node(self, node: Any) -> bool:
        ns = node.namespace
        if self.namespace(ns):
            return True
        if not ns.startswith(PACK_PREFIXES):
            return False
        readable = self._docs.get(ns)
        if readable is None:
            readable = self._docs[ns] = doc_filter(self.ws, self.principal, ns) or (lambda _selector: True)
        return readable(node.key)

    def edge(self, edge: Any, seen: Any) -> bool:
        return self.namespace(edge.namespace) and edge.src in seen and edge.dst in seen

    def follows(self, namespace: str) -> bool:
        """Whether a walk may take an edge of ``namespace`` (its ends are checked apart): the principal may read
        that namespace, or it is a pack's (its own ``related`` edges, between docs it may read). An edge another
        namespace holds between two records the principal reads (the workspace graph's link from a doc to a
        person of another graph) is that namespace's record: a walk over it would tell what that namespace says."""
        return namespace.startswith(PACK_PREFIXES) or self.namespace(namespace)

    def namespaces(self) -> list[str]:
        return self.ws.cached(f"access.sight:{self.who}",
                              lambda: [ns for ns in self.ws.store.namespaces() if self.namespace(ns)])

    def visible(self, ids: Iterable[str], as_of: str | None = None) -> set[str]:
        """Which of these store ids name records the principal sees (ids of nothing are left out)."""
        return {i for i, n in self.ws.store.get_nodes(list(ids), as_of=as_of).items() if self.node(n)}


def sight(ws: Workspace, principal: str | None) -> Sight | None:
    """None when ``principal`` may read everything (nothing to filter); else its ``Sight``."""
    return None if reads_everything(ws, principal) else Sight(ws, principal)


# --- grants --------------------------------------------------------------------------------------


def check_principal(name: Any, what: str = "principal") -> str:
    if not isinstance(name, str) or not PRINCIPAL_RE.match(name):
        raise ValidationError(f"{what} {name!r} must be 1-100 letters, digits or . _ @ + - (starting with a "
                              "letter or digit)", principal=str(name)[:100])
    return name


def check_pattern(pattern: Any) -> str:
    if not isinstance(pattern, str) or not PATTERN_RE.match(pattern):
        raise ValidationError(f"pattern {str(pattern)[:80]!r} must be a glob over pack names (lib:hr-*, pkg:acme.*, *) "
                              "or doc ids (lib:eng/api.*)", pattern=str(pattern)[:200])
    return pattern


def grant(ws: Workspace, principal: str, pattern: str, level: str, actor: str | None = None) -> dict:
    """Give ``principal`` ``level`` on ``pattern``; only an admin covering the pattern may (once multi-user)."""
    check_principal(principal)
    check_pattern(pattern)
    if level not in LEVELS:
        raise ValidationError(f"unknown level {level!r}; use read, write or admin", level=level)
    if principal == ws.owner:
        raise ValidationError(f"cannot grant to {principal!r}: the owner already holds admin on everything")
    who = effective_principal(ws, actor)
    if not can_administer(ws, actor, pattern):
        raise deny(ws, actor, "grant", f"{principal} {pattern} {level}", "admin", pattern,
                   hint="only an admin of a pattern covering it may grant on it")
    record = {"principal": principal, "pattern": pattern, "level": level, "granted_by": who, "granted_at": utcnow()}
    with ws.store.transaction():
        ws.store.put_record(GRANT, f"{principal}\x1f{pattern}", record, actor=who)
        _mark_multi_user(ws, who)
        ws.store.append_audit(who, "grant", f"{principal} {pattern}", "ok", {"level": level})
    return record


def revoke(ws: Workspace, principal: str, pattern: str, actor: str | None = None) -> bool:
    """Remove the grant of ``principal`` on exactly ``pattern``; False if there was none."""
    check_principal(principal)
    check_pattern(pattern)
    who = effective_principal(ws, actor)
    if not can_administer(ws, actor, pattern):
        raise deny(ws, actor, "revoke", f"{principal} {pattern}", "admin", pattern,
                   hint="only an admin of a pattern covering it may revoke on it")
    with ws.store.transaction():
        removed = ws.store.delete_record(GRANT, f"{principal}\x1f{pattern}", actor=who)
        ws.store.append_audit(who, "revoke", f"{principal} {pattern}", "ok" if removed else "absent")
    return removed


def grants(ws: Workspace, actor: str | None = None) -> list[dict]:
    """The grants ``actor`` may see: all for a superadmin, else its own and those on patterns it administers."""
    everything = sorted(_grants(ws), key=lambda g: (g["principal"], g["pattern"]))
    if is_superadmin(ws, actor):
        return everything
    who = effective_principal(ws, actor)
    return [g for g in everything if g["principal"] == who or can_administer(ws, actor, g["pattern"])]


# --- tokens --------------------------------------------------------------------------------------


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(ws: Workspace, principal: str, actor: str | None = None, note: str = "") -> dict[str, Any]:
    """Issue a bearer token for ``principal`` (only its hash is stored; the token is shown once)."""
    check_principal(principal)
    who = effective_principal(ws, actor)
    if not is_superadmin(ws, actor):
        raise deny(ws, actor, "token.create", principal, "admin", "*",
                   hint="only the owner or an admin of `*` may issue tokens")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    digest = _token_hash(token)
    record = {"principal": principal, "created_at": utcnow(), "created_by": who, "note": note, "id": digest[:12]}
    with ws.store.transaction():
        ws.store.put_record(TOKEN, digest, record, actor=who)
        if principal != ws.owner:
            _mark_multi_user(ws, who)
        ws.store.append_audit(who, "token.create", principal, "ok", {"id": record["id"]})
    return {**record, "token": token}


def principal_for_token(ws: Workspace, token: str | None) -> str | None:
    """The principal a bearer token stands for, or None for a missing, unknown or revoked one."""
    if not token or not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    record = ws.store.get_record(TOKEN, _token_hash(token))
    return record["principal"] if record else None


def tokens(ws: Workspace, actor: str | None = None) -> list[dict[str, Any]]:
    """Issued tokens (never the secret): id, principal, created_at, created_by, note."""
    if not is_superadmin(ws, actor):
        raise deny(ws, actor, "token.list", "tokens", "admin", "*",
                   hint="only the owner or an admin of `*` may list tokens")
    return [v for _, v in ws.store.list_records(TOKEN)]


def revoke_token(ws: Workspace, token_id: str, actor: str | None = None) -> bool:
    """Revoke a token by its id (the first 12 hex digits of its hash, as `tokens` lists it)."""
    if not is_superadmin(ws, actor):
        raise deny(ws, actor, "token.revoke", token_id, "admin", "*",
                   hint="only the owner or an admin of `*` may revoke tokens")
    who = effective_principal(ws, actor)
    for key, value in ws.store.list_records(TOKEN):
        if value.get("id") == token_id:
            with ws.store.transaction():
                ws.store.delete_record(TOKEN, key, actor=who)
                ws.store.append_audit(who, "token.revoke", value["principal"], "ok", {"id": token_id})
            return True
    raise NotFoundError(f"no token with id {token_id!r}; `agentcontext token list` shows them", id=token_id)


# --- audit ---------------------------------------------------------------------------------------


_AGE = re.compile(r"^(\d+)([smhdw])$")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def relative_time(value: Any) -> Any:
    """An age like ``30m``, ``12h``, ``7d`` or ``2w`` becomes the ISO time that long ago; anything else is kept."""
    match = _AGE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        return value
    from datetime import datetime, timedelta, timezone

    delta = timedelta(**{_AGE_UNITS[match.group(2)]: int(match.group(1))})
    return (datetime.now(timezone.utc) - delta).isoformat()


def audit_log(ws: Workspace, actor: str | None = None, principal: str | None = None, since: Any = None,
              limit: int | None = None, action: str | None = None, outcome: str | None = None,
              until: Any = None) -> list[dict]:
    """Audit entries (oldest first). A superadmin sees everyone's; others only their own.

    ``action`` matches exactly or, ending in ``*``, as a prefix (``doc.*``); ``outcome`` matches exactly
    (``ok``, ``denied``, ...); ``since``/``until`` bound the time (``until`` exclusive); ``limit`` keeps the
    latest N entries that pass every filter. A time may be ISO-8601 or an age like ``30m``, ``12h``, ``7d``."""
    stamp = to_utc_iso(relative_time(since)) if since is not None else None
    end = to_utc_iso(relative_time(until)) if until is not None else None
    if not is_superadmin(ws, actor):
        who = effective_principal(ws, actor)
        if principal not in (None, who):
            raise deny(ws, actor, "audit.read", principal, "admin", "*",
                       hint="only the owner or an admin of `*` may read other principals' audit entries")
        principal = who
    if action is None and outcome is None and end is None:
        return ws.store.audit(principal=principal, since=stamp, limit=limit)
    rows = ws.store.audit(principal=principal, since=stamp)
    if action is not None:
        rows = [r for r in rows if (r["action"].startswith(action[:-1]) if action.endswith("*")
                                    else r["action"] == action)]
    if outcome is not None:
        rows = [r for r in rows if r["outcome"] == outcome]
    if end is not None:
        rows = [r for r in rows if r["at"] < end]
    return rows[-limit:] if limit else rows


def store_fold(ws: Workspace, actor: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Move the store's delta of unindexed vectors into its ANN indexes now (``Capability.VECTOR_DELTA``;
    PostgreSQL, store/pg_delta.py): writes to the whole store's indexes, so the owner or an admin of ``*`` only.
    A store without a delta (SQLite) has nothing to fold."""
    if not is_superadmin(ws, actor):
        raise deny(ws, actor, "store.fold", "store", "admin", "*",
                   hint="only the owner or an admin of `*` may fold the store's vectors into its indexes")
    store = ws.store
    if Capability.VECTOR_DELTA not in store.capabilities:
        return {"backend": store.backend, "folded": 0, "chunks": 0, "pending": 0, "seconds": 0.0,
                "note": "this store keeps no delta: its vectors are searched as they are written"}
    done = {"backend": store.backend, **store.fold(progress=progress)}
    done["packed"] = store.pack()["packed"]  # then the context vectors written since, as int8 (store/pg_q8.py)
    return done


def store_info(ws: Workspace, actor: str | None = None) -> dict[str, Any]:
    """The store's URL, schema version and migrations, counts and sizes (``Store.info``): every namespace is
    named and counted, so only the owner or an admin of ``*`` may see it once the workspace is multi-user."""
    if not is_superadmin(ws, actor):
        raise deny(ws, actor, "store.info", "store", "admin", "*",
                   hint="only the owner or an admin of `*` may see what the whole store holds")
    return ws.store.info()
