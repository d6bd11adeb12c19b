"""The local model's runtime is a visible choice: ``embedder.runtime`` picks it, checked like
every setting; status and doctor name it, its version and why it was taken; and the test
tooling installs no runtime that would change what an installed kenning runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import kenning
import pytest
from index_helpers import kenning_cli
from kenning import config
from kenning.embedding import local, make_embedder
from kenning.errors import ConfigError
from kenning.services.index_admin import runtime_status

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ORT = local.installed_runtimes()["onnxruntime"]


def test_the_setting_picks_the_runtime_and_is_checked_like_every_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KENNING_RUNTIME", raising=False)
    assert config.load()["embedder.runtime"] == "auto"
    config.set_value("embedder.runtime", "ONNXRuntime")
    settings = config.load()
    made = make_embedder(settings)
    assert isinstance(made, local.LocalEmbedder) and made.runtime == "onnxruntime"
    assert runtime_status(settings, load=True) == {
        "name": "onnxruntime", "version": ORT,
        "reason": 'embedder.runtime = "onnxruntime" (config file)'}
    with pytest.raises(ConfigError, match="Bad value 'tensorrt' for embedder.runtime from the "
                                          "command line: expected auto, onnxruntime or openvino"):
        config.set_value("embedder.runtime", "tensorrt")
    for variable in ("KENNING_EMBEDDER_RUNTIME", "KENNING_RUNTIME"):  # the older name too
        monkeypatch.setenv(variable, "openvino")
        assert config.setting_origin(config.load(), "embedder.runtime") == (
            f'embedder.runtime = "openvino" ({variable})')
        monkeypatch.setenv(variable, "openvin")
        with pytest.raises(ConfigError, match=f"from {variable}: .*did you mean openvino"):
            config.load()
        monkeypatch.delenv(variable)


def test_auto_takes_openvino_only_where_the_cpu_multiplies_int8_and_it_is_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    both = {"onnxruntime": ORT, "openvino": "2026.4.1"}
    for vnni, installed, name, why in [
            (False, both, "onnxruntime", "this CPU has no VNNI or AMX"),
            (True, {"onnxruntime": ORT}, "onnxruntime", "OpenVINO is not installed"),
            (True, both, "openvino", "this CPU multiplies int8 in one instruction")]:
        monkeypatch.setattr(local, "cpu_multiplies_int8", lambda vnni=vnni: vnni)
        monkeypatch.setattr(local, "installed_runtimes", lambda installed=installed: installed)
        chosen = local.plan_runtime("auto")
        assert (chosen.name, chosen.version) == (name, installed[name])
        assert chosen.reason.startswith(why)
    assert local.plan_runtime("onnxruntime").reason == "asked for"


def test_status_and_doctor_name_the_runtime_its_version_and_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_RUNTIME", "onnxruntime")
    expected = {"name": "onnxruntime", "version": ORT,
                "reason": 'embedder.runtime = "onnxruntime" (KENNING_RUNTIME)'}
    assert kenning.status(tmp_path).runtime == expected
    code, out, _ = kenning_cli(capsys, "status", str(tmp_path))
    assert code == 0 and (f"runtime    onnxruntime {ORT}, by embedder.runtime = "
                          '"onnxruntime" (KENNING_RUNTIME)') in out.splitlines()
    code, out, _ = kenning_cli(capsys, "status", str(tmp_path), "--json-output")
    assert json.loads(out)["runtime"] == expected
    checks = {c.check: c for c in kenning.doctor(tmp_path).checks}
    assert checks["runtime"].ok and checks["runtime"].detail == (
        f"onnxruntime {ORT}, by embedder.runtime = \"onnxruntime\" (KENNING_RUNTIME)")
    remote = kenning.load_settings({"embedder.backend": "ollama", "embedder.model": "all-minilm"})
    assert kenning.status(tmp_path, settings=remote).runtime is None


def test_the_test_extra_installs_no_runtime_of_the_model() -> None:
    # installing the tests' tools must not change which runtime the installed kenning takes
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    named = {requirement.split(";")[0].split(">")[0].split("=")[0].strip().lower()
             for requirement in extras["test"]}
    assert named.isdisjoint(local.RUNTIMES)
