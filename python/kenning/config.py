"""Settings: defaults, then the config file, then ``KENNING_*`` environment variables, then flags.

The config file is TOML in the platform's config dir (``KENNING_CONFIG`` overrides its path).
Keys are dotted (``embedder.backend``); the environment variable of a key is ``KENNING_`` plus
the key upper-cased with dots as underscores (``KENNING_EMBEDDER_BACKEND``). Projects served
together are listed as ``[[projects]]`` tables with ``id`` and ``root``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kenning.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    default: Any
    parse: Callable[[str], Any]
    help: str


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _optional_int(text: str) -> int | None:
    return None if text.strip().lower() in {"", "none"} else int(text)


def _optional_str(text: str) -> str | None:
    return text or None


def _vector_search(text: str) -> str:
    value = text.strip().lower()
    if value not in {"auto", "exact", "ann"}:
        raise ValueError(f"expected auto, exact or ann, got {text!r}")
    return value


KEYS: dict[str, Key] = {
    k.name: k
    for k in [
        Key("embedder.backend", "local", str, "local (embedded model), ollama or openai"),
        Key("embedder.model", None, _optional_str, "model name; the backend's default if unset"),
        Key("embedder.url", None, _optional_str, "server URL for ollama or openai"),
        Key("embedder.dims", None, _optional_int, "Matryoshka truncation to this many dims"),
        Key("embedder.api_key_env", "OPENAI_API_KEY", str, "env variable holding the API key"),
        Key("embedder.batch_size", 32, int, "texts per embedding request"),
        Key("embedder.concurrency", 2, int, "embedding requests in flight at once"),
        Key("embedder.timeout", 60.0, float, "seconds before an embedding request fails"),
        Key("embedder.keep_alive", "30m", str, "how long Ollama keeps the model loaded"),
        # str, not _optional_str: "" is a real override (no prefix), unlike unset (the model's).
        Key("embedder.query_prefix", None, str, "override the model's query prefix"),
        Key("embedder.document_prefix", None, str, "override the document prefix"),
        Key("index.max_file_size", 1_048_576, int, "files larger than this many bytes are skipped"),
        # measured (benchmarks/ann_vs_exact.py, 1M x 384-bit): exact scan ~9 ms, HNSW ~0.9 ms at
        # recall@50 0.96 but ~20 min to build on 2 busy cores; exact stays <= ~20 ms below 2M
        Key("index.ann_threshold", 2_000_000, int, "vectors above which search uses usearch HNSW"),
        Key("index.vector_search", "auto", _vector_search,
            "auto (HNSW above index.ann_threshold vectors), exact (always scan) or ann (HNSW)"),
        Key("search.limit", 10, int, "results per search"),
        Key("search.refresh", True, _bool, "refresh the index before each search"),
        Key("mcp.max_tokens", 8000, int, "estimated tokens at most in one MCP tool result"),
        Key("mcp.refresh_interval", 1.0, float, "MCP server: seconds between refreshes"),
    ]
}


def config_path() -> Path:
    override = os.environ.get("KENNING_CONFIG")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_config_dir("kenning")) / "config.toml"


def env_name(key: str) -> str:
    return "KENNING_" + key.upper().replace(".", "_")


def _check_key(key: str) -> Key:
    try:
        return KEYS[key]
    except KeyError:
        raise ConfigError(
            f"Unknown config key {key!r}.", hint="`kenning config list` shows every key."
        ) from None


def _parse(spec: Key, raw: Any, origin: str) -> Any:
    if raw is None or not isinstance(raw, str):
        return raw
    try:
        return spec.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"Bad value {raw!r} for {spec.name} from {origin}: {exc}.") from None


def read_file(path: Path | None = None) -> dict[str, Any]:
    """The config file as a nested dict ({} when there is none)."""
    import tomllib

    path = path or config_path()
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read the config file {path}: {exc}.") from None


def _lookup(tree: Mapping[str, Any], key: str) -> Any:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``settings["embedder.backend"]`` or ``settings.origin(key)``."""

    values: Mapping[str, Any]
    origins: Mapping[str, str]
    projects: tuple[Mapping[str, Any], ...]

    def __getitem__(self, key: str) -> Any:
        _check_key(key)
        return self.values[key]

    def origin(self, key: str) -> str:
        return self.origins[key]


def load(overrides: Mapping[str, Any] | None = None, *, path: Path | None = None) -> Settings:
    """Resolve every key: default < file < environment < ``overrides`` (flags; None = unset)."""
    tree = read_file(path)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, spec in KEYS.items():
        value, origin = spec.default, "default"
        from_file = _lookup(tree, name)
        if from_file is not None:
            value, origin = _parse(spec, from_file, "the config file"), "file"
        from_env = os.environ.get(env_name(name))
        if from_env is not None:
            value, origin = _parse(spec, from_env, env_name(name)), "env"
        values[name], origins[name] = value, origin
    for name, value in (overrides or {}).items():
        spec = _check_key(name)
        if value is not None:
            values[name], origins[name] = _parse(spec, value, "the command line"), "flag"
    projects = tree.get("projects", [])
    if not isinstance(projects, list) or not all(isinstance(p, dict) for p in projects):
        raise ConfigError("`projects` in the config file must be a list of [[projects]] tables.")
    return Settings(values, origins, tuple(projects))


def set_value(key: str, raw: str, *, path: Path | None = None) -> Any:
    """Validate ``raw`` for ``key`` and write it to the config file, keeping its comments."""
    import tomlkit

    spec = _check_key(key)
    value = _parse(spec, raw, "the command line")
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        doc = tomlkit.parse(text)
    except (OSError, tomlkit.exceptions.ParseError) as exc:
        raise ConfigError(f"Cannot read the config file {path}: {exc}.") from None
    table: Any = doc
    *parents, leaf = key.split(".")
    for part in parents:
        if part not in table:
            table[part] = tomlkit.table()
        table = table[part]
    if value is None:
        table.pop(leaf, None)
    else:
        table[leaf] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)
    return value
