"""Settings: defaults, then the config file, then ``KENNING_*`` environment variables, then flags.

The config file is TOML: ``$KENNING_CONFIG`` if set, else ``$KENNING_HOME/config.toml`` if
``KENNING_HOME`` is set (so a separate home is a separate set-up), else ``config.toml`` in the
platform's user config dir.
Keys are dotted (``embedder.backend``); the environment variable of a key is ``KENNING_`` plus
the key upper-cased with dots as underscores (``KENNING_EMBEDDER_BACKEND``). Projects served
together are listed as ``[[projects]]`` tables with ``id`` and ``root``.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

from kenning.embedders import BACKENDS, DEFAULT, reading
from kenning.errors import ConfigError
from kenning.records import EMBEDDED_KINDS, FILE_KINDS

# Below this an MCP result cannot hold even one snippet and its notice.
MIN_MCP_TOKENS = 500


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    default: Any
    # A value from the config file (any TOML type) or a string (command line, environment) ->
    # the setting; ValueError with what was expected. The one validator of the key: writing
    # and reading check the same way.
    convert: Callable[[Any], Any]
    help: str
    older_env: str | None = None  # an earlier name of its environment variable, still read


def _integer(low: int, high: int | None = None) -> Callable[[Any], int]:
    expected = (f"a whole number from {low} to {high}" if high is not None
                else f"a whole number of at least {low}")

    def convert(value: Any) -> int:
        if isinstance(value, str):
            try:
                value = int(value.strip().replace("_", ""))
            except ValueError:
                raise ValueError(f"expected {expected}") from None
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (
                high is not None and value > high):
            raise ValueError(f"expected {expected}")
        return value

    return convert


def _seconds(low: float, *, zero: bool) -> Callable[[Any], float]:
    expected = f"a number of seconds {'of at least' if zero else 'above'} {low:g}"

    def convert(value: Any) -> float:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ValueError(f"expected {expected}") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value) or value < low or (value == low and not zero):
            raise ValueError(f"expected {expected}")
        return float(value)

    return convert


def _listed(names: list[str] | tuple[str, ...]) -> str:
    """``a, b or c``."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def _choice(*choices: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = value.strip().lower() if isinstance(value, str) else None
        if text in choices:
            return text
        nearest = difflib.get_close_matches(str(text or value), choices, n=1)
        guess = f" (did you mean {nearest[0]}?)" if nearest else ""
        raise ValueError(f"expected {_listed(choices)}{guess}")

    return convert


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text (in the config file, a quoted string)")
    return value


def _name(value: Any) -> str:
    name = _text(value).strip()
    if not name:
        raise ValueError("expected a name, got nothing")
    return name


SHARED_SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")  # else a milvus-lite file


def _shared_uri(value: Any) -> str:
    text = _text(value).strip()
    if text.startswith(SHARED_SERVER_SCHEMES) or text.endswith(".db"):
        return text
    raise ValueError("expected an http(s):// Milvus server or a local file ending in .db")


def _group(value: Any) -> str:
    """An access group: part of a Milvus collection name (letters, digits, underscores)."""
    text = _text(value).strip()
    if text and not (len(text) <= 64 and text.isascii()
                     and all(c.isalnum() or c == "_" for c in text)):
        raise ValueError("expected up to 64 letters, digits or underscores")
    return text


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Unset by an empty value (or "none" from the command line)."""
    def optional(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in {"", "none"}:
            return None
        return convert(value)

    return optional


def _url(value: Any) -> str:
    text = _text(value).strip()
    scheme, _, rest = text.partition("://")
    if scheme.lower() not in {"http", "https"} or not rest.strip("/"):
        raise ValueError("expected an http:// or https:// URL such as http://localhost:11434")
    return text


def _kinds(value: Any) -> tuple[str, ...]:
    """File kinds, as a TOML list or (command line, environment) separated by commas."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"expected a list of kinds from {', '.join(FILE_KINDS)}")
    kinds = tuple(dict.fromkeys(i.strip().lower() for i in items if i.strip()))
    unknown = [k for k in kinds if k not in FILE_KINDS]
    if unknown:
        raise ValueError(f"expected kinds from {', '.join(FILE_KINDS)}, not {unknown[0]!r}")
    return kinds


def _keep_alive(value: Any) -> str:
    """Ollama takes a duration ("30m") or seconds (-1: forever); TOML may give the number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    duration = _text(value).strip()
    if not duration:
        raise ValueError('expected a duration such as "30m", or seconds (-1: forever)')
    return duration


KEYS: dict[str, Key] = {
    k.name: k
    for k in [
        Key("embedder.backend", DEFAULT, _choice(*BACKENDS),
            _listed([f"{b.name} ({b.summary})" for b in BACKENDS.values()])),
        Key("embedder.model", None, _optional(_name),
            "model name; the backend's default if unset"),
        Key("embedder.url", None, _optional(_url),
            f"server URL for {_listed(reading('embedder.url'))}"),
        Key("embedder.dims", None, _optional(_integer(1)),
            "Matryoshka truncation to this many dims"),
        Key("embedder.api_key_env", "OPENAI_API_KEY", _name, "env variable holding the API key"),
        Key("embedder.batch_size", 32, _integer(1, 4096), "texts per embedding request"),
        Key("embedder.concurrency", 2, _integer(1, 64), "embedding requests in flight at once"),
        Key("embedder.timeout", 60.0, _seconds(0, zero=False),
            "seconds before an embedding request fails, however the server trickles its answer"),
        Key("embedder.service", True, _bool,
            "CLI calls and MCP servers share the local model through one background service "
            "per KENNING_HOME (false: each process loads it)"),
        Key("embedder.service_idle", 600.0, _seconds(0, zero=False),
            "seconds the local model's service waits for a request before it exits"),
        Key("embedder.keep_alive", "30m", _keep_alive, "how long Ollama keeps the model loaded"),
        Key("embedder.runtime", "auto", _choice("auto", "onnxruntime", "openvino"),
            "the local model's runtime: auto (OpenVINO where it is installed and the CPU has "
            "VNNI or AMX, else onnxruntime), onnxruntime or openvino",
            older_env="KENNING_RUNTIME"),
        # _text, not optional: "" is a real override (no prefix), unlike unset (the model's).
        Key("embedder.query_prefix", None, _text, "override the model's query prefix"),
        Key("embedder.document_prefix", None, _text, "override the document prefix"),
        Key("index.max_file_size", 1_048_576, _integer(1),
            "files larger than this many bytes are skipped"),
        # exact below it: the scan stays fast enough, and HNSW's long build and lost recall do
        # not pay (benchmarks/README.md)
        Key("index.ann_threshold", 2_000_000, _integer(1),
            "vectors above which search uses usearch HNSW"),
        Key("index.vector_search", "auto", _choice("auto", "exact", "ann"),
            "auto (HNSW above index.ann_threshold vectors), exact (always scan) or ann (HNSW)"),
        Key("index.embed_kinds", EMBEDDED_KINDS, _kinds,
            "kinds of files whose chunks get vectors; the others (vendored, fixture, data, "
            "generated by default) are found by words and symbols"),
        Key("index.hook_budget", 600.0, _seconds(0, zero=True),
            "seconds of embedding the agents' session-start hook may start; above it, it indexes "
            "words and symbols only and says how to embed the rest"),
        Key("index.force_root", False, _bool,
            "index a home folder, / or a large folder without a project marker"),
        Key("search.limit", 10, _integer(1, 1000), "results per search"),
        Key("search.refresh", True, _bool, "refresh the index before each search"),
        Key("search.embed_limit", 64, _integer(0, 10_000),
            "chunks without a vector a search embeds before it answers; a larger backlog (a "
            "first index) is embedded in the background"),
        Key("search.timeout", 30.0, _seconds(0, zero=False),
            "seconds a search waits for the embedder before it answers from words and symbols"),
        Key("search.backend", "local", _choice("local", "shared", "both"),
            "local (this machine's indexes), shared (the shared index) or both (the current "
            "checkout locally, every other project from the shared index)"),
        Key("shared.uri", None, _optional(_shared_uri),
            "the shared index: an http(s):// Milvus server, or a local .db file for a trial"),
        Key("shared.token_env", "MILVUS_TOKEN", _name,
            "env variable holding the shared index's token (user:password or an API key)"),
        Key("shared.group", "", _group,
            "access group: its own collections in the shared index (kenning_<group>_<model>...)"
            ", which the engine's users and roles grant; empty for the default ones"),
        Key("shared.vectors", True, _bool,
            "ask the shared index for the vectors of new chunks (by content) before embedding "
            "them"),
        Key("shared.timeout", 10.0, _seconds(0, zero=False),
            "seconds to wait for each answer of the shared index; past it, an index embeds "
            "locally"),
        Key("mcp.max_tokens", 8000, _integer(MIN_MCP_TOKENS),
            "estimated tokens at most in one MCP tool result"),
        Key("mcp.refresh_interval", 1.0, _seconds(0, zero=True),
            "MCP server: seconds between refreshes"),
    ]
}


def config_path() -> Path:
    override = os.environ.get("KENNING_CONFIG")
    if override:
        return Path(override)
    home = os.environ.get("KENNING_HOME")
    if home:
        return Path(home) / "config.toml"
    from kenning import hostos

    return hostos.folders()[0] / "config.toml"


def env_name(key: str) -> str:
    return "KENNING_" + key.upper().replace(".", "_")


def _unknown(key: str, where: str = "") -> ConfigError:
    nearest = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
    guess = f" Did you mean {nearest[0]!r}?" if nearest else ""
    return ConfigError(f"Unknown config key {key!r}{where}.{guess}",
                       hint="`kenning config list` shows every key.")


def toml_value(value: Any) -> str:
    """``value`` as it is written in TOML (``true``, ``"local"``, ``30``)."""
    import tomlkit

    return str(tomlkit.item(value).as_string())


def model_origin(settings: Settings) -> str:
    """The setting that chose the embedding model and where its value came from, for errors
    and status: ``embedder.model = "x" (KENNING_EMBEDDER_MODEL)``, or the backend when no
    model is set (``embedder.backend = "local" (default)``)."""
    key = "embedder.model" if settings["embedder.model"] is not None else "embedder.backend"
    return setting_origin(settings, key)


def setting_origin(settings: Settings, key: str) -> str:
    """``key = value (where it came from)``: ``embedder.runtime = "auto" (default)``."""
    where = {"env": _env_source(KEYS[key])[1], "file": "config file", "flag": "command line"}
    return f"{key} = {toml_value(settings[key])} ({where.get(settings.origin(key), 'default')})"


def _env_source(spec: Key) -> tuple[str | None, str]:
    """The environment's value of ``spec`` and the variable it came from (its own name first,
    then the older one)."""
    for name in (env_name(spec.name), spec.older_env):
        if name is not None and name in os.environ:
            return os.environ[name], name
    return None, env_name(spec.name)


def _check_key(key: str) -> Key:
    try:
        return KEYS[key]
    except KeyError:
        raise _unknown(key) from None


def _parse(spec: Key, raw: Any, origin: str, hint: str | None = None) -> Any:
    try:
        return spec.convert(raw)
    except ValueError as exc:
        shown = raw if isinstance(raw, str | int | float | bool) else type(raw).__name__
        raise ConfigError(f"Bad value {shown!r} for {spec.name} from {origin}: {exc}.",
                          hint=hint) from None


def _file_hint(key: str) -> str:
    return (f"Set a good value with `kenning config set {key} VALUE`, or go back to the default "
            f"with `kenning config unset {key}`.")


def read_file(path: Path | None = None) -> dict[str, Any]:
    """The config file as a nested dict ({} when there is none)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, before it joined the standard library
        import tomli as tomllib

    path = path or config_path()
    try:
        with path.open("rb") as fh:
            tree: dict[str, Any] = tomllib.load(fh)
            return tree
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: Path, exc: Exception) -> ConfigError:
    problem = ("is not text (not UTF-8), so not TOML" if isinstance(exc, UnicodeDecodeError)
               else f"cannot be read: {exc}")
    return ConfigError(f"The config file {path} {problem}.",
                       hint="Fix it in an editor, or move it away to start again from the "
                            "defaults.")


def _check_names(tree: Mapping[str, Any], path: Path, prefix: str = "") -> None:
    """Every key in the file is a known one: a misspelt key must not be ignored silently."""
    for part, node in tree.items():
        name = prefix + part
        if name in KEYS or name == "projects":
            continue
        if isinstance(node, Mapping) and any(k.startswith(name + ".") for k in KEYS):
            _check_names(node, path, name + ".")
            continue
        raise _unknown(name, f" in the config file {path}")


def _lookup(tree: Mapping[str, Any], key: str) -> Any:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


# The keys of KEYS by the type of their value, so that ``settings[key]`` is typed for a key
# written out (a test checks that these cover KEYS and agree with each key's conversion).
TextKey = Literal["embedder.backend", "embedder.api_key_env", "embedder.keep_alive",
                  "embedder.runtime", "index.vector_search", "search.backend", "shared.token_env",
                  "shared.group"]
OptionalTextKey = Literal["embedder.model", "embedder.url", "embedder.query_prefix",
                          "embedder.document_prefix", "shared.uri"]
IntKey = Literal["embedder.batch_size", "embedder.concurrency", "index.max_file_size",
                 "index.ann_threshold", "search.limit", "search.embed_limit", "mcp.max_tokens"]
OptionalIntKey = Literal["embedder.dims"]
SecondsKey = Literal["embedder.timeout", "embedder.service_idle", "search.timeout",
                     "mcp.refresh_interval", "shared.timeout", "index.hook_budget"]
FlagKey = Literal["embedder.service", "index.force_root", "search.refresh", "shared.vectors"]
KindsKey = Literal["index.embed_kinds"]


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``settings["embedder.backend"]`` or ``settings.origin(key)``."""

    values: Mapping[str, Any]
    origins: Mapping[str, str]
    projects: tuple[Mapping[str, Any], ...]

    @overload
    def __getitem__(self, key: TextKey) -> str: ...
    @overload
    def __getitem__(self, key: OptionalTextKey) -> str | None: ...
    @overload
    def __getitem__(self, key: IntKey) -> int: ...
    @overload
    def __getitem__(self, key: OptionalIntKey) -> int | None: ...
    @overload
    def __getitem__(self, key: SecondsKey) -> float: ...
    @overload
    def __getitem__(self, key: FlagKey) -> bool: ...
    @overload
    def __getitem__(self, key: KindsKey) -> tuple[str, ...]: ...
    @overload
    def __getitem__(self, key: str) -> object: ...

    def __getitem__(self, key: str) -> object:
        _check_key(key)
        value: object = self.values[key]
        return value

    def origin(self, key: str) -> str:
        return self.origins[key]


def load(overrides: Mapping[str, Any] | None = None, *, path: Path | None = None,
         overrides_from: str = "the command line") -> Settings:
    """Resolve every key: default < file < environment < ``overrides`` (flags, or the Python
    API's, as ``overrides_from`` says in errors; None = unset)."""
    path = path or config_path()
    tree = read_file(path)
    _check_names(tree, path)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, spec in KEYS.items():
        value, origin = spec.default, "default"
        from_file = _lookup(tree, name)
        if from_file is not None:
            value, origin = _parse(spec, from_file, f"the config file {path}",
                                   _file_hint(name)), "file"
        from_env, variable = _env_source(spec)
        if from_env is not None:
            value, origin = _parse(spec, from_env, variable,
                                   f"Fix or unset the environment variable {variable}."), "env"
        values[name], origins[name] = value, origin
    for name, value in (overrides or {}).items():
        spec = _check_key(name)
        if value is not None:
            values[name], origins[name] = _parse(spec, value, overrides_from), "flag"
    return Settings(values, origins, tuple(_projects(tree, path)))


def _projects(tree: Mapping[str, Any], path: Path) -> list[Mapping[str, Any]]:
    """The ``[[projects]]`` tables of a config, refused if one's id could not name a folder or
    two share an id or a root."""
    from kenning.project import ID_RULE, is_valid_id

    projects = tree.get("projects", [])
    if not isinstance(projects, list) or not all(isinstance(p, Mapping) for p in projects):
        raise ConfigError(f"`projects` in {path} must be a list of [[projects]] tables.")
    ids: set[object] = set()
    roots: set[Path] = set()
    for entry in projects:
        for name in entry:
            if name not in _PROJECT_KEYS:
                nearest = difflib.get_close_matches(str(name), _PROJECT_KEYS, n=1)
                guess = f" (did you mean {nearest[0]}?)" if nearest else ""
                raise ConfigError(f"Unknown key {name!r} in a [[projects]] table of {path}"
                                  f"{guess}.", hint="A project takes id and root.")
        if "root" not in entry:
            raise ConfigError(f"A [[projects]] table of {path} has no root.",
                              hint='Give its folder: root = "~/src/api".')
        if "id" in entry and not is_valid_id(entry["id"]):
            raise ConfigError(f"The project id {entry['id']!r} in {path} is not valid: use "
                              f"{ID_RULE}.", hint='For example id = "api".')
        if "id" in entry and entry["id"] in ids:
            raise ConfigError(f"Two [[projects]] tables of {path} have the id {entry['id']!r}.",
                              hint="Give each project its own id.")
        ids.add(entry.get("id"))
        # two tables for one folder would serve one index under two names
        root = Path(str(entry["root"])).expanduser().resolve()
        if root in roots:
            raise ConfigError(f"Two [[projects]] tables of {path} have the root {root}.",
                              hint="List each project folder once.")
        roots.add(root)
    return projects


_PROJECT_KEYS = ("id", "root")


def set_value(key: str, raw: str, *, path: Path | None = None) -> Any:
    """Validate ``raw`` for ``key`` and write it to the config file, keeping its comments."""
    import tomlkit

    spec = _check_key(key)
    value = _parse(spec, raw, "the command line")
    path = path or config_path()
    doc = _editable(path)
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
    _write(doc, path)
    return value


def unset_value(key: str, *, path: Path | None = None) -> bool:
    """Remove ``key`` from the config file, so its default applies again; False when it was not
    there. A table left empty goes too."""
    _check_key(key)
    path = path or config_path()
    if not path.exists():
        return False
    doc = _editable(path)
    *parents, leaf = key.split(".")
    tables: list[Any] = [doc]
    for part in parents:
        node = tables[-1].get(part)
        if not isinstance(node, Mapping):
            return False
        tables.append(node)
    if leaf not in tables[-1]:
        return False
    tables[-1].pop(leaf)
    for parent, part in zip(reversed(tables[:-1]), reversed(parents), strict=True):
        if parent[part]:
            break
        parent.pop(part)
    _write(doc, path)
    return True


def _editable(path: Path) -> Any:
    """The file as a tomlkit document, comments kept; a file that cannot be read is left as it
    is."""
    import tomlkit

    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as exc:
        raise _unreadable(path, exc) from None


def _write(doc: Any, path: Path) -> None:
    import tomlkit

    _projects(doc, path)  # never write a config that could not be read back
    tmp = path.with_suffix(".toml.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"Cannot write the config file {path} "
                          f"({(exc.strerror or str(exc)).lower()}).",
                          hint=f"Make {path.parent} writable, or set KENNING_CONFIG to a file "
                               "you can write.") from None
