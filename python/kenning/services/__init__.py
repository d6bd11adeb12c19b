"""Services over the store and the engines, which the library API, the CLI and the MCP server
share: the typed library (``library``), a search over projects (``search``), a chunk by its
id (``chunks``), the code related to a declaration (``related``), status and removal
(``index_admin``), the freshness policy (``freshness``), the self-test (``self_test``), a diff's
impact (``impact``) and the agents' transcripts (``transcripts``, for `kenning analyze`).
Internal: the API is ``kenning.__all__``.
"""
