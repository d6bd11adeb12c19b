"""The embedded default model: all-MiniLM-L6-v2 as an ONNX file that ships in the package, run
with onnxruntime, or with OpenVINO where it is installed and the CPU multiplies int8 in one
instruction (VNNI, AMX), offline; the setting ``embedder.runtime`` picks one (``plan_runtime``).

Vectors follow sentence-transformers' all-MiniLM-L6-v2: at most 256 word pieces including
[CLS]/[SEP], mean pooling over the attention mask, L2 normalisation. The file is our own
export of its weights with int8 matrix products (``training/quantize.py --int8-products``,
recipe and figures in ``data/MODEL_CARD.md``): each token's activations are quantised with a
scale of their own. Each text runs alone at its own length (``encode``), so its vector is a
function of its text, whatever the texts embedded with it. Its sha256 is checked before it
is loaded; the check is remembered (keyed on path, size and mtime) so later processes only
stat the file. The tokenizer and the session load on first use and are
shared by every embedder in the process; under onnxruntime each run takes one thread, and the
runs of a list go on at once, one per core (``runs_at_once``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from kenning import hostos
from kenning.config import Settings
from kenning.embedding import Embedder, Identity, settings_profile
from kenning.embedding.profiles import HEADER_RESERVE_TOKENS, Profile, l2_normalise, output_dims
from kenning.errors import ConfigError, EmbedderUnavailable

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_SHA256 = "bded68f8cab05d015dbd1ccbb08d5532e9f67f25b0e13e030eee50efc8417038"
DIMS = 384
MAX_SEQUENCE = 256  # word pieces the model reads, [CLS] and [SEP] included
_CLS, _SEP = 101, 102
TOKENIZER_PATH = Path(__file__).parent.parent / "data" / "minilm-tokenizer.json"
MODEL_PATH = Path(__file__).parent.parent / "data" / "minilm-l6-int8.onnx"
_ACCEPTED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "all-minilm"}


def model_path() -> Path:
    return MODEL_PATH


def use_model_file(path: Path) -> None:
    """Run another file of the model in this process (an earlier release's, or a trained
    candidate), pinned by its own sha256 so that its indexes get a descriptor of their own;
    for the training and benchmark scripts, before the model loads."""
    global MODEL_PATH, MODEL_SHA256
    MODEL_PATH = path.resolve()
    MODEL_SHA256 = file_sha256(MODEL_PATH)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_id() -> str:
    """Names the shipped file in index descriptors: vectors of another file of the same model
    (an earlier release's) differ slightly, so its indexes are never searched with these."""
    return MODEL_SHA256[:16]


def _stamp_path() -> Path:
    from kenning.project import kenning_home

    return kenning_home() / "cache" / "model-verified.json"


def _unreadable(path: Path, exc: OSError) -> EmbedderUnavailable:
    """The error for a file of the model that cannot be read: most often one that a
    reinstall of kenning replaced while this process ran."""
    return EmbedderUnavailable(f"Cannot read the embedded model's file {path}: {exc.strerror}.",
                               hint="If kenning was being reinstalled, run the command again; "
                                    "else reinstall kenning.")


def verify_model(path: Path) -> None:
    """Raise unless ``path`` has the pinned sha256; skip hashing when a stamp matches its stat."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    stamp = {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
             "sha256": MODEL_SHA256}
    stamp_file = _stamp_path()
    try:
        if json.loads(stamp_file.read_text(encoding="utf-8")) == stamp:
            return
    except (OSError, ValueError):
        pass
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if digest != MODEL_SHA256:
        raise EmbedderUnavailable(
            f"The embedded model {path} is corrupt or not the one this release ships "
            f"(sha256 {digest[:16]}..., expected {MODEL_SHA256[:16]}...).",
            hint="Reinstall kenning: `pip install --force-reinstall kenning`.",
        )
    try:  # a cache only: failing to write it costs a re-hash next time, nothing else
        stamp_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(stamp), encoding="utf-8")
        os.replace(tmp, stamp_file)
    except OSError:
        pass


@cache
def _tokenizer_cached() -> Any:
    from tokenizers import Tokenizer

    try:  # read here: the tokenizers library's own error for a missing file is no sentence
        text = TOKENIZER_PATH.read_text(encoding="utf-8")
    except OSError as exc:
        raise _unreadable(TOKENIZER_PATH, exc) from None
    tok = Tokenizer.from_str(text)
    tok.no_truncation()
    tok.no_padding()
    return tok


_tokenizer_lock = threading.Lock()


def tokenizer() -> Any:
    """The model's own WordPiece tokenizer, without truncation or padding (done per batch);
    loaded once per process (thread-safe)."""
    with _tokenizer_lock:
        return _tokenizer_cached()


_session_lock = threading.Lock()


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _cores_for_the_model() -> int:
    """The cores the model's runs keep busy: every usable one, at most 8."""
    return min(_usable_cores(), 8)


def _optimised_path() -> Path:
    """Where the optimised graph of the pinned model is kept for this onnxruntime version."""
    import onnxruntime as ort

    from kenning.project import kenning_home

    return kenning_home() / "cache" / f"minilm-{MODEL_SHA256[:16]}-ort{ort.__version__}.onnx"


def _options(threads: int | None, spinning: bool, level: Any, save_to: Path | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # One thread per run (see ``runs_at_once``); inter-op parallelism buys nothing for a linear
    # BERT graph.
    options.intra_op_num_threads = threads or 1
    options.inter_op_num_threads = 1
    # Idle workers of a run of several threads sleep instead of spinning by default: on a
    # machine busy with other work (the usual case next to an editor, a build or an agent)
    # spinning burns CPU others need (measured by benchmarks/bench_embedding.py --spin-ab).
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.graph_optimization_level = level
    options.log_severity_level = 3
    if save_to is not None:
        options.optimized_model_filepath = str(save_to)
    return options


def build_session(threads: int | None = None, *, spinning: bool = False) -> Any:
    """A new ONNX session over the verified model (``session()`` is the shared one), each run
    on ``threads`` threads (one by default: ``encode`` keeps a run going on every core).

    Optimising the graph takes most of a session's start (0.15-0.3 s of a `kenning search`), so
    the first session saves its optimised graph in the kenning cache folder (keyed by the
    model's sha256 and the onnxruntime version) and later ones load that. The saved graph stops
    at the portable level (no layout tuned to this CPU); the full level, applied again on load,
    finds little left to do, and the vectors are the same. A cache file that cannot be loaded
    is made again; one that cannot be written only costs the time."""
    import onnxruntime as ort

    path = model_path()
    verify_model(path)
    full = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = ["CPUExecutionProvider"]
    cached = _optimised_path()
    if cached.is_file():
        try:
            return ort.InferenceSession(str(cached), _options(threads, spinning, full, None),
                                        providers=providers)
        except Exception:  # noqa: BLE001 - truncated, or unreadable by this build: make it again
            pass
    tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        portable = _options(threads, spinning, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                            tmp)
        made = ort.InferenceSession(str(path), portable, providers=providers)
        os.replace(tmp, cached)
        return made
    except Exception:  # noqa: BLE001 - the folder is not writable: run without the cache
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
    try:  # read here, so that a file a reinstall removed meanwhile is one sentence
        model = path.read_bytes()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return ort.InferenceSession(model, _options(threads, spinning, full, None),
                                providers=providers)


class InFlight:
    """Model runs under way, so that the interpreter's exit waits for them.

    Before Python 3.14 a daemon thread that takes the GIL back while the interpreter finalises
    is ended with pthread_exit; when that thread is inside a runtime's C++ call (a search's
    model loader, an MCP server's index job), the unwinding crosses a frame that may not throw
    and the process aborts ("terminate called without an active exception"). An exit hook
    waits for the runs under way (exit hooks run before finalisation) and holds back any that
    a daemon thread starts later, so no thread is inside the runtime when the interpreter ends.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._closing = False

    def __enter__(self) -> None:
        with self._changed:
            while self._closing and threading.current_thread() is not threading.main_thread():
                self._changed.wait()  # parked in Python code until the process ends
            self._running += 1

    def __exit__(self, *exc: object) -> None:
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def close(self, timeout: float = 60.0) -> None:
        with self._changed:
            self._closing = True
            self._changed.wait_for(lambda: self._running == 0, timeout)


runs_in_flight = InFlight()
atexit.register(runs_in_flight.close)

RUNTIMES = ("openvino", "onnxruntime")


class OpenVINOSession:
    """The model compiled by OpenVINO, behind onnxruntime's ``run`` call so ``encode`` takes
    either. It reads the same file as onnxruntime (int8 weights, activations quantised per
    token) and runs its int8 products with VNNI or AMX where the CPU has them; with AVX2 alone
    it is slower than onnxruntime on this file (benchmarks/README.md), so ``plan_runtime``
    takes it only on such CPUs. Float32 elsewhere, even where the CPU has AMX: bfloat16 there
    is faster still, but its vectors were measured only in batches, where they moved with the
    other texts of the batch.

    Runs take turns on one infer request. Two threads filling requests of their own at once
    can deadlock inside OpenVINO: 6 of 160 first searches hung so here, the query embedded
    beside the first index's chunks (benchmarks/README.md). One run uses every inference
    thread already, so turns cost no throughput."""

    name = "openvino"
    runs_at_once = 1

    def __init__(self, threads: int | None = None) -> None:
        from kenning.project import kenning_home

        ov = import_openvino()

        path = model_path()
        verify_model(path)
        core = ov.Core()
        # the compiled blob is kept, keyed by OpenVINO on the model and the CPU: later
        # processes skip the compilation
        with suppress(OSError):
            cache_dir = kenning_home() / "cache" / "openvino"
            cache_dir.mkdir(parents=True, exist_ok=True)
            core.set_property({"CACHE_DIR": str(cache_dir)})
        self._compiled = core.compile_model(str(path), "CPU", {
            "INFERENCE_NUM_THREADS": threads or _cores_for_the_model(),
            "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"})
        self._request = self._compiled.create_infer_request()
        self._turn = threading.Lock()

    def run(self, output_names: Sequence[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self._turn:  # ``infer`` returns copies, not views of the request's tensors
            outputs = self._request.infer(feeds)
            return [outputs[name] for name in output_names]


def installed_runtimes() -> dict[str, str]:
    """The runtimes of ``RUNTIMES`` installed here and their versions, from the packages'
    metadata (nothing is imported; onnxruntime may come in another package, such as
    onnxruntime-gpu)."""
    from importlib import metadata, util

    found = {}
    for name in RUNTIMES:
        try:
            if util.find_spec(name) is None:
                continue
        except (ImportError, ValueError):  # blocked (sys.modules[name] = None)
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            for package in metadata.packages_distributions().get(name, []):
                found[name] = metadata.version(package)
    return found


_environ_lock = threading.Lock()


def import_openvino() -> Any:
    """OpenVINO, imported with its telemetry off.

    Importing its Python package starts its telemetry (``openvino.tools.ovc``, with
    ``disable_in_ci=True``): a client id and a usage count written under ``~/intel`` (the count
    rises with every process) and an event sent to Google Analytics from a child process. The
    switch openvino-telemetry documents that does not write, ``disable_in_ci``, turns it off
    where the environment says ``CI=true``; it is set for the import only (the telemetry is
    set up once per process, at the import) and put back after, so neither the rest of the
    process nor the processes it starts see it. The opt-out that OpenVINO's docs give,
    ``opt_in_out --opt_out``, would itself write a consent file under ``~/intel``."""
    import sys

    if "openvino" in sys.modules:
        return sys.modules["openvino"]
    with _environ_lock:
        before = os.environ.get("CI")
        os.environ["CI"] = "true"
        try:
            import openvino
        finally:
            if before is None:
                del os.environ["CI"]
            else:
                os.environ["CI"] = before
    return openvino


def configured_runtime() -> str:
    """``embedder.runtime`` of the settings in effect (config file, environment)."""
    from kenning import config

    return config.load()["embedder.runtime"]


INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def int8_dot_flags() -> list[str]:
    """The CPU's instructions that multiply and sum int8 in one (x86 VNNI or AMX), read from
    /proc/cpuinfo; none where there is nothing to read."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.partition(":")[2].split())
                    return [flag for flag in INT8_DOT_FLAGS if flag in flags]
    except OSError:
        pass
    return []


def cpu_multiplies_int8() -> bool:
    return bool(int8_dot_flags())


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime that runs the model (or would), its version and why it was taken."""

    name: str
    version: str
    reason: str


def plan_runtime(choice: str) -> RuntimeChoice:
    """The runtime that ``choice`` (``embedder.runtime``) takes here, decided without loading
    one: a runtime asked for by name; for "auto", OpenVINO where it is installed and the CPU
    multiplies int8 in one instruction (on AVX2 alone it is slower than onnxruntime,
    benchmarks/README.md), else onnxruntime."""
    installed = installed_runtimes()
    if choice != "auto":
        return RuntimeChoice(choice, installed.get(choice, "not installed"), "asked for")
    if not cpu_multiplies_int8():
        reason = "this CPU has no VNNI or AMX, and onnxruntime is the faster without them"
    elif "openvino" in installed:
        flags = ", ".join(int8_dot_flags()) or "VNNI or AMX"
        return RuntimeChoice("openvino", installed["openvino"],
                             f"this CPU multiplies int8 in one instruction ({flags}) and "
                             "OpenVINO is installed")
    else:
        reason = "OpenVINO is not installed (the openvino extra adds it for this CPU's VNNI)"
    return RuntimeChoice("onnxruntime", installed.get("onnxruntime", "not installed"), reason)


def build_runtime(threads: int | None = None, choice: str | None = None) -> Any:
    """The runtime that ``choice`` (default: ``embedder.runtime``) takes (``plan_runtime``),
    with the model loaded; onnxruntime when "auto" took OpenVINO and it does not load."""
    return _build(threads, choice)[0]


def _build(threads: int | None, choice: str | None) -> tuple[Any, RuntimeChoice]:
    choice = choice or configured_runtime()
    plan = plan_runtime(choice)
    with runs_in_flight:  # compiling is a call into the runtime too
        if plan.name == "openvino":
            try:
                return OpenVINOSession(threads), plan
            except EmbedderUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - not installed, or no plugin for this CPU
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                if choice == "openvino":  # by name: an error, not a silent fallback
                    raise EmbedderUnavailable(
                        f"OpenVINO cannot run the embedded model here: {first}",
                        hint="Install it (`pip install \"kenning[openvino]\"`), or `kenning "
                             "config set embedder.runtime onnxruntime`.") from None
                plan = plan_runtime("onnxruntime")
                plan = RuntimeChoice(plan.name, plan.version, f"OpenVINO did not load: {first}")
        return build_session(threads), plan


def runtime_name(runtime: Any) -> str:
    return getattr(runtime, "name", "onnxruntime")


@cache
def _session_cached(choice: str) -> tuple[Any, RuntimeChoice]:
    return _build(None, choice)


def loaded_runtime(choice: str | None = None) -> tuple[Any, RuntimeChoice]:
    """The model's runtime for ``choice`` (default: ``embedder.runtime``) and why it was taken,
    loaded once per process and choice (thread-safe; ``run`` itself is reentrant)."""
    choice = choice or configured_runtime()
    with _session_lock:
        return _session_cached(choice)


def session(choice: str | None = None) -> Any:
    """The model's runtime (see ``loaded_runtime``)."""
    return loaded_runtime(choice)[0]


def token_ids(texts: Sequence[str]) -> list[list[int]]:
    """Word-piece ids with [CLS]/[SEP], cut to the model's 256 like sentence-transformers."""
    out = []
    for enc in tokenizer().encode_batch(list(texts), add_special_tokens=False):
        out.append([_CLS, *enc.ids[: MAX_SEQUENCE - 2], _SEP])
    return out


def runs_at_once(runtime: Any) -> int:
    """How many runs of ``runtime`` ``encode`` keeps going at once: as many as its threads per
    run fit in the usable cores (at most 8). On 2 cores, two runs of one thread embedded 1.4x
    the chunks/s of one run of two threads, the same vectors bit for bit: a run spread over
    threads waits for the slowest at each of its ~400 operators, most of them small
    (benchmarks/bench_embedding.py). OpenVINO's runs take turns (``OpenVINOSession``)."""
    fixed = getattr(runtime, "runs_at_once", None)
    if fixed is not None:
        return int(fixed)
    cores = _cores_for_the_model()
    # 0 threads: onnxruntime's own choice, a thread per core
    return max(1, cores // (runtime.get_session_options().intra_op_num_threads or cores))


def _each_at_once(work: Callable[[list[int]], None], groups: list[list[int]],
                  threads: int) -> None:
    """``work`` over every group, on ``threads`` threads (this one among them), each taking the
    next group as it finishes one; the first error stops them all and is raised here. The
    helpers are daemon threads, which at exit ``runs_in_flight`` parks between runs; a
    ThreadPoolExecutor's are not, and once the interpreter is ending it refuses new work to an
    index job's daemon thread that is still embedding."""
    pending = iter(groups)
    taking = threading.Lock()
    errors: list[BaseException] = []

    def drain() -> None:
        while True:
            with taking:
                rows = None if errors else next(pending, None)
            if rows is None:
                return
            try:
                work(rows)
            except BaseException as exc:  # noqa: BLE001 - raised again by the caller
                with taking:
                    errors.append(exc)
                return

    helpers = [threading.Thread(target=drain, name="kenning-embed", daemon=True)
               for _ in range(threads - 1)]
    for helper in helpers:
        helper.start()
    drain()
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]


def encode(ids: Sequence[Sequence[int]], onnx_session: Any = None) -> np.ndarray:
    """Mean-pooled, L2-normalised float32 vectors for token id lists.

    Each text runs alone, at its own length: the runtime sees the same input for a text
    whatever the texts, padding and order of the list, so its vector is a function of its
    text. Batches are not (OpenVINO's sign bits for a text changed with the lengths and number
    of the texts beside it, by how its kernels block the sums), and on this model a batch of
    short texts saves almost nothing: onnxruntime took the same CPU per chunk either way
    (benchmarks/README.md). The runs of a list go on at once (``runs_at_once``), the longest
    first so that none is left running alone."""
    result = np.zeros((len(ids), DIMS), dtype=np.float32)
    runtime = onnx_session or session()

    def embed(rows: list[int]) -> None:
        (row,) = rows
        input_ids = np.array([ids[row]], dtype=np.int64)
        with runs_in_flight:
            (hidden,) = runtime.run(["last_hidden_state"], {
                "input_ids": input_ids, "attention_mask": np.ones_like(input_ids),
                "token_type_ids": np.zeros_like(input_ids)})
        result[row] = hidden[0].mean(axis=0)

    longest_first = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    _each_at_once(embed, [[i] for i in longest_first], min(runs_at_once(runtime), len(ids)))
    return l2_normalise(result)


def check_model_name(model: str | None) -> None:
    if model is not None and model.strip().lower() not in _ACCEPTED_NAMES:
        raise ConfigError(
            f"The local backend runs only {MODEL_NAME}, not {model!r}.",
            hint="Unset embedder.model, or set embedder.backend to ollama or openai.",
        )


@dataclass
class LocalEmbedder:
    """all-MiniLM-L6-v2 in-process; ``make_embedder`` is cheap, the model loads on first use."""

    profile: Profile
    model: str = MODEL_NAME
    dims: int = DIMS
    needs_centering: bool = False
    runtime: str = "auto"  # embedder.runtime

    def __post_init__(self) -> None:
        self._query_prefix = self.profile.query_prefix
        self._document_prefix = self.profile.document_prefix

    @property
    def max_tokens(self) -> int:
        prefix = self.count_tokens(self._document_prefix) if self._document_prefix else 0
        return MAX_SEQUENCE - 2 - prefix - HEADER_RESERVE_TOKENS

    def descriptor(self) -> dict[str, object]:
        return {"backend": "local", "model": self.model, "dims": self.dims,
                "document_prefix": self._document_prefix, "weights": weights_id()}

    def count_tokens(self, text: str) -> int:
        return len(tokenizer().encode(text, add_special_tokens=False).ids)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return encode(token_ids([self._document_prefix + t for t in texts]),
                      onnx_session=session(self.runtime))

    def embed_query(self, text: str) -> np.ndarray:
        ids = token_ids([self._query_prefix + text])
        return encode(ids, onnx_session=session(self.runtime))[0]

    def check(self) -> None:
        session(self.runtime)
        tokenizer()

    def close(self) -> None:
        """Nothing to release: the session is shared by the whole process."""


# -- the backend (``kenning.embedders``) -------------------------------------------------------

def target(settings: Settings) -> tuple[str, str]:
    """The one model it runs, in this process (no URL); ConfigError for another model."""
    check_model_name(settings["embedder.model"])
    return MODEL_NAME, ""


def identity(settings: Settings) -> Identity:
    profile = settings_profile(settings, target(settings)[0])
    output_dims(profile, MODEL_NAME, settings["embedder.dims"])  # MiniLM is not Matryoshka
    return Identity("local", MODEL_NAME, profile.document_prefix, DIMS, weights_id())


def make(settings: Settings, *, service: bool) -> Embedder:
    """``service``: vectors from the embedding service of this ``KENNING_HOME`` where
    ``embedder.service`` allows it and the system runs one (``hostos.NO_SERVICE``)."""
    profile = settings_profile(settings, target(settings)[0])
    output_dims(profile, MODEL_NAME, settings["embedder.dims"])
    local = LocalEmbedder(profile, runtime=settings["embedder.runtime"])
    if service and settings["embedder.service"] and not hostos.NO_SERVICE:
        from kenning.embedding.service_client import ServiceEmbedder

        return ServiceEmbedder(local, idle=settings["embedder.service_idle"],
                               timeout=settings["embedder.timeout"])
    return local
