"""kenning: local semantic code search for coding agents and the people who drive them."""

import os

# onnxruntime's telemetry writes a device id and queues usage events under
# ~/.cache/Microsoft as soon as it is imported; only this switch, set before that import,
# stops it. Set here, it holds in every kenning process and the processes they start.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, read from the package metadata on first use: importlib.metadata costs
    ~20 ms that `kenning --help` and every search would otherwise pay at start."""
    if name != "__version__":
        raise AttributeError(f"module 'kenning' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("kenning")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
