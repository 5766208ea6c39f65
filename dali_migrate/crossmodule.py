"""Pipelines defined in one file and used in others: migrate them together, or keep them.

A pipeline function that another file imports is migrated only when every such file is part of
the run and its uses can be migrated too: ``pipe = train_pipe(...)``, ``build()``, ``run()``,
outputs, iterators, checkpoints, as within one file. Otherwise it stays in pipeline mode, with
a TODO naming the file and the reason, so that no caller is left calling ``build()`` on a
generator. The decision is a fixed point: keeping one pipeline can change what its importers
can do, so importers are tried again until nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import libcst as cst

from .config import Config
from .files import read_regular
from .diagnostics import FileResult
from .imports import IMPORT_TYPES, dotted_name, import_nodes
from .values import returned_by


def module_name(path: Path, root: Path | None) -> str:
    """``pkg/pipelines.py`` -> ``pkg.pipelines``, relative to the project root. Without one
    (or outside it) the whole path counts: ``same_module`` matches an import by its last parts."""
    absolute = path.resolve()
    try:
        relative = absolute.relative_to(root.resolve()) if root else absolute.relative_to(absolute.anchor)
    except ValueError:
        relative = absolute.relative_to(absolute.anchor)
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def same_module(defined: str, imported: str) -> bool:
    """``src.pkg.pipelines`` is imported as ``pkg.pipelines`` when ``src`` is on the path."""
    return bool(imported) and (defined == imported or defined.endswith("." + imported))


def absolute_module(node: cst.ImportFrom, importer: str) -> str:
    module = dotted_name(node.module) if node.module is not None else ""
    if not node.relative:
        return module or ""
    package = importer.split(".")[: -len(node.relative)] if importer else []
    return ".".join([*package, *([module] if module else [])])


class Unfollowable(Exception):
    """An import of the defining module that dali-migrate cannot map to local names."""


def imported_locals(importer: cst.Module, importer_module: str, defined: str, names: set[str]) -> dict[str, str]:
    """Local spelling (``train_pipe``, ``pipelines.train_pipe``) -> the defined name it stands for."""
    found: dict[str, str] = {}
    for node in (node for statement in importer.body for node in import_nodes(statement)):
        if isinstance(node, IMPORT_TYPES):
            for alias in node.names:
                full = dotted_name(alias.name) or ""
                if same_module(defined, full):
                    local = alias.asname.name.value if alias.asname else full
                    found.update((f"{local}.{name}", name) for name in names)
            continue
        source = absolute_module(node, importer_module)
        if isinstance(node.names, cst.ImportStar):
            if same_module(defined, source):
                raise Unfollowable("a star import")
            continue
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname else name
            if same_module(defined, source) and name in names:
                found[local] = name
            elif same_module(defined, f"{source}.{name}" if source else name):  # from pkg import pipelines
                found.update((f"{local}.{defined_name}", defined_name) for defined_name in names)
    return found


@dataclass
class Exporter:
    path: Path
    position: int  # in the run's results
    users: dict[str, list[Path]]  # exported name -> files that import it
    plans: dict[str, object] = field(default_factory=dict)  # name -> its PipelinePlan
    # names of functions that make a pipeline and return it (their plan is the pipeline's)
    returning: set[str] = field(default_factory=set)
    keep: dict[str, str] = field(default_factory=dict)  # name -> why it stays in pipeline mode


def defined_plans(data: bytes, config: Config, names: set[str]) -> tuple[dict[str, object], set[str], dict[str, str]]:
    """The plans of the pipelines ``names`` in a file's source: decorated functions, legacy
    subclasses in the function form they are migrated to (each plan knows its class), and
    functions that make one pipeline and return it (``def get_pipe(...): pipe = train_pipe(...);
    pipe.build(); return pipe``): the plan of that pipeline. Returns them, the names of the
    functions that return one, and such functions that cannot be followed, with the reason."""
    from .engine import SourceError, _analysed_or_error, analyse
    from .migrate.normalize import normalize_with_graphs
    from .migrate.parameter_sources import resolve_parameter_sources
    from .migrate.plan import find_stray_references, plan_decorated_pipeline

    try:
        analysed = _analysed_or_error(data, config)
    except SourceError:
        return {}, set(), {}
    subclasses = {}
    normalized = normalize_with_graphs(analysed.module, has_with=analysed.facts.with_statements > 0)
    if normalized is not None and normalized.graphs:  # subclasses, and ``with pipe:`` graphs functions return
        subclasses = {g.subclass.name: g.subclass for g in normalized.graphs if g.subclass is not None}
        analysed = analyse(normalized.module, config, normalized.imports())
    facts = analysed.facts
    refused = {name: (f"`{name}()` also returns the pipeline in its own module, where its metadata is read, "
                      "so it gives that first: migrate those uses together by hand")
               for name in names if name in facts.pipeline_helpers and _read_through(name, facts)}
    returned = {name: facts.graphs_of(facts.pipeline_helpers[name]) for name in names
                if name in facts.pipeline_helpers and name not in refused}
    returned = {name: graphs.pop() for name, graphs in returned.items() if len(graphs) == 1}
    strays = find_stray_references(analysed.module, facts)
    plans = [plan_decorated_pipeline(graph, facts, strays) for graph in facts.graphs
             if graph.kind == "decorator" and (graph.name in names or graph.name in returned.values())]
    resolve_parameter_sources(analysed.module, facts, plans)
    for plan in plans:
        plan.subclass = subclasses.get(plan.graph.name)
    migratable = {plan.graph.name: plan for plan in plans if plan.migratable}
    found = {name: plan for name, plan in migratable.items() if name in names}
    found.update((name, migratable[graph]) for name, graph in returned.items() if graph in migratable)
    return found, set(returned) & set(found), refused


def _read_through(helper: str, facts) -> bool:
    """A variable of the helper's own module holds what it returns and reads the reader's
    metadata or a setting, or makes an iterator: the helper's pipeline then gives that module
    its metadata first (reader_meta.py), which other modules' callers would take for a batch."""
    from .analysis import iterated_pipeline
    from .migrate.reader_meta import META_METHODS

    held = {var for var, factories in facts.pipeline_var_factories.items() if helper in factories}
    reads = [site.origin for site in facts.pipeline_method_sites(META_METHODS)]
    reads += [site.origin for site in facts.pipeline_attribute_reads]
    reads += [facts.key_of(iterated_pipeline(site.node)) for site in facts.iterator_uses]
    return bool(held & set(reads))


def settle(exporters: list[Exporter], root: Path | None, relative: Callable[[Path], str],
           try_importer: Callable[[Path, dict[str, object]], FileResult]) -> dict[Path, dict[str, object]]:
    """Decide which exported pipelines migrate with their importers; fill each exporter's
    ``keep``. Returns, per importer, the imported plans its migration gets (local name -> plan)."""
    while True:
        imported, owners = _imports_of_alive(exporters, root, relative)
        killed = False
        for importer, plans in imported.items():
            result = try_importer(importer, plans)
            for local, why in (result.imports_blocked.items() if result.error is None else
                               [(local, result.error) for local in plans]):
                exporter, name = owners[importer][local]
                if name not in exporter.keep:
                    exporter.keep[name] = f"`{name}` is used from {relative(importer)}: {why}"
                    killed = True
        if not killed:
            return imported


def _imports_of_alive(exporters: list[Exporter], root: Path | None, relative: Callable[[Path], str]):
    imported: dict[Path, dict[str, object]] = {}
    owners: dict[Path, dict[str, tuple[Exporter, str]]] = {}
    for exporter in exporters:
        defined = module_name(exporter.path, root)
        for name, users in exporter.users.items():
            if name in exporter.keep:
                continue
            for user in users:
                try:
                    source = cst.parse_module(read_regular(user))
                    locals_ = imported_locals(source, module_name(user, root), defined, {name})
                    if not locals_:
                        raise Unfollowable(f"no import of `{defined}` names it")
                except (OSError, cst.ParserSyntaxError, Unfollowable, UnicodeDecodeError) as error:
                    exporter.keep[name] = f"`{name}` is used from {relative(user)}, whose import cannot be " \
                                          f"followed ({error}): migrate those uses together by hand"
                    break
                for local in locals_:
                    if name in exporter.returning:  # the importer's code goes by this name (analysis.py)
                        local = returned_by(local)
                    imported.setdefault(user, {})[local] = exporter.plans[name]
                    owners.setdefault(user, {})[local] = (exporter, name)
    # an importer whose exporter kept a name after all must not get it
    for user in list(imported):
        for local, (exporter, name) in list(owners[user].items()):
            if name in exporter.keep:
                del imported[user][local]
        if not imported[user]:
            del imported[user]
    return imported, owners
