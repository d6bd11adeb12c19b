from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kenning import config as cfg
from kenning.cli import cli
from kenning.errors import ConfigError


def test_precedence_default_file_env_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cfg.load()["search.limit"] == 10
    cfg.set_value("search.limit", "20")
    assert cfg.load()["search.limit"] == 20
    assert cfg.load().origin("search.limit") == "file"
    monkeypatch.setenv("KENNING_SEARCH_LIMIT", "30")
    assert cfg.load()["search.limit"] == 30
    settings = cfg.load({"search.limit": 40})
    assert settings["search.limit"] == 40
    assert settings.origin("search.limit") == "flag"


def test_set_keeps_comments_and_other_tables() -> None:
    path = cfg.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('# mine\n[[projects]]\nid = "a"\nroot = "/tmp/a"\n', encoding="utf-8")
    cfg.set_value("embedder.backend", "ollama")
    text = path.read_text(encoding="utf-8")
    assert "# mine" in text and 'id = "a"' in text
    settings = cfg.load()
    assert settings["embedder.backend"] == "ollama"
    assert settings.projects[0]["id"] == "a"


def test_bad_key_and_bad_value_are_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="Unknown config key"):
        cfg.set_value("no.such", "1")
    monkeypatch.setenv("KENNING_SEARCH_LIMIT", "many")
    with pytest.raises(ConfigError, match="KENNING_SEARCH_LIMIT"):
        cfg.load()


def test_malformed_file_is_reported_not_overwritten() -> None:
    path = cfg.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("this is [not toml", encoding="utf-8")
    with pytest.raises(ConfigError, match="Cannot read the config file"):
        cfg.set_value("search.limit", "5")
    assert path.read_text(encoding="utf-8") == "this is [not toml"


def test_cli_config_roundtrip() -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["config", "set", "embedder.model", "nomic-embed-text"])
    assert done.exit_code == 0
    got = runner.invoke(cli, ["config", "get", "embedder.model"])
    assert got.output.strip() == "nomic-embed-text"
    listed = json.loads(runner.invoke(cli, ["config", "list", "--json-output"]).output)
    keys = {row["key"]: row for row in listed["keys"]}
    assert keys["embedder.model"]["origin"] == "file"
    bad = runner.invoke(cli, ["config", "get", "nope"])
    assert bad.exit_code != 0
