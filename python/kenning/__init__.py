"""kenning: local semantic code search for coding agents and the people who drive them."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kenning")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
