"""Hybrid code search over one source: vector, BM25 and symbol branches fused by RRF, then
ranked (``pipeline``); the search over projects that drives it is ``kenning.services.search``."""

from kenning.retrieval.projects import ProjectRef, resolve_projects

__all__ = ["ProjectRef", "resolve_projects"]
