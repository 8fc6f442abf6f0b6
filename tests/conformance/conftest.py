# The spec modules run through each backend's test file (tests/test_conformance_*.py), never on their own.
collect_ignore_glob = ["test_*.py"]
