"""Hybrid code search: vector, BM25 and symbol branches fused by RRF, then ranked."""

from kenning.retrieval.api import get_chunk, search
from kenning.retrieval.projects import ProjectRef, resolve_projects

__all__ = ["ProjectRef", "get_chunk", "resolve_projects", "search"]
