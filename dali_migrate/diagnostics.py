"""What the tool reports about a file."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    column: int  # 1-based
    code: str
    message: str
    fix: str  # "fixed" | "todo" | "" (check mode: the rule's fix availability)
    end_line: int = 0
    end_column: int = 0
    cell: int | None = None  # notebooks: the 1-based code cell number
    # notebooks: the same place in the .ipynb file's JSON text, for SARIF and GitHub annotations
    file_line: int = 0
    file_column: int = 0
    file_end_line: int = 0
    file_end_column: int = 0

    @property
    def location(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:{self.line}:{self.column}"
        return f"{self.path}:{self.line}:{self.column}"


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    changed: bool = False
    new_source: bytes | None = None
    diff: str = ""
    exported: list[str] = field(default_factory=list)  # top-level names that now mean a generator
    # imported pipelines (local name) whose uses here cannot be migrated, with the reason
    imports_blocked: dict[str, str] = field(default_factory=dict)
    # migrate: each pipeline of the file with why it stays in pipeline mode (none: migrated)
    pipelines: list[tuple[str, list[str]]] = field(default_factory=list)
    safety: dict[str, tuple[str, str]] = field(default_factory=dict)  # migrated pipeline -> (level, why)
    inlined: list[str] = field(default_factory=list)  # migrated pipelines a notebook runs once, inlined there
    imports_loader: bool = False  # migrate: it now imports DALITorchLoader (Config.loader_import)
    loader_file: str | None = None  # migrate, set by the runner: the file of that module
    loader_for_jax: bool = False  # migrate: it imports the JAX loader from that module too
    loader_modes: frozenset = frozenset()  # migrate: what its loaders need beyond a reader's epochs (loader_module.MODES)
    created: bool = False  # migrate: a new file (the loader module), not a rewrite
    # migrate: functions of other modules given outputs of migrated pipelines (HelperRequest)
    helper_requests: list = field(default_factory=list)
    handled_helpers: frozenset = frozenset()  # migrate: the imported helpers migrated with it
    linked: bool = False  # check: its findings depend on modules it imports (not cached)
