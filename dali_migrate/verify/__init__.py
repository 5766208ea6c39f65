"""``dali-migrate verify``: run the original and the migrated pipeline and diff their outputs.

Each side runs in a fresh Python process (``worker.py``) so that the two never share DALI
state, and a crash or a hang on one side is reported, not inherited.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ..analysis import collect_facts, iterator_decorator
from ..config import Config
from ..engine import migrate_source
from ..imports import dotted_name
from ..optable import load_op_table
from .compare import Comparison, compare_runs, compare_statistically

EXIT_EQUAL, EXIT_DIFFERENT, EXIT_COULD_NOT_RUN = 0, 1, 2


@dataclass(frozen=True)
class VerifyOptions:
    pipelines: tuple[str, ...] = ()
    args: dict = field(default_factory=dict)
    iterations: int = 3
    batch_size: int | None = None
    device: str = "cpu"
    rtol: float = 1e-5
    atol: float = 1e-6
    align_rng: bool = True
    timeout: float = 300


@dataclass
class SideResult:
    ok: bool
    seconds: float = 0.0
    iterations: list = field(default_factory=list)
    kind: str = ""
    error: str = ""
    batch_size: int | None = None  # what the side ran with (the module's, where it named one)

    def throughput(self, batch_size: int) -> tuple[float, float]:
        if not self.ok or self.seconds <= 0:
            return 0.0, 0.0
        batches = (len(self.iterations) - 1) / self.seconds  # the first batch is not timed
        return batches, batches * batch_size


@dataclass
class PipelineReport:
    name: str
    batch_size: int
    original: SideResult
    migrated: SideResult
    comparison: Comparison | None
    rng_aligned: bool
    random_ops: list[str]
    note: str = ""  # how the migrated side was made, where it is not the migrated file as it is

    @property
    def status(self) -> str:
        if not (self.original.ok and self.migrated.ok):
            return "could not run"
        return "equal" if self.comparison.equal else "different"


@dataclass
class VerifyReport:
    pipelines: list[PipelineReport] = field(default_factory=list)
    error: str = ""

    @property
    def exit_code(self) -> int:
        if self.error or any(p.status == "could not run" for p in self.pipelines):
            return EXIT_COULD_NOT_RUN
        if any(p.status == "different" for p in self.pipelines):
            return EXIT_DIFFERENT
        return EXIT_EQUAL


@dataclass(frozen=True)
class CallSite:
    """How to get one pipeline of a module: call a ``@pipeline_def`` function ("pipeline"),
    call a helper that returns a pipeline ("helper"), or take a module variable ("variable")."""

    args: list[str]
    kwargs: dict[str, str]
    batch_size: str | None
    seed: str | None
    kind: str = "pipeline"


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node).strip()


def _decorator_args(module: cst.Module, graph) -> dict[str, str]:
    return {a.keyword.value: _code(module, a.value) for a in getattr(graph.decorator.decorator, "args", []) if a.keyword}


def pipeline_call_sites(source: bytes) -> tuple[dict[str, CallSite], dict[str, list[str]]]:
    """Per pipeline in ``source``: how to get it (the arguments of its first call site), and
    its random ops. ``with pipe:`` graphs are read through their decorator form."""
    from ..migrate.helpers import graph_helpers, random_helper_calls
    from ..migrate.normalize import normalize_with_graphs

    module = cst.parse_module(source)
    normalized = normalize_with_graphs(module)
    if normalized is not None:
        module = normalized.module
    facts = collect_facts(module, imports=normalized.imports() if normalized else None)
    # a JAX ``@data_iterator`` makes an iterator, which the harness cannot run as a pipeline
    graphs = {g.name: g for g in facts.graphs
              if g.kind == "decorator" and iterator_decorator(g.node, facts.imports) is None}
    synthesized = {g.function.name.value: g for g in (normalized.graphs if normalized else [])}
    sites, random_ops = {}, {}
    helpers = graph_helpers(facts)

    def add(name: str, kind: str, graph_name: str | None, call: cst.Call | None, harness_args: bool) -> None:
        graph = graphs.get(graph_name)
        if graph is None:
            return
        given = [a.with_changes(value=callers.argument(a.value, call)) for a in (call.args if call else [])]
        args = [_code(module, a.value) for a in given if a.keyword is None]
        kwargs = {a.keyword.value: _code(module, a.value) for a in given if a.keyword}
        if harness_args:  # the harness passes these itself
            pipeline_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _HARNESS_CONTROLLED}
        else:  # the call passes them: read, not replaced
            pipeline_kwargs = {k: v for k, v in kwargs.items() if k in _HARNESS_CONTROLLED}
        merged = {**_decorator_args(module, graph), **pipeline_kwargs}
        if kind == "helper":  # ``Pipeline(batch_size=batch_size)`` of ``def make(root, batch_size)``
            helper = next((s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
            merged = {key: _given_for(module, helper, given, code) for key, code in merged.items()}
        sites[name] = CallSite(args, kwargs, merged.get("batch_size"), merged.get("seed"), kind)
        helper_calls = random_helper_calls(graph.node, helpers)  # they draw from the graph's RNG
        random_ops[name] = [c.op.fn for c in [*facts.calls, *helper_calls]
                            if (c.graph is graph or c in helper_calls) and c.op is not None and c.op.random]

    def first_call(name: str) -> cst.Call | None:
        return next((c for c in facts.pipeline_factory_calls if dotted_name(c.func) == name), None)

    callers = _CallerLocals(module, facts.pipeline_factory_calls)

    for name in graphs:
        if name not in synthesized:
            add(name, "pipeline", name, first_call(name), harness_args=True)
    for helper, variable in facts.pipeline_helpers.items():
        graph_names = facts.graphs_of(variable)
        if len(graph_names) == 1 and "." not in helper:  # methods (``self.make``) need an object
            add(helper, "helper", graph_names.pop(), first_call(helper), harness_args=False)
    for graph in synthesized.values():
        if graph.module_level:
            add(graph.variable, "variable", graph.function.name.value, None, harness_args=False)
        elif graph.collapsed:  # a Pipeline subclass, called as its call sites call it
            name = graph.function.name.value
            add(name, "subclass", name, first_call(name), harness_args=False)
    return sites, random_ops


def _given_for(module: cst.Module, function: cst.FunctionDef | None, given: list[cst.Arg], code: str) -> str:
    """``code``, or where it names a parameter of ``function``, what the call gives it."""
    if function is None or not code.isidentifier():
        return code
    params = [*function.params.posonly_params, *function.params.params]
    names = [p.name.value for p in params]
    if code not in names:
        return code
    keyword = next((a.value for a in given if a.keyword is not None and a.keyword.value == code), None)
    positional = [a.value for a in given if a.keyword is None and not a.star]
    index = names.index(code)
    value = keyword if keyword is not None else positional[index] if index < len(positional) else params[index].default
    return code if value is None else _code(module, value)


class _CallerLocals:
    """The harness evaluates a call's arguments in the module: a name the calling function
    binds once (``source = Reader(files)``) is replaced by what it is bound to."""

    def __init__(self, module: cst.Module, calls: list[cst.Call]) -> None:
        from ..migrate.places import Places
        from ..visitors import walk

        self.module = module
        self.places = Places({id(call) for call in calls})
        walk(module, self.places)

    def argument(self, value: cst.BaseExpression, call: cst.Call) -> cst.BaseExpression:
        from ..migrate.parameter_sources import ArgumentNotFollowed, binding_in_caller

        if not isinstance(value, cst.Name):
            return value
        try:
            return binding_in_caller(value, call, self.places.scope(call), self.module)
        except ArgumentNotFollowed:
            return value


# The harness sets these itself on both sides (--batch-size, --device, the aligned seed).
_HARNESS_CONTROLLED = frozenset({"batch_size", "device_id", "seed"})


def _literal(code: str | None, default):
    import ast

    if code is None:
        return default
    try:
        value = ast.literal_eval(code)
    except (ValueError, SyntaxError):
        return default
    return default if value is None else value


def _run_side(side: str, path: Path, spec: dict, timeout: float) -> SideResult:
    with tempfile.TemporaryDirectory(prefix="dali-migrate-verify-") as folder:
        spec_path, result_path = Path(folder, "spec.json"), Path(folder, "result.pkl")
        spec_path.write_text(json.dumps({**spec, "side": side, "path": str(path.resolve())}), "utf-8")
        command = [sys.executable, "-m", "dali_migrate.verify.worker", str(spec_path), str(result_path)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except subprocess.TimeoutExpired:
            return SideResult(False, kind="timeout", error=f"{side} ran past {timeout:.0f} s")
        if not result_path.exists():
            tail = (completed.stderr or completed.stdout)[-2000:]
            return SideResult(False, kind="crash", error=f"{side} exited with {completed.returncode}: {tail}")
        with open(result_path, "rb") as handle:
            raw = pickle.load(handle)
    if not raw["ok"]:
        return SideResult(False, kind=raw["kind"], error=f"{raw['stage']}: {raw['error']}")
    return SideResult(True, raw["seconds"], raw["iterations"], batch_size=raw["batch_size"])


@contextmanager
def _beside(original: Path, source: bytes, label: str):
    """``source`` in a hidden file next to ``original``, so that paths relative to ``__file__``
    or to the notebook's folder, and sibling imports, resolve as they do for the original."""
    handle, name = tempfile.mkstemp(prefix=f".{original.stem}.", suffix=f".{label}.dali-migrate-verify.py",
                                    dir=original.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(source)
        yield Path(name)
    finally:
        os.unlink(name)


def _python_source(path: Path) -> bytes:
    """A Python file's bytes, or a notebook's code cells as a script."""
    from ..notebook import NotebookError, notebook_script

    from ..engine import SourceError, parse
    from ..files import read_regular
    from ..prefilter import WIDE_BOMS

    data = read_regular(path)
    if data.startswith(WIDE_BOMS):
        raise RuntimeError(f"cannot read {path}: UTF-16/32 encoded (byte order mark): save it as UTF-8")
    if path.suffix == ".ipynb":
        try:
            data = notebook_script(data).encode("utf-8")
        except NotebookError as error:
            raise RuntimeError(f"cannot read {path}: {error}") from None
    try:  # the screening check and migrate do: no crash of the parser on hostile input
        parse(data)
    except SourceError as error:
        raise RuntimeError(f"cannot read {path}: {error}") from None
    return data


def _migrated_source(original_source: bytes, original: Path, config: Config = Config()) -> bytes:
    result = migrate_source(original_source, str(original), config)
    if result.error:
        raise RuntimeError(f"cannot migrate {original}: {result.error}")
    return result.new_source if result.new_source is not None else original_source


def verify_files(original: Path, migrated: Path | None, options: VerifyOptions) -> VerifyReport:
    try:
        source = _python_source(original)
        sites, random_ops = pipeline_call_sites(source)
    except (OSError, cst.ParserSyntaxError, RuntimeError) as error:
        return VerifyReport(error=f"cannot read {original}: {error}")
    names = [n for n in sites if not options.pipelines or n in options.pipelines]
    if not names:
        return VerifyReport(error=f"no pipeline found in {original}: a `@pipeline_def` function, a "
                                  "function that returns a pipeline, or a module-level `with pipe:` graph")
    try:
        migrated_source = _python_source(migrated) if migrated else _migrated_source(source, original)
    except (OSError, RuntimeError) as error:
        return VerifyReport(error=str(error))
    try:  # a notebook's pipelines may be reshaped there: their code is the generator form's
        generator_form = _migrated_source(source, original, Config(one_shot=False)) if (
            original.suffix == ".ipynb") else None
        notebook_form = _migrated_source(source, original) if generator_form and migrated else migrated_source
    except RuntimeError as error:
        return VerifyReport(error=str(error))
    reshaped = _reshaped(names, migrated_source, notebook_form, generator_form) if generator_form else []
    with ExitStack() as stack:
        left = original if original.suffix != ".ipynb" else stack.enter_context(_beside(original, source, "original"))
        right = migrated if migrated and migrated.suffix != ".ipynb" else stack.enter_context(
            _beside(original, migrated_source, "migrated"))
        sides = {name: (right, "") for name in names}
        if generator_form is not None:
            as_generator = stack.enter_context(_beside(original, generator_form, "generator"))
            sides.update((name, (as_generator, RESHAPED_NOTE)) for name in reshaped)
        # Jupyter runs a notebook from its own folder; scripts run from where verify was started
        cwd = original.parent.resolve() if original.suffix == ".ipynb" else Path.cwd()
        return _verify_all(names, sites, random_ops, left, sides, options, cwd)


RESHAPED_NOTE = ("reshaped for the notebook (inlined where it runs once, or its reader made where "
                 "it is called): compared in the generator form it came from; the notebook's own "
                 "output is what shows the reshaped code")


def _reshaped(names: list[str], migrated: bytes, notebook_form: bytes, generator_form: bytes) -> list[str]:
    """The pipelines whose generator the notebook form inlined or changed, and that the
    migrated file has as that form wrote them (not as a person edited them since)."""
    import ast

    from ..positions import python_ast

    def definitions(source: bytes) -> dict[str, str]:
        return {s.name: ast.dump(s) for s in python_ast(source).body if isinstance(s, ast.FunctionDef)}

    as_generators, as_written, in_notebook = (
        definitions(generator_form), definitions(notebook_form), definitions(migrated))
    return [name for name in names if name in as_generators
            and as_written.get(name) != as_generators[name] and in_notebook.get(name) == as_written.get(name)]


def _top_level_names(source: bytes) -> set[str]:
    """What a module binds at its top level (a migrated pipeline's function or variable)."""
    import ast

    from ..positions import python_ast

    names: set[str] = set()
    for statement in python_ast(source).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _verify_all(names, sites, random_ops, original, migrated: dict, options, cwd: Path) -> VerifyReport:
    """``migrated``: per pipeline, the file its migrated side runs from, and why if it is not
    the migrated file itself."""
    report = VerifyReport()
    for name in names:
        path, note = migrated[name]
        pipeline = _verify_pipeline(name, sites[name], random_ops[name], original, path, options, cwd)
        pipeline.note = note
        report.pipelines.append(pipeline)
    return report


def _verify_pipeline(name, site: CallSite, random_ops, original, migrated, options, cwd: Path) -> PipelineReport:
    # a name (``batch_size=batch_size``) is evaluated in the module: a source that makes whole
    # batches makes them of that size, whatever the harness would ask for
    batch_size = options.batch_size or options.args.get("batch_size") or _literal(site.batch_size, None)
    seed = options.args.get("seed", _literal(site.seed, 0))
    # the harness passes these itself: the call site's own expressions for them are not evaluated
    passed = {"seed": seed, "batch_size": batch_size}
    overrides = {**options.args, **{k: v for k, v in passed.items() if k in site.kwargs and v is not None}}
    spec = {
        "pipeline": name, "kind": site.kind, "call_args": site.args, "call_kwargs": site.kwargs, "overrides": overrides,
        "batch_size": batch_size, "batch_size_code": site.batch_size, "seed": seed, "iterations": options.iterations,
        "device_id": 0 if options.device == "gpu" else None, "align_rng": options.align_rng,
        "random_ops": sorted({op.fn for op in load_op_table().ops if op.random and op.fn}),
        "readers": sorted({op.fn for op in load_op_table().ops if op.is_reader and op.fn}),
        "legacy_ops": sorted({(op.ops_class, op.random, op.is_reader) for op in load_op_table().ops
                              if op.random or op.is_reader}),
        "cwd": str(cwd),
    }
    left = _run_side("original", original, spec, options.timeout)
    batch_size = batch_size or left.batch_size or 1
    right = _run_side("migrated", migrated, {**spec, "batch_size": batch_size}, options.timeout)
    # The harness seeds the pipelines it builds; one built by the module itself (a helper or a
    # module-level graph) without a seed draws different numbers on every run, on both sides.
    seedable = site.kind == "pipeline" or (site.seed not in (None, "None") and _literal(site.seed, None) is not None)
    aligned = not random_ops or (options.align_rng and seedable)
    comparison = None
    if left.ok and right.ok:
        if aligned:
            comparison = compare_runs(left.iterations, right.iterations, options.rtol, options.atol)
        else:
            comparison = compare_statistically(left.iterations, right.iterations)
    return PipelineReport(name, batch_size, left, right, comparison, aligned, random_ops)
