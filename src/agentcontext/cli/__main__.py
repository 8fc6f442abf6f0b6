"""``python -m agentcontext.cli``: the same as the ``agentcontext`` command."""
from .root import main

main()
