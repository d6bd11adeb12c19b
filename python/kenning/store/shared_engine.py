"""The connection to the shared index's engine (Milvus) and the two collections it holds.

Collections per embedding descriptor (a different model never mixes) and access group
(``shared.group``: ``kenning_<group>_<slug>``, granted by the engine's users and roles):
``kenning_<slug>`` holds one row per published chunk (sign bits, the int8 rescoring row, the
chunk's text and metadata, kenning's own code tokens for the engine's BM25),
``kenning_<slug>_manifest`` the published manifest of each project (its clusters and files with
their digests, and one head row with the published generation), and ``kenning_<slug>_vectors2``
the vectors by content (``kenning.store.shared_vectors``).

``shared.uri`` is an ``http(s)://`` server (Standalone or Distributed), or a local ``.db`` file,
which pymilvus serves with milvus-lite: one process at a time (a process keeps the file until
it exits or calls ``release_all``), ``BIN_FLAT`` only, no partition key, no nullable fields.
The same code serves both; the differences are named in ``lite``.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning import project
from kenning.config import SHARED_SERVER_SCHEMES
from kenning.errors import ConfigError, SharedAuthError, SharedIndexError

if TYPE_CHECKING:
    from kenning.config import Settings

# VARCHAR limits (bytes): Milvus caps a VARCHAR at 65,535.
TEXT_MAX = 65_535
PATH_MAX = 4_096
SYMBOL_WORDS_MAX = 64  # tokens of a symbol name kept for the symbol branch
SERVER_SCHEMES = SHARED_SERVER_SCHEMES  # else a milvus-lite file
MANIFEST_DIM = 8  # Milvus wants a vector field in every collection; the manifest's is unused
CLASS_FIELD = "chunk_class"
PATHS_PER_QUERY = 200  # paths named in one filter expression


def require_pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError:
        raise ConfigError("The shared index needs pymilvus, which is not installed.",
                          hint='pip install "kenning[shared]"') from None
    # kenning reports engine failures itself, in one sentence; pymilvus would log each one too
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    # pymilvus's client-side VARCHAR check, given one value of a row, walks it character by
    # character and compares each character's length (1) with the field's limit: it refuses
    # nothing (the engine checks lengths) and took 60% of a publish's time.
    helper: Any = importlib.import_module("pymilvus.client.entity_helper")
    if getattr(helper, "CHECK_STR_ARRAY", False):
        helper.CHECK_STR_ARRAY = False
    return pymilvus


def collection_name(descriptor: dict[str, Any], group: str = "") -> str:
    """``kenning_[<group>_]<model>_<dims>_<hash>``: Milvus names allow letters, digits and
    underscores (``shared.group`` is checked to hold only those)."""
    slug = project.descriptor_slug(descriptor)
    return "kenning_" + (f"{group}_" if group else "") + "".join(
        c if c.isalnum() else "_" for c in slug)


def row_key(*parts: object) -> str:
    """A deterministic primary key (32 hex digits): a retried publish writes the same rows."""
    joined = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(joined.encode(), digest_size=16).hexdigest()


# Milvus's own codes for a refused login (merr: not authenticated, privilege not permitted)
AUTH_CODES = (1400, 1401)


def _failure(exc: BaseException) -> str:
    """``auth``, ``unreachable`` or ``other``: from the gRPC status of the error or of the one
    it wraps (pymilvus reports a login refused by the server as "Fail connecting", with the
    UNAUTHENTICATED call as its cause), else from Milvus's code or the words of its message."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for error in chain:
        code = getattr(error, "code", None)
        status = getattr(code() if callable(code) else None, "name", "")
        if status in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            return "auth"
        if status in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            return "unreachable"
    if getattr(exc, "code", None) in AUTH_CODES:
        return "auth"
    text = str(exc).lower()
    if any(word in text for word in ("auth", "credential", "password", "api key",
                                     "permission denied", "unauthenticated")):
        return "auth"
    if "fail connecting" in text or "unavailable" in text:
        return "unreachable"
    return "other"


def configured_uri(settings: Settings) -> tuple[str, bool]:
    """``shared.uri``, checked, and whether it names an embedded (milvus-lite) file."""
    uri = settings["shared.uri"]
    if not uri:
        raise ConfigError("No shared index is configured.",
                          hint="Set one: `kenning config set shared.uri http://host:19530` "
                          "(or a local .db file for a trial).")
    uri = str(uri)
    if uri.startswith(SERVER_SCHEMES):
        return uri, False
    path = Path(uri).expanduser()
    if path.suffix != ".db":
        raise ConfigError(f"shared.uri {uri!r} is neither an http(s):// server nor a local .db "
                          "file.", hint="Use http://host:19530, https://..., or a path ending "
                          "in .db.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _lite_error(path, exc) from None
    return str(path.resolve()), True


def _quiet_lite_engine() -> None:
    """Environment for the milvus-lite engine process, unless the user set it: it logs every
    commit (RUST_LOG), and its glog INFO file would be left in $TMPDIR by every process; its
    errors go to kenning's home instead."""
    os.environ.setdefault("RUST_LOG", "error")
    os.environ.setdefault("GLOG_minloglevel", "2")  # errors only: no INFO or WARNING file
    if "GLOG_log_dir" not in os.environ:
        logs = project.kenning_home() / "logs"
        with suppress(OSError):
            logs.mkdir(parents=True, exist_ok=True)
            os.environ["GLOG_log_dir"] = str(logs)  # noqa: SIM112 - the name glog reads


def _lite_error(path: Path, exc: OSError) -> SharedIndexError:
    """The error for a milvus-lite file (or its folder, or the lock file beside it) that cannot
    be made or opened."""
    reason = (exc.strerror or str(exc)).lower()
    return SharedIndexError(f"Cannot open the shared index file {path} ({reason}: "
                            f"{exc.filename or path}).",
                            hint="Make its folder writable (milvus-lite keeps a lock file "
                            "beside it), or set shared.uri to a .db file in a folder you can "
                            "write to.")


class Engine:
    """A client of the shared index for one embedding descriptor."""

    create_with_classes = True  # False only to make a collection as they were before classes

    def __init__(self, settings: Settings, descriptor: dict[str, Any]) -> None:
        self.uri, self.lite = configured_uri(settings)
        token_env = str(settings["shared.token_env"] or "")
        self.token = os.environ.get(token_env, "") if token_env else ""
        self.token_env = token_env
        self.descriptor = descriptor
        self.chunks = collection_name(descriptor, str(settings["shared.group"]))
        self.manifest = self.chunks + "_manifest"
        self.vectors = self.chunks + "_vectors2"  # format 2: see shared_vectors
        # seconds: a server that does not answer is reported, not waited on
        self.timeout = float(settings["shared.timeout"])
        self.dims = int(descriptor["dims"])
        self._client: Any = None

    # -- the connection ---------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"the shared index at {self.uri}"

    @contextmanager
    def calls(self, doing: str) -> Iterator[None]:
        """Engine failures as one sentence: SharedAuthError for a refused token, else
        SharedIndexError (unreachable, or a call that failed)."""
        pymilvus = require_pymilvus()
        import grpc  # pymilvus's transport; a few of its errors reach callers unwrapped

        try:
            yield
        except (pymilvus.exceptions.MilvusException, grpc.RpcError) as exc:
            raise self._error(doing, exc) from None

    def _error(self, doing: str, exc: Exception) -> SharedIndexError:
        failure = _failure(exc)
        where = self.where[0].upper() + self.where[1:]
        if failure == "auth":  # the sentence names the variable, never the token
            given = (f"the token in ${self.token_env}" if self.token
                     else f"a connection without a token (${self.token_env} is empty)")
            return SharedAuthError(f"{where} refused {given} while {doing}.",
                                   hint=f"Put a valid token (user:password or an API key) in "
                                   f"${self.token_env}, or name another variable in "
                                   "shared.token_env.")
        if failure == "unreachable":
            return SharedIndexError(f"Cannot reach {self.where} while {doing}.",
                                    hint="Check shared.uri and that the server is running.")
        message = getattr(exc, "message", None) or str(exc)
        return SharedIndexError(f"{where} failed while {doing}: {message}.")

    @property
    def client(self) -> Any:
        if self._client is None:
            key = (self.uri, self.token)
            with _clients_lock:
                self._client = _clients.get(key)
                if self._client is None:
                    pymilvus = require_pymilvus()
                    if self.lite:
                        _quiet_lite_engine()
                    try:
                        with self.calls("connecting"):
                            self._client = pymilvus.MilvusClient(uri=self.uri,
                                                                 token=self.token,
                                                                 timeout=self.timeout)
                    except OSError as exc:  # milvus-lite's file or lock in a folder it cannot use
                        raise _lite_error(Path(self.uri), exc) from None
                    _clients[key] = self._client
        return self._client

    def close(self) -> None:
        """Let go of the connection; it stays open for the process's next Engine (opening one,
        and for milvus-lite loading the collection, costs far more than a search)."""
        self._client = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections ----------------------------------------------------------------------------

    @property
    def classes(self) -> bool:
        """Whether the chunks collection stores each chunk's class (collections created before
        it did lack the field, and a schema cannot gain one on every engine)."""
        key = (self.uri, self.chunks)
        if key not in _classes:  # only a yes is kept: another process may make it anew
            with self.calls("reading its schema"):
                fields = self.client.describe_collection(self.chunks)["fields"]
            if any(f["name"] == CLASS_FIELD for f in fields):
                _classes.add(key)
            else:
                return False
        return True

    def drop(self) -> None:
        """Drop both collections (the manifest first: without it they count as absent)."""
        with self.calls("dropping its collections"):
            self.client.drop_collection(self.manifest)
            self.client.drop_collection(self.chunks)
        _classes.discard((self.uri, self.chunks))

    def exists(self) -> bool:
        with self.calls("looking for its collections"):
            return bool(self.client.has_collection(self.manifest))

    def ensure(self) -> None:
        """Create both collections if absent (the manifest last: it marks them complete)."""
        if self.exists():
            return
        with self.calls("creating its collections"):
            if not self.client.has_collection(self.chunks):
                self._create_chunks()
            self._create_manifest()

    def _varchar(self, schema: Any, name: str, max_length: int, **extra: Any) -> None:
        pymilvus = require_pymilvus()
        schema.add_field(name, pymilvus.DataType.VARCHAR, max_length=max_length, **extra)

    def _create_chunks(self) -> None:
        pymilvus = require_pymilvus()
        dt = pymilvus.DataType
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False,
                                           description=json.dumps(self.descriptor,
                                                                  sort_keys=True))
        self._varchar(schema, "id", 32, is_primary=True)
        # the project is the partition key on a server (milvus-lite cannot filter on one)
        self._varchar(schema, "project", 512, **({} if self.lite else {"is_partition_key": True}))
        self._varchar(schema, "path", PATH_MAX)
        self._varchar(schema, "content_hash", 32)
        for name in ("ordinal", "generation", "start_line", "end_line", "start_byte",
                     "end_byte"):
            schema.add_field(name, dt.INT64)
        self._varchar(schema, "language", 64)  # "" for plain text: no nullable fields in lite
        self._varchar(schema, "kind", 64)
        if self.create_with_classes:
            self._varchar(schema, CLASS_FIELD, 16)  # classes.chunk_class, for --kind test ...
        self._varchar(schema, "symbol", PATH_MAX)
        self._varchar(schema, "signature", PATH_MAX)
        schema.add_field("symbol_words", dt.ARRAY, element_type=dt.VARCHAR,
                         max_capacity=SYMBOL_WORDS_MAX, max_length=256)
        self._varchar(schema, "text", TEXT_MAX)
        # kenning's code tokens, split on whitespace only, so identifiers split as they do locally
        self._varchar(schema, "words", TEXT_MAX, enable_analyzer=True,
                      analyzer_params={"tokenizer": "whitespace"})
        schema.add_field("sparse", dt.SPARSE_FLOAT_VECTOR)
        schema.add_field("bits", dt.BINARY_VECTOR, dim=self.dims)
        # int8 row + float32 scale, base64: a search returns it with the hits on every engine
        # (milvus-lite cannot return a binary field from a search)
        self._varchar(schema, "rescore", ((self.dims + 4 + 2) // 3) * 4)
        schema.add_function(pymilvus.Function(
            name="words_bm25", function_type=pymilvus.FunctionType.BM25,
            input_field_names=["words"], output_field_names=["sparse"]))
        index = self.client.prepare_index_params()
        index.add_index("bits", index_type="BIN_FLAT", metric_type="HAMMING")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self.client.create_collection(self.chunks, schema=schema, index_params=index,
                                      consistency_level="Strong")

    def _create_manifest(self) -> None:
        pymilvus = require_pymilvus()
        dt = pymilvus.DataType
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        self._varchar(schema, "id", 32, is_primary=True)
        self._varchar(schema, "project", 512)
        self._varchar(schema, "kind", 16)  # head, cluster, file
        self._varchar(schema, "key", PATH_MAX)
        self._varchar(schema, "cluster", PATH_MAX)
        self._varchar(schema, "digest", 64)  # hex; "" marks a file a publish has begun to change
        self._varchar(schema, "info", TEXT_MAX)  # the head row's JSON
        schema.add_field("unused", dt.BINARY_VECTOR, dim=MANIFEST_DIM)
        index = self.client.prepare_index_params()
        index.add_index("unused", index_type="BIN_FLAT", metric_type="HAMMING")
        self.client.create_collection(self.manifest, schema=schema, index_params=index,
                                      consistency_level="Strong")

    # -- rows -----------------------------------------------------------------------------------

    def query(self, collection: str, expr: str, fields: Sequence[str], doing: str,
              limit: int | None = None) -> list[dict[str, Any]]:
        """Every row matching ``expr`` (paged: Milvus caps one query's window)."""
        out: list[dict[str, Any]] = []
        with self.calls(doing):
            if limit is not None:
                return list(self.client.query(collection, filter=expr,
                                              output_fields=list(fields), limit=limit))
            iterator = self.client.query_iterator(collection, filter=expr,
                                                  output_fields=list(fields), batch_size=4000)
            try:
                while page := iterator.next():
                    out.extend(page)
            finally:
                iterator.close()
        return out

    def upsert(self, collection: str, rows: list[dict[str, Any]], doing: str) -> None:
        if rows:
            with self.calls(doing):
                self.client.upsert(collection, rows)

    def delete_ids(self, collection: str, ids: Sequence[str], doing: str) -> None:
        if ids:
            with self.calls(doing):
                self.client.delete(collection, ids=list(ids))

    def delete_where(self, collection: str, expr: str, doing: str) -> None:
        with self.calls(doing):
            self.client.delete(collection, filter=expr)


# connections by (uri, token), kept for the life of the process
_clients: dict[tuple[str, str], Any] = {}
_classes: set[tuple[str, str]] = set()  # (uri, chunks collection) known to store classes
_clients_lock = threading.Lock()


@atexit.register
def release_all() -> None:
    """Close every kept connection and stop the embedded engines this process started, which
    frees their files for other processes."""
    with _clients_lock:
        kept = list(_clients.items())
        _clients.clear()
        _classes.clear()
    for (uri, _), client in kept:
        client.close()
        if not uri.startswith(SERVER_SCHEMES):
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(uri)
