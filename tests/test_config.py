from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from index_helpers import kenning_cli
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
    with pytest.raises(ConfigError, match="config file .* cannot be read"):
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


def write_config(text: str | bytes) -> Path:
    path = cfg.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# (key, what `config set` gets, the same value as TOML, words of the error)
BAD_VALUES = [
    ("search.limit", "0", "0", "from 1 to 1000"),
    ("search.limit", "ten", '"ten"', "whole number"),
    ("search.limit", "2.5", "2.5", "whole number"),
    ("embedder.backend", "olama", '"olama"', "did you mean ollama"),
    ("mcp.max_tokens", "10", "10", "at least 500"),
    ("embedder.timeout", "0", "0", "above 0"),
    ("embedder.timeout", "nan", "nan", "seconds"),
    ("embedder.batch_size", "-1", "-1", "from 1 to 4096"),
    ("embedder.url", "localhost:11434", '"localhost:11434"', "http://"),
    ("search.refresh", "maybe", '"maybe"', "true or false"),
    ("index.vector_search", "fast", '"fast"', "auto, exact or ann"),
    ("shared.uri", "ftp://x", '"ftp://x"', "http(s):// Milvus server or a local file"),
    ("shared.uri", "/tmp/shared", '"/tmp/shared"', "ending in .db"),
    ("search.embed_limit", "1000000000", "1000000000", "from 0 to 10000"),
]


@pytest.mark.parametrize(("key", "raw", "toml", "words"), BAD_VALUES)
def test_bad_values_are_refused_when_written_and_when_read(
        capsys: pytest.CaptureFixture[str], key: str, raw: str, toml: str, words: str) -> None:
    code, _, err = kenning_cli(capsys, "config", "set", key, raw)
    assert code == 2 and words in err and key in err
    assert not cfg.config_path().exists()  # nothing written
    section, leaf = key.split(".")
    path = write_config(f"[{section}]\n{leaf} = {toml}\n")  # written by hand
    for command in (["config", "list"], ["search", "retry", "--no-refresh"]):
        code, _, err = kenning_cli(capsys, *command)
        assert code == 2 and words in err and str(path) in err
        assert f"kenning config unset {key}" in err  # the way out
    assert kenning_cli(capsys, "config", "unset", key)[0] == 0
    assert cfg.load()[key] == cfg.KEYS[key].default


@pytest.mark.parametrize(("toml", "key", "expected"), [
    ("[search]\nlimit = true", "search.limit", "whole number"),
    ("[embedder]\nbackend = 5", "embedder.backend", "expected local, ollama or openai"),
    ("[embedder]\nmodel = 3", "embedder.model", "quoted string"),
    ("[embedder]\ntimeout = \"fast\"", "embedder.timeout", "seconds"),
    ("[search]\nlimit = [1]", "search.limit", "whole number"),
    ("[search.limit]\nx = 1", "search.limit", "whole number"),
])
def test_wrong_toml_types_are_one_sentence(toml: str, key: str, expected: str) -> None:
    write_config(toml + "\n")
    with pytest.raises(ConfigError, match=expected) as caught:
        cfg.load()
    assert key in caught.value.message


def test_toml_types_that_fit_are_taken() -> None:
    write_config("[search]\nlimit = 20\nrefresh = false\n[embedder]\ntimeout = 5\n"
                 "keep_alive = -1\nquery_prefix = \"\"\n")
    settings = cfg.load()
    assert settings["search.limit"] == 20 and settings["search.refresh"] is False
    assert settings["embedder.timeout"] == 5.0 and settings["embedder.keep_alive"] == "-1"
    assert settings["embedder.query_prefix"] == ""


@pytest.mark.parametrize(("toml", "unknown", "nearest"), [
    ("[search]\nlimt = 5", "search.limt", "search.limit"),
    ("[embeder]\nbackend = \"local\"", "embeder", None),
    ("serch = 1", "serch", None),
    ("[search]\nlimit = 5\n[mcp]\nmax_token = 900", "mcp.max_token", "mcp.max_tokens"),
])
def test_unknown_keys_in_the_file_name_the_nearest_one(toml: str, unknown: str,
                                                       nearest: str | None) -> None:
    path = write_config(toml + "\n")
    with pytest.raises(ConfigError) as caught:
        cfg.load()
    message = caught.value.message
    assert f"Unknown config key {unknown!r} in the config file {path}" in message
    if nearest:
        assert f"Did you mean {nearest!r}?" in message


def test_projects_tables_are_not_unknown_keys() -> None:
    write_config('[[projects]]\nid = "a"\nroot = "/tmp/a"\n')
    assert cfg.load().projects[0]["id"] == "a"


@pytest.mark.parametrize(("toml", "words"), [
    ('[[projects]]\nid = "a"\nrot = "/tmp/a"\n', "Unknown key 'rot' in a [[projects]] "
     "table of {path} (did you mean root?)"),
    ('[[projects]]\nid = "a"\n', "A [[projects]] table of {path} has no root"),
    ('[[projects]]\nid = "a"\nroot = "/tmp/a"\n[[projects]]\nid = "a"\nroot = "/tmp/b"\n',
     "Two [[projects]] tables of {path} have the id 'a'"),
    ('[[projects]]\nid = "a"\nroot = "/tmp/a"\n[[projects]]\nid = "b"\nroot = "/tmp/x/../a/"\n',
     "Two [[projects]] tables of {path} have the root /tmp/a"),
    ('[[projects]]\nid = "a"\nroot = "/tmp/a"\nroot = "/tmp/b"\n',
     "The config file {path} cannot be read: Cannot overwrite a value"),
])
def test_misspelt_missing_or_repeated_project_keys_are_one_sentence(
        capsys: pytest.CaptureFixture[str], toml: str, words: str) -> None:
    path = write_config(toml)
    with pytest.raises(ConfigError) as caught:
        cfg.load()
    assert words.format(path=path) in caught.value.message
    code, _, err = kenning_cli(capsys, "config", "list")
    assert code == 2 and words.format(path=path) in err


@pytest.mark.parametrize("command", [["get", "search.limt"], ["set", "search.limt", "5"],
                                     ["unset", "search.limt"]])
def test_unknown_keys_on_the_command_line_name_the_nearest_one(
        capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, _, err = kenning_cli(capsys, "config", *command)
    assert code == 2 and "Unknown config key 'search.limt'" in err
    assert "Did you mean 'search.limit'?" in err


def test_a_binary_config_file_is_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(b"\xff\xfe\x00binary\x89PNG\r\n")
    for command in (["config", "list"], ["config", "set", "search.limit", "5"],
                    ["config", "unset", "search.limit"], ["search", "retry"]):
        code, _, err = kenning_cli(capsys, *command)
        assert code == 2 and f"The config file {path} is not text" in err
    assert path.read_bytes().startswith(b"\xff\xfe")  # left as it was


def test_unset_removes_the_key_and_keeps_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config("# mine\n[search]\nlimit = 20\n\n[embedder]\nbackend = \"ollama\"\n")
    code, out, _ = kenning_cli(capsys, "config", "unset", "search.limit")
    assert code == 0 and "search.limit removed" in out
    text = path.read_text(encoding="utf-8")
    assert "# mine" in text and "limit" not in text and "[search]" not in text
    assert 'backend = "ollama"' in text
    assert cfg.load()["search.limit"] == 10
    code, out, _ = kenning_cli(capsys, "config", "unset", "search.limit")
    assert code == 0 and "was not set" in out


def test_a_value_may_start_with_a_dash(capsys: pytest.CaptureFixture[str]) -> None:
    assert kenning_cli(capsys, "config", "set", "embedder.keep_alive", "-1")[0] == 0
    assert cfg.load()["embedder.keep_alive"] == "-1"


def test_the_typed_key_groups_of_settings_cover_every_key_with_its_type() -> None:
    from typing import get_args

    groups = {cfg.TextKey: (str,), cfg.OptionalTextKey: (str, type(None)),
              cfg.IntKey: (int,), cfg.OptionalIntKey: (int, type(None)),
              cfg.SecondsKey: (float,), cfg.FlagKey: (bool,), cfg.KindsKey: (tuple,)}
    named = [key for group in groups for key in get_args(group)]
    assert sorted(named) == sorted(cfg.KEYS)  # each key in exactly one group
    unset = {"embedder.model": "x", "embedder.url": "http://localhost:1",
             "embedder.query_prefix": "x", "embedder.document_prefix": "x",
             "shared.uri": "trial.db", "embedder.dims": "8"}  # keys without a default
    for group, kinds in groups.items():
        for key in get_args(group):
            spec = cfg.KEYS[key]
            assert spec.default is None or type(spec.default) is kinds[0], key
            value = spec.convert(unset[key] if spec.default is None else spec.default)
            assert type(value) is kinds[0], key
