"""Functions of one file that take the outputs of pipelines migrated in others.

DALI's getting-started notebook imports ``show_images`` from a display module and hands it each
batch; ``show_images`` calls ``image_batch.at(j)`` and ``len(image_batch)``. When a run migrates
the pipelines whose outputs reach such a function, the function is rewritten to take ndd Batches
(``np.asarray(image_batch.tensors[j])``, ``image_batch.batch_size``), as a helper in the same
module is, provided that:

- the function is a plain top-level ``def`` (no decorator, ``*args`` or ``**kwargs``) of a
  Python file of the run that is not migrated itself;
- every file of the project that imports it is in the run, and every call there passes outputs
  of migrated pipelines for the same parameters; its own module does not use it;
- it uses those parameters only through the TensorList API (``output_helpers``).

Otherwise its callers keep their TODOs. The function's file and its callers are written together.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import libcst as cst

from .config import Config
from .crossmodule import absolute_module, module_name, same_module
from .diagnostics import FileResult
from .files import read_regular
from .imports import IMPORT_FROM_TYPES, dotted_name, import_nodes
from .output_helpers import OutputHelper, References, param_uses, plain_signature
from .visitors import Transformer, walk

@dataclass
class _Caller:
    position: int
    path: Path
    local: str
    arguments: tuple[tuple[str, ...], ...]
    complete: bool  # every call of the function there passes outputs


@dataclass
class _Helper:
    path: Path
    name: str
    callers: list[_Caller] = field(default_factory=list)


def migrate_helpers(results: list[FileResult], run_files: list[Path], config: Config, root: Path | None,
                    importer_index: Callable[[set[str]], Callable[[str, Path], list[Path]]],
                    remigrate: Callable[[int, Config], FileResult]) -> list[set[int]]:
    """Rewrites the helpers that can be, re-migrates their callers without the TODOs the helpers
    answer, and returns the units (each helper's file with its callers). ``importer_index``
    reads the project once for the given names and answers ``importers(name, defining file)``."""
    positions = {path.resolve(): position for position, path in enumerate(run_files)}
    helpers = _requested_helpers(results, run_files, root)
    if not helpers:
        return []
    importers = importer_index({helper.name for helper in helpers.values()})
    units = []
    for helper in helpers.values():
        position = positions.get(helper.path.resolve())
        if position is None or results[position].changed or results[position].error is not None:
            continue
        rewritten = _rewrite(helper, importers(helper.name, helper.path), results[position].path)
        if rewritten is None:
            continue
        results[position] = rewritten
        for caller in helper.callers:
            handled = results[caller.position].handled_helpers | {caller.local}
            results[caller.position] = remigrate(caller.position, replace(config, handled_helpers=handled))
            results[caller.position].handled_helpers = handled
        units.append({position, *(c.position for c in helper.callers)})
    return units


def _requested_helpers(results: list[FileResult], run_files: list[Path], root: Path | None) -> dict:
    helpers: dict[tuple[Path, str], _Helper] = {}
    for position, (path, result) in enumerate(zip(run_files, results)):
        if not result.changed or result.error is not None or not result.helper_requests or path.suffix != ".py":
            continue
        try:
            module = cst.parse_module(read_regular(path))
        except (OSError, cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        for request in result.helper_requests:
            source = _imported_from(module, module_name(path, root), request.local)
            if source is None:
                continue
            defined_in = _project_file(source[0], run_files, root)
            if defined_in is None:
                continue
            helper = helpers.setdefault((defined_in.resolve(), source[1]), _Helper(defined_in, source[1]))
            complete = len(request.arguments) == request.calls
            helper.callers.append(_Caller(position, path, request.local, request.arguments, complete))
    return helpers


def _imported_from(module: cst.Module, own_name: str, local: str) -> tuple[str, str] | None:
    """(module, name) of ``from module import name`` that binds ``local``."""
    for node in (node for statement in module.body for node in import_nodes(statement)):
        if not isinstance(node, IMPORT_FROM_TYPES) or isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname else dotted_name(alias.name)
            if bound == local:
                return absolute_module(node, own_name), dotted_name(alias.name)
    return None


def _project_file(module: str, run_files: list[Path], root: Path | None) -> Path | None:
    found = [p for p in run_files if p.suffix == ".py" and same_module(module_name(p, root), module)]
    return found[0] if len(found) == 1 else None


def _rewrite(helper: _Helper, importers: list[Path], display_path: str) -> FileResult | None:
    """The helper's file with the function taking ndd Batches, or None where it cannot be."""
    callers = {c.path.resolve() for c in helper.callers}
    if not all(c.complete for c in helper.callers) or any(p.resolve() not in callers for p in importers):
        return None
    data = read_regular(helper.path)
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        return None
    function = _plain_function(module, helper.name)
    params = _output_parameters(function, helper.callers) if function is not None else None
    if params is None or _used_in_own_module(module, helper.name):
        return None
    uses = param_uses(OutputHelper(function, sorted(params), set()))
    if not uses:
        return None
    return _rewritten_result(module, data, uses, display_path)


def _plain_function(module: cst.Module, name: str) -> cst.FunctionDef | None:
    found = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    return found[0] if len(found) == 1 and plain_signature(found[0]) else None


def _output_parameters(function: cst.FunctionDef, callers: list[_Caller]) -> set[str] | None:
    """The parameters every call gives outputs to: the same ones at every call, or None."""
    positional = [p.name.value for p in [*function.params.posonly_params, *function.params.params]]
    named = set(positional) | {p.name.value for p in function.params.kwonly_params}
    chosen: set[str] | None = None
    for arguments in (call for caller in callers for call in caller.arguments):
        here = set()
        for where in arguments:
            name = positional[int(where)] if where.isdigit() and int(where) < len(positional) else where
            if name not in named:
                return None
            here.add(name)
        if chosen is not None and here != chosen:
            return None
        chosen = here
    return chosen or None


def _used_in_own_module(module: cst.Module, name: str) -> bool:
    references = References({name})
    walk(module, references)
    return bool(references.calls.get(name)) or bool(references.other_uses.get(name))


def _rewritten_result(module: cst.Module, data: bytes, uses: list, path: str) -> FileResult:
    from .engine import _diagnostic, unified_diff
    from .migrate.callsites import NDD_METHODS, NUMPY_METHODS, CallSiteRewrites, numpy_alias
    from .migrate.imports import add_third_party_import, ndd_import
    from .positions import Positions
    from .rules.dm007_tensorlist_api import TensorListApi

    methods = {method for _, _, method in uses}
    existing_numpy = numpy_alias(module)
    rewrites = CallSiteRewrites("ndd", existing_numpy or "np", output_uses={id(node): m for node, _, m in uses})
    new_module = module.visit(_UsesRewriter(rewrites))
    if methods & NUMPY_METHODS and existing_numpy is None:
        new_module = add_third_party_import(new_module, "import numpy as np\n")
    if methods & NDD_METHODS:
        new_module = add_third_party_import(new_module, ndd_import())
    positions = Positions(module, [node for node, _, _ in uses])
    diagnostics = [_diagnostic(path, positions, TensorListApi.code, _message(method), node, "fixed")
                   for node, _, method in uses]
    new_source = new_module.bytes
    return FileResult(path, diagnostics=diagnostics, changed=True, new_source=new_source,
                      diff=unified_diff(data, new_source, path))


def _message(method: str) -> str:
    from .rules.dm007_tensorlist_api import REPLACEMENTS, SPELLED, TensorListApi

    return f"{TensorListApi.message}: `{SPELLED.get(method, f'{method}()')}` -> {REPLACEMENTS[method]}"


class _UsesRewriter(Transformer):
    def __init__(self, rewrites) -> None:
        self.rewrites = rewrites

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self.rewrites.rewrite_call(original_node, updated_node)

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        return self.rewrites.rewrite_subscript(original_node, updated_node)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return self.rewrites.without_needless_parentheses(updated_node)

