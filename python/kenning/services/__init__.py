"""Services over the store and the engines, which the library API, the CLI and the MCP server
share: the typed library (``library``), status and removal (``index_admin``), the freshness
policy (``freshness``), the self-test (``self_test``) and the usage log (``usage_log``).
Internal: the API is ``kenning.__all__``.
"""
