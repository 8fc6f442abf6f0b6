"""``python -m agentcontext.cli``: the same as the ``agentcontext`` command."""
from .entry import main

main()
