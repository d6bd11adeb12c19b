"""Services over the store and the engines, which the library API, the CLI and the MCP server
share: the typed library (``library``), status and removal (``index_admin``), the freshness
policy (``freshness``), the self-test (``self_test``), the usage log (``usage_log``), a diff's
impact (``impact``) and the agents' transcripts (``transcripts``, for `kenning analyze`).
Internal: the API is ``kenning.__all__``.
"""
