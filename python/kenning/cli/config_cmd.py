"""`kenning config get/set/unset/list`."""

from __future__ import annotations

import json

import click

from kenning import config as cfg


@click.group()
def config() -> None:
    """Read and change settings (file < environment < flags).

    The file is $KENNING_CONFIG, else config.toml in $KENNING_HOME when that is set, else in
    the platform's config folder. KENNING_EMBEDDER_BACKEND overrides embedder.backend, and so
    on for every key."""


@config.command("get")
@click.argument("key")
def get(key: str) -> None:
    """Print the value of KEY as it resolves now."""
    value = cfg.load()[key]  # bare, for scripts: `true`, not `True`; nothing when unset
    click.echo("" if value is None else value if isinstance(value, str) else cfg.toml_value(value))


# a VALUE may start with a dash (embedder.keep_alive -1)
@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
def set_(key: str, value: str) -> None:
    """Write KEY = VALUE to the config file (an empty VALUE unsets optional keys)."""
    stored = cfg.set_value(key, value)
    click.echo(f"{key} = {cfg.toml_value(stored)} written to {cfg.config_path()}")


@config.command("unset")
@click.argument("key")
def unset(key: str) -> None:
    """Remove KEY from the config file, so its default applies again."""
    if cfg.unset_value(key):
        default = cfg.KEYS[key].default
        click.echo(f"{key} removed from {cfg.config_path()} (default: "
                   f"{'unset' if default is None else cfg.toml_value(default)})")
    else:
        click.echo(f"{key} was not set in {cfg.config_path()}")


@config.command("list")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def list_(json_output: bool) -> None:
    """Every key with its value, where the value comes from, and what it does."""
    settings = cfg.load()
    rows = [
        {"key": k, "value": settings[k], "origin": settings.origin(k), "env": cfg.env_name(k),
         "help": spec.help}
        for k, spec in cfg.KEYS.items()
    ]
    if json_output:
        click.echo(json.dumps({"type": "config", "path": str(cfg.config_path()), "keys": rows}))
        return
    click.echo(f"# {cfg.config_path()}")
    for row in rows:  # TOML; an unset key is a comment, as TOML has no null
        line = (f"# {row['key']} (unset)" if row["value"] is None else
                f"{row['key']} = {cfg.toml_value(row['value'])}")
        click.echo(f"{line}  # {row['origin']}; {row['help']}")
