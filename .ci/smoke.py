"""End-to-end check of an installed kenning: ``python .ci/smoke.py [--backend rust|numpy]``.

Needs only the installed package (it runs from a wheel as well as from a checkout): the live
kernels agree with the NumPy twin on random inputs (when the Rust core is built), the embedded
model gives the fp32 reference vectors of ``--reference`` (cosine >= 0.99) on this CPU's int8
kernels, a small project written to a temporary folder is indexed with the embedded model, one
CLI search finds the function it asks for, and an MCP session (``kenning mcp`` over stdio)
finds it too.
``--backend`` asserts which kernels are live. Exits non-zero with the failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from kenning import kernels
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PROJECT = {
    "pyproject.toml": '[project]\nname = "shop"\n',
    "shop/cart.py": '''"""The shopping cart."""


def cart_total(prices: list[float], tax_rate: float) -> float:
    """Sum the prices of the items in the cart and add the sales tax."""
    subtotal = sum(prices)
    return round(subtotal * (1 + tax_rate), 2)
''',
    "shop/mail.py": '''"""Outgoing mail."""
import smtplib


def send_receipt(address: str, body: str) -> None:
    """Email the receipt of an order to the customer."""
    with smtplib.SMTP("localhost") as server:
        server.sendmail("shop@example.com", [address], body)
''',
    "shop/auth.py": '''"""Logins."""
import hashlib


def check_password(stored_hash: str, password: str) -> bool:
    """Compare a login password with the stored SHA-256 hash."""
    return hashlib.sha256(password.encode()).hexdigest() == stored_hash
''',
}
QUERY, EXPECTED = "add the sales tax to the cart total", "shop/cart.py"


def check_kernels(backend: str | None) -> None:
    if backend is not None:
        assert backend == kernels.BACKEND, f"live kernels are {kernels.BACKEND}, not {backend}"
    if "rust" not in kernels.available_backends():
        print("kernels: numpy only (the Rust core is not built)")
        return
    rust, twin = kernels.for_backend("rust"), kernels.for_backend("numpy")
    rng = np.random.default_rng(7)
    for dims in (1, 7, 64, 100, 384, 1000):
        x = rng.standard_normal((33, dims)).astype(np.float32)
        center = x.mean(axis=0).astype(np.float32)
        bits = rust.binarize(x, center)
        np.testing.assert_array_equal(bits, twin.binarize(x, center))
        for got, want in zip(rust.quantize_int8(x), twin.quantize_int8(x), strict=True):
            np.testing.assert_array_equal(got, want)
        codes, scales = rust.quantize_int8(x)
        # float sums: equal up to the order of the additions
        np.testing.assert_allclose(rust.rescore(x[0], codes, scales),
                                   twin.rescore(x[0], codes, scales), rtol=1e-5, atol=1e-5)
        queries = bits[:17]
        for allowed in (None, rng.random(33) < 0.5, np.array([2, 5, 30])):
            for got, want in zip(rust.hamming_topk(queries, bits, 10, allowed),
                                 twin.hamming_topk(queries, bits, 10, allowed), strict=True):
                np.testing.assert_array_equal(got, want)
    items = [b"", "text", bytes(range(256)) * 40]
    assert rust.hash_many(items) == twin.hash_many(items)
    old, new = {"a": b"1", "b": b"2"}, {"b": b"3", "c": b"4"}
    assert rust.diff(old, new) == twin.diff(old, new)
    print(f"kernels: rust and numpy agree (live: {kernels.BACKEND})")


def reference_cosines(reference: Path) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Each row of ``reference`` and the cosine of the embedded model's vector to its fp32 one;
    the documents go in as one list (its runs go on at once), the queries one by one."""
    from kenning import config
    from kenning.embedding import local, make_embedder

    found = json.loads(reference.read_text())
    assert found["model_sha256"] == local.MODEL_SHA256, f"{reference} is for another model " \
        "file: write it again with training/reference_vectors.py"
    rows = found["rows"]
    embedder = make_embedder(config.load())
    got = np.zeros((len(rows), embedder.dims), dtype=np.float32)
    documents = [i for i, r in enumerate(rows) if r["kind"] == "document"]
    got[documents] = embedder.embed_documents([rows[i]["text"] for i in documents])
    for i, row in enumerate(rows):
        if row["kind"] == "query":
            got[i] = embedder.embed_query(row["text"])
    want = np.array([r["vector"] for r in rows], dtype=np.float32)
    return rows, (got * want).sum(axis=1) / np.linalg.norm(want, axis=1)


def check_model(reference: Path) -> None:
    from kenning.embedding import local

    rows, cosines = reference_cosines(reference)
    worst = int(cosines.argmin())
    assert cosines[worst] >= 0.99, f"the model's vector of {rows[worst]['text'][:60]!r} is " \
        f"off its fp32 reference (cosine {cosines[worst]:.4f})"
    print(f"model: {len(rows)} texts match their fp32 reference on "
          f"{local.runtime_name(local.session())} (min cosine {cosines.min():.4f})")


def kenning(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "kenning", *args], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"kenning {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def check_service() -> str:
    """The CLI search and the MCP server took their query vectors from one embedding
    service, which ends here with the folder it lives in (on a system that runs none, each
    process loaded the model itself)."""
    from kenning import config, hostos
    from kenning.embedding import make_embedder
    from kenning.embedding.service_client import ServiceEmbedder

    embedder = make_embedder(config.load(), service=True)
    if hostos.NO_SERVICE:
        assert not isinstance(embedder, ServiceEmbedder), "a service where none can run"
        return f"embedding service: none. {hostos.NO_SERVICE}"
    assert isinstance(embedder, ServiceEmbedder), "embedder.service is off"
    status = embedder.status()
    assert status["served"]["query"] >= 2, f"the embedding service served {status['served']}"
    return f"embedding service: pid {status['pid']} answered {status['served']['query']} " \
        f"queries on {status['runtime']}"


async def mcp_search(root: Path, env: dict[str, str]) -> str:
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning", "mcp"],
                                   env=env, cwd=str(root))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("code_search", {"query": QUERY, "limit": 3})
        assert not result.is_error, result.content
        assert result.structured_content is not None, "code_search gave no structured content"
        return json.dumps(result.structured_content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["rust", "numpy"])
    parser.add_argument("--reference", type=Path, default=Path(__file__).resolve().parent.parent
                        / "tests" / "data" / "minilm_reference.json")
    args = parser.parse_args()
    check_kernels(args.backend)
    # under /tmp: macOS's own temporary folder makes a path too long for the service's socket
    with tempfile.TemporaryDirectory(prefix="kenning-smoke-", dir="/tmp") as tmp:
        root, home = Path(tmp, "shop"), Path(tmp, "home")
        # this process too (check_model): the model's checked sha256 is remembered under home
        os.environ.update(KENNING_HOME=str(home), KENNING_CONFIG=str(home / "config.toml"))
        check_model(args.reference)
        for name, text in PROJECT.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        env = dict(os.environ)
        started = time.perf_counter()
        kenning("index", str(root), env=env)
        indexed = time.perf_counter()
        found = json.loads(kenning("search", QUERY, str(root), "--json-output", env=env))
        first = found["results"][0]["path"] if found["results"] else None
        assert first == EXPECTED, f"search found {first}, not {EXPECTED}: {found}"
        searched = time.perf_counter()
        try:
            assert EXPECTED in anyio.run(mcp_search, root, env), "the MCP search missed it"
            print(f"index {indexed - started:.1f} s, search {searched - indexed:.1f} s, "
                  f"MCP round trip {time.perf_counter() - searched:.1f} s: {EXPECTED} found")
            print(check_service())
        finally:
            from kenning.embedding.service_client import stop_services

            stop_services()


if __name__ == "__main__":
    main()
