"""``[tool.dali-migrate]`` in pyproject.toml, merged with command-line options."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KNOWN_KEYS = {"select", "ignore", "exclude", "extend-exclude", "loader-module", "capture"}


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Config:
    select: frozenset[str] = frozenset()  # empty: every rule
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    root: Path | None = None
    exact_only: bool = False  # migrate: keep every pipeline whose migration is not exact
    line_length: int = 88  # what migrate wraps the lines it writes to: ruff's or black's setting
    loader_module: str = ""  # the dotted module that holds DALITorchLoader; "": placed per file
    capture: bool = False  # migrate: readers' epochs with next_epoch(capture=True)
    # migrate: a notebook's pipeline run once becomes the reader and one next_epoch() batch
    one_shot: bool = True
    # set per file by the runner: the module a migrated file imports DALITorchLoader from
    # (None: the class is written into the file, as for stdin)
    loader_import: str | None = None
    # set per file by the runner: imported functions migrated to take ndd Batches
    handled_helpers: frozenset[str] = frozenset()
    # set per file by the engine: (called name, its file) of project functions that run operators
    imported_graph_helpers: tuple[tuple[str, str], ...] = ()

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(prefix) for prefix in self.select):
            return False
        return not any(code.startswith(prefix) for prefix in self.ignore)

    def with_cli(self, select: tuple[str, ...], ignore: tuple[str, ...], exclude: tuple[str, ...]) -> "Config":
        return replace(
            self,
            select=frozenset(_split_codes(select)) or self.select,
            ignore=self.ignore | frozenset(_split_codes(ignore)),
            exclude=self.exclude + tuple(exclude),
        )


def _split_codes(values) -> list[str]:
    return [code.strip().upper() for value in values for code in value.split(",") if code.strip()]


def rule_codes() -> list[str]:
    """Every rule's code, from the rule modules' names (``dm005_reader.py``): reading the rules
    themselves would import LibCST, which runs on files without DALI never need."""
    import re

    folder = Path(__file__).resolve().parent / "rules"
    return sorted(f"DM{m.group(1)}" for m in (re.match(r"dm(\d{3})_", p.name) for p in folder.glob("dm*.py")) if m)


def check_codes(config: Config, where: str) -> None:
    """A code or prefix that names no rule is an error: ``select = ["DMOO1"]`` would silently
    turn the gate off."""
    codes = rule_codes()
    unknown = sorted(c for c in config.select | config.ignore if not any(code.startswith(c) for code in codes))
    if unknown:
        raise ConfigError(f"{where}: unknown rule code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                          f"valid codes (or their prefixes): {', '.join(codes)}")


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path, explicit: Path | None = None) -> Config:
    path = explicit or find_pyproject(start)
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read configuration: {error}") from error
    section = data.get("tool", {}).get("dali-migrate", {})
    unknown = set(section) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown [tool.dali-migrate] keys: {', '.join(sorted(unknown))}")
    config = Config(
        select=frozenset(_split_codes(_as_list(section, "select", path))),
        ignore=frozenset(_split_codes(_as_list(section, "ignore", path))),
        exclude=tuple(_as_list(section, "exclude", path) + _as_list(section, "extend-exclude", path)),
        root=path.parent,
        loader_module=_dotted_module(section, path),
        capture=_flag(section, "capture", path),
        line_length=_line_length(data, path),
    )
    check_codes(config, f"{path}: [tool.dali-migrate]")
    return config


def _flag(section: dict, key: str, path: Path) -> bool:
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: [tool.dali-migrate] {key} must be true or false")
    return value


def _line_length(data: dict, path: Path) -> int:
    """The project's line length: ruff's, else black's, else black's default."""
    tool = data.get("tool", {})
    for owner in ("ruff", "black"):
        value = tool.get(owner, {}).get("line-length")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 20:
            raise ConfigError(f"{path}: [tool.{owner}] line-length must be a whole number of at least 20")
        return value
    return 88


def _dotted_module(section: dict, path: Path) -> str:
    value = section.get("loader-module", "")
    if not isinstance(value, str) or (value and not all(part.isidentifier() for part in value.split("."))):
        raise ConfigError(f"{path}: [tool.dali-migrate] loader-module must be a dotted module name "
                          f"such as \"mypackage.data.dali_torch_loader\", got {value!r}")
    return value


def _as_list(section: dict, key: str, path: Path) -> list[str]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.dali-migrate] {key} must be a list of strings")
    return value
