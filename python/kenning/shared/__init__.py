"""The shared index: published snapshots of many projects in one Milvus engine.

The local index stays the working state of a checkout; ``publish`` pushes its committed
snapshot to the engine (``kenning.shared.publishing``), and search can read other projects from
there (``kenning.shared.retrieval``). Nothing here embeds, ranks or replaces the local index.
"""

from kenning.shared.publishing import PublishResult, publish, remove
from kenning.shared.reads import read_head
from kenning.store.shared_engine import Engine

__all__ = ["Engine", "PublishResult", "publish", "read_head", "remove"]
