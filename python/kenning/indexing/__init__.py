"""Indexing: which files (``sources``), the refresh that chunks, embeds and commits them
(``indexer``), the record of a running indexer (``state``) and the approximate-search graph
(``ann``). Internal: the API is ``kenning.__all__``.
"""
