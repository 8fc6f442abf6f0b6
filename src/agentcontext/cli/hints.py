"""Error hints in the CLI's words: a service says ``pass degrade='summaries'``, the CLI says ``--degrade summaries``.

Services name the Python parameters that fix a problem (``name=value``, ``name=<selector>``, ``name=``);
``cli_message`` rewrites each one a CLI command exposes as its flag (values unquoted, ``<selector>`` as
``SELECTOR``). Parameters the CLI has no flag for are left as they are. A Python method a hint names (``add it
with add_node() first``) becomes the command that does the same, where there is one (``METHODS``).
"""
from __future__ import annotations

import re

FLAGS = {  # only parameters whose name alone is unambiguous in a message
    "degrade": "--degrade", "budget_tokens": "--budget", "as_of": "--as-of", "related_to": "--related-to",
    "edge_type": "--edge-type", "selector_prefix": "--prefix", "expected_version": "--expected-version",
    "conversation_id": "--conversation", "user_id": "--user", "days_old": "--days-old", "type": "--type",
    "min_score": "--min-score", "max_depth": "--max-depth", "max_hops": "--max-hops", "as_lib": "--as-lib",
    "destination": "DIR",
}
METHODS = {"add_node()": "`agentcontext graph node add NODE_ID`", "list_knowledge_packs()": "`agentcontext pack list`",
           "search_knowledge finds selectors": "`agentcontext search PACK QUERY` finds selectors"}
_PARAM = re.compile(r"(?<![\w.-])([a-z][a-z_]*)=('[^']*'|\"[^\"]*\"|<[^>]*>|\.\.\.|[\w.:*-]+)?")


def _flag(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    flag = FLAGS.get(name)
    if flag is None:
        return match.group(0)
    if not value or value == "...":
        return flag
    if value[0] in "'\"":
        value = value[1:-1]
    elif value.startswith("<"):
        value = value[1:-1].upper()
    return flag if flag == "DIR" else f"{flag} {value}"


def cli_message(message: str) -> str:
    """``message`` with the Python parameters it names replaced by the CLI flags that set them."""
    for method, command in METHODS.items():
        message = message.replace(method, command)
    return _PARAM.sub(_flag, message)
