"""The migration codemod: one transformer that applies every planned rewrite in one pass."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Transformer, walk

from ..analysis import DaliCall, ModuleFacts, Site
from ..imports import dotted_name
from ..output_helpers import References
from ..rules import Finding
from .callsites import CallSiteRewrites, numpy_alias, plan_call_sites
from .checkpointing import CheckpointNotMigratable, CheckpointRewrites, StatementOf, checkpoint_sites, plan_checkpoints
from .conditionals import per_sample_statements, per_sample_test
from .external_source import block_unrestarted_sources, holder_name, names_needed, needs_holder
from .generator import GeneratorNames, migrate_function
from . import torch_loader
from .imports import add_local_import, fix_imports, has_ndd_import, insert_after_imports
from .iterator_classes import with_loader_base
from .iterators import IteratorNotMigratable, TorchLoaders, is_jax, iterator_name, iterator_sites, unbound_pipelines
from .names import all_names, unique_name, variable_names
from .ops import GraphOpRewriter, OpRewritePlan, dtype_arguments, has_data_inputs, literal_names
from .jax_data_iterator import with_loader_function
from .manual_epochs import plan_manual_epochs
from .helpers import HelperUses, RandomHelpers, find_helpers, plan_helpers
from .places import MadeNodes, Places, node_ids
from .parameter_sources import resolve_parameter_sources
from .pipeline_settings import NotMigratable as SettingNotMigratable, SettingNames, setting_sites
from .spread_arguments import block_spread_arguments
from .plan import (
    PipelinePlan,
    block_hidden_module_reads, block_imported_graph_helpers, block_mixed_factory_calls, block_mixed_output_helpers, block_shared_variables, safety as pipeline_safety,
    find_stray_references,
    plan_decorated_pipeline,
    plan_imported_pipeline,
)
from .reader_meta import (
    META_METHODS,
    NotMigratable,
    ReaderMetaRewrites,
    factory_statements,
    meta_sites,
    plan_reader_meta,
    unlike_rewrites,
)
from .todo import TODO_PREFIX, Todo, TodoInserter

__all__ = ["MigrationResult", "migrate_module", "TODO_PREFIX"]


def _drives_only(loop: cst.For, call_sites) -> bool:
    """A loop over ``range(...)`` of names and numbers, or over migrated pipelines (``for pipe in
    pipes.values(): pipe.build()``), whose body is only removed calls."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
    counted = (isinstance(loop.iter, cst.Call) and dotted_name(loop.iter.func) == "range"
               and all(isinstance(a.value, (cst.Name, cst.Integer, cst.Attribute)) for a in loop.iter.args)
               and isinstance(loop.target, cst.Name))
    counted = counted or id(loop) in call_sites.pipeline_loops
    return (counted and loop.orelse is None and bool(body)
            and all(isinstance(s, cst.SimpleStatementLine) and call_sites.is_removed_statement(s) for s in body))


@dataclass
class MigrationResult:
    module: cst.Module
    fixed: list[Finding] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    migrated_pipelines: list[str] = field(default_factory=list)
    blockers: dict[str, list] = field(default_factory=dict)  # pipeline name -> its Blockers
    exported: list[str] = field(default_factory=list)  # top-level names that now mean a generator
    imports_blocked: dict[str, str] = field(default_factory=dict)  # imported pipeline -> why its uses stay
    safety: dict[str, tuple[str, str]] = field(default_factory=dict)  # migrated pipeline -> (level, why)
    imports_loader: bool = False  # the module now imports DALITorchLoader from ``loader_import``
    # functions of other modules that outputs of migrated pipelines are passed to
    helper_requests: list[HelperRequest] = field(default_factory=list)
    loader_for_jax: bool = False  # it makes a DALIJaxLoader
    loader_modes: frozenset[str] = frozenset()  # what its DALITorchLoaders need (loader_module.MODES)


@dataclass(frozen=True)
class HelperRequest:
    """Outputs of migrated pipelines passed to a function called by a plain name that this
    module does not define (``from display import show_images``): the runner migrates that
    function with this module when every call in the run passes it ndd Batches."""

    local: str  # the name this module calls it by
    arguments: tuple[tuple[str, ...], ...]  # per call: the positions ("0") or keywords given outputs
    calls: int  # every call of ``local`` in this module, with outputs or not


class Migrator(Transformer):
    def __init__(self, facts: ModuleFacts, plans: list[PipelinePlan], ndd_alias: str,
                 call_sites: CallSiteRewrites, todos: TodoInserter, helpers: dict | None = None,
                 jax_loader_class: str = torch_loader.JAX_CLASS_NAME, taken: set[str] | None = None) -> None:
        super().__init__()
        self.facts = facts
        self.jax_loader_class = jax_loader_class  # what ``@data_iterator`` functions now make
        self.taken = taken or set()
        self.ndd_alias = ndd_alias
        self.call_sites = call_sites
        self.todos = todos
        self.functions: dict[int, tuple[PipelinePlan, GeneratorNames]] = {}
        self.per_sample_ifs: dict[int, tuple] = {}  # id(if statement) -> (PerSampleIf, function name)
        self.per_sample_tests: set[int] = set()
        self.migrated_ifs = MadeNodes()  # new if (or dropped statement) -> its replacement
        self.comment_carriers = MadeNodes()  # removed statements whose comments stay
        self.current_reads: dict[int, str] = {}  # ``Pipeline.current().max_batch_size`` -> ``batch_size``
        self.dropped_statements: set[int] = set()  # graph statements that named the current pipeline
        self.hoisted: set[int] = set()  # graph lines that run where the ``with`` was (plan.hoisted)
        self.hoisted_lines: dict[int, list[cst.BaseStatement]] = {}  # id(graph) -> those lines, rewritten
        self.op_plan = OpRewritePlan(ndd_alias, "batch_size", None, numpy_alias=call_sites.numpy_alias)
        self.random_helpers = RandomHelpers(helpers or {})
        self.seeded_calls: dict[int, str] = {}  # id(call of a seeded helper) -> the RNG made for it
        for plan in plans:
            self._prepare(plan)
        for helper in (helpers or {}).values():
            self.op_plan.calls.update((id(call.node), call) for call in helper.calls)
            for call in helper.calls:
                self._use_ndd_dtypes(call)
            self.random_helpers.give_parameters(helper, self.op_plan)
        self.function_stack: list[int] = []
        self.local_renames: dict[str, str] = {}  # in the graph being rewritten (plan.renamed)
        self.not_variables: set[int] = set()  # keyword and attribute names, never renamed
        self.op_rewriter = GraphOpRewriter(self.op_plan, facts.optable)

    def _prepare(self, plan: PipelinePlan) -> None:
        taken = variable_names(plan.function)
        holders = {id(s.call.node): unique_name(holder_name(s), taken) for s in plan.sources if needs_holder(s)}
        for source in (s for s in plan.sources if s.restarts_an_instance):
            source.instance = unique_name(f"{holders[id(source.call.node)]}_source", taken)
        names = GeneratorNames(self.ndd_alias, unique_name("reader", taken), unique_name("rng", taken), {},
                               unique_name("iteration", taken), holders,
                               [unique_name("reader", taken) for _ in plan.readers[1:]],
                               unique_name("context", taken), unique_name("outputs", taken),
                               unique_name("epoch_idx", taken),
                               self.random_helpers.seeded_call_rngs(plan.function, taken))
        inside = node_ids(plan.function)
        for call in plan.random_calls:  # a seeded helper's operator takes the RNG of each of its calls
            if id(call.node) in inside and any(a.keyword and a.keyword.value == "seed" for a in call.node.args):
                names.op_rngs[id(call.node)] = unique_name(f"{call.op.fn.split('.')[-1]}_rng", taken)
        self.seeded_calls.update({call: rng for call, (rng, _) in names.helper_rngs.items()})
        self.functions[id(plan.function)] = (plan, names)
        self.current_reads |= plan.current_reads
        self.dropped_statements |= plan.dropped_statements | set(plan.hoisted)
        self.hoisted |= set(plan.hoisted)
        replaced = {id(s.call.node) for s in plan.sources}  # rewritten whole, with their statement
        for call in plan.calls:
            if id(call.node) in replaced:
                continue
            self.op_plan.calls[id(call.node)] = call
            self._use_ndd_dtypes(call)
            if id(call.node) in names.op_rngs:
                self.op_plan.call_rngs[id(call.node)] = names.op_rngs[id(call.node)]
            elif call.op is not None and call.op.random:
                self.op_plan.call_rngs[id(call.node)] = names.rng
        self.op_plan.mixed_strings |= plan.mixed_strings
        self.op_plan.constants.update(plan.constants)
        self.op_plan.fn_constants.update(plan.fn_constants)
        per_sample = set().union(*(node_ids(branch.statement) - branch.batch_condition
                                   for branch in plan.per_sample_ifs))
        self.op_plan.per_sample |= per_sample
        literals = literal_names(plan.function, self.facts.module_values)
        self.op_plan.constant_inputs |= {id(c.node) for c in plan.calls if c.op is not None
                                         and has_data_inputs(c.node) and not has_data_inputs(c.node, literals)}
        self.op_plan.subscripts |= {id(s.node) for s in self.facts.datanode_subscripts
                                    if id(s.node) in inside and id(s.node) not in per_sample}  # Tensors there
        self.op_plan.shape_methods |= {id(s.node) for s in self.facts.datanode_shapes
                                       if id(s.node) in inside and id(s.node) not in per_sample}
        for branch in plan.per_sample_ifs:
            condition = unique_name("condition", taken) if branch.batch_condition else None
            self.per_sample_ifs[id(branch.statement)] = (branch, unique_name("per_sample_if", taken), condition)
            self.per_sample_tests |= branch.tests
            self.op_plan.needs_numpy = True

    def _use_ndd_dtypes(self, call: DaliCall) -> None:
        if call.op is not None and not call.op.is_reader and call.op.fn not in ("python_function", "shapes"):
            self.op_plan.dtypes.update(dtype_arguments(call.node, self.facts.imports, self.facts.optable))

    # The TODO inserter tracks the enclosing statement of every node.
    def on_visit(self, node: cst.CSTNode) -> bool:
        self.todos.enter(node)
        return super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        return self.todos.leave(original_node, result)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self.op_plan.calls or id(original_node) in self.op_plan.shape_methods:
            return self.op_rewriter.leave_Call(original_node, updated_node)
        if self.random_helpers.is_call(original_node):
            return self.random_helpers.given_caller_rng(updated_node, self._caller_parameters(),
                                                        self.seeded_calls.get(id(original_node)))
        return self.call_sites.rewrite_call(original_node, updated_node)

    def _caller_parameters(self) -> tuple[str, str] | None:
        """The batch size and RNG names of the innermost migrated graph or random helper."""
        for function in reversed(self.function_stack):
            if function in self.functions:
                return "batch_size", self.functions[function][1].rng
            parameters = self.random_helpers.parameters.get(function)
            if parameters is not None:
                return parameters
        return None

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return self.call_sites.without_needless_parentheses(updated_node)

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        return self.op_rewriter.leave_SimpleString(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute | cst.Name, updated_node) -> cst.BaseExpression:
        if id(original_node) in self.current_reads:
            return cst.Name(self.current_reads[id(original_node)])
        if id(original_node) in self.call_sites.reader_meta.lookups:  # ``pipe.max_batch_size``
            return self.call_sites.reader_meta.lookups[id(original_node)]
        if isinstance(original_node, cst.Attribute) and id(original_node) in self.call_sites.output_uses:
            return self.call_sites.rewrite_attribute(original_node, updated_node)
        return self.op_rewriter.leave_Attribute(original_node, updated_node)  # data type constants

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        new = self.local_renames.get(original_node.value) if self.local_renames else None
        if new is not None and id(original_node) not in self.not_variables:  # ``seed`` -> ``seed_``
            return updated_node.with_changes(value=new)
        return self.leave_Attribute(original_node, updated_node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self.local_renames:
            self.not_variables.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.local_renames:
            self.not_variables.add(id(node.attr))

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        if id(original_node) in self.op_plan.subscripts:
            return self.op_rewriter.leave_Subscript(original_node, updated_node)
        return self.call_sites.rewrite_subscript(original_node, updated_node)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        value = self.call_sites.ungrouped(updated_node.value)
        return updated_node if value is updated_node.value else updated_node.with_changes(value=value)

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        test = self.call_sites.ungrouped(updated_node.test)
        return updated_node if test is updated_node.test else updated_node.with_changes(test=test)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        test = self.call_sites.ungrouped(updated_node.test)
        if test is not updated_node.test:
            updated_node = updated_node.with_changes(test=test)
        if id(original_node.test) in self.per_sample_tests:
            updated_node = updated_node.with_changes(
                test=per_sample_test(updated_node.test, self.call_sites.numpy_alias))
        entry = self.per_sample_ifs.get(id(original_node))
        if entry is not None:  # replaced in migrate_function, whose statement indices must hold
            branch, function_name, condition_name = entry
            condition = None
            if condition_name is not None:  # computed for the batch, read per sample
                condition = (condition_name, updated_node.test)
                updated_node = updated_node.with_changes(
                    test=per_sample_test(cst.Name(condition_name), self.call_sites.numpy_alias))
            self.migrated_ifs.add(updated_node, per_sample_statements(branch, updated_node, function_name,
                                                                      self.ndd_alias, condition))
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.function_stack.append(id(node))
        entry = self.functions.get(id(node))
        if entry is not None and entry[0].renamed:
            self.local_renames = entry[0].renamed  # a graph's ``seed`` is not the generator's parameter
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.function_stack.pop()
        entry = self.functions.get(id(original_node))
        if entry is None:
            updated_node = self.call_sites.with_prelude(original_node, updated_node)
            return self.random_helpers.with_parameters(original_node, updated_node)
        plan, names = entry
        self.local_renames = {}
        function = migrate_function(plan, updated_node, names, self.facts.optable, self.migrated_ifs.values_by_id())
        if plan.jax_iterator is not None:  # callers keep calling what makes the loader
            return with_loader_function(plan, function, self.jax_loader_class, self.taken)
        hoisted = self.hoisted_lines.get(id(original_node))
        if not hoisted:
            return function
        # what set state outside the graph runs where the ``with`` was, as it did in pipeline mode
        above = list(function.leading_lines)
        while above and above[0].comment is None:  # the blank lines were for the ``def``
            above.pop(0)
        first = hoisted[0].with_changes(leading_lines=[*above, *hoisted[0].leading_lines])
        spaced = function.with_changes(leading_lines=[cst.EmptyLine(indent=False)])  # as black spaces a ``def``
        return cst.FlattenSentinel([first, *hoisted[1:], spaced])

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if id(original_node) in self.hoisted:  # it goes before the generator's ``def``
            graph = next(f for f in reversed(self.function_stack) if f in self.functions)
            self.hoisted_lines.setdefault(graph, []).append(updated_node)
        if id(original_node) in self.dropped_statements:  # migrate_function drops it, keeping indices
            self.migrated_ifs.add(updated_node, [])
            return updated_node
        if self.call_sites.is_removed_statement(original_node):
            if not updated_node.leading_lines:
                return cst.RemoveFromParent()
            carrier = updated_node.with_changes(body=[cst.Pass()])  # its comments go to what follows
            self.comment_carriers.add(carrier)
            return carrier
        statements = self.call_sites.statements_for(original_node, updated_node)
        return updated_node if statements is None else cst.FlattenSentinel(statements)

    def leave_For(self, original_node: cst.For, updated_node: cst.For):
        """``for _ in range(depth): pipe.schedule_run()`` only drove the pipeline, ``for p in
        (train_pipe, val_pipe): p.build()`` only built migrated ones: it goes with what it
        called (its comments stay, for what follows)."""
        still_built = self.call_sites.build_loops.get(id(original_node))
        if still_built:  # a pipeline that stays is still built
            kept = [updated.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    for element, updated in zip(original_node.iter.elements, updated_node.iter.elements)
                    if id(element.value) in still_built]
            if isinstance(updated_node.iter, cst.Tuple) and len(kept) == 1:
                kept = [kept[0].with_changes(comma=cst.Comma())]
            return updated_node.with_changes(iter=updated_node.iter.with_changes(elements=kept))
        if still_built is None and not _drives_only(original_node, self.call_sites):
            return updated_node
        carrier = cst.SimpleStatementLine([cst.Pass()], leading_lines=updated_node.leading_lines)
        self.comment_carriers.add(carrier)
        return carrier

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        updated_node = self._comments_passed_on(updated_node)
        if not updated_node.body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._comments_passed_on(updated_node)

    def _comments_passed_on(self, block):
        """A removed statement (``pipe.build()``) leaves the comments above it (a ``# %%`` cell
        marker, a note) to the statement after it, or to the end of the block."""
        if not any(statement in self.comment_carriers for statement in block.body):
            return block
        body, pending = [], []
        for statement in block.body:
            if statement in self.comment_carriers:
                pending += statement.leading_lines
                continue
            if pending:
                statement = statement.with_changes(leading_lines=_joined_lines(pending, statement.leading_lines))
                pending = []
            body.append(statement)
        if not any(line.comment is not None for line in pending):
            pending = []  # blank lines at the end of a block
        if pending and not body:
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=pending)]
        elif pending:
            block = block.with_changes(footer=[*pending, *block.footer])
        return block.with_changes(body=body)


def _joined_lines(removed: list[cst.EmptyLine], kept: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The lines above a removed statement, then those above the statement after it: blank
    lines that only spaced the removed statement keep their count, without adding to the
    kept statement's own (``def f(): ...``, two blank lines, ``pipe.build()``, the next
    statement: still two blank lines)."""
    if any(line.comment is not None for line in removed):
        return [*removed, *kept]
    leading_blanks = next((i for i, line in enumerate(kept) if line.comment is not None), len(kept))
    return [*removed[leading_blanks:], *kept]


def _places_of_uses(module: cst.Module, facts: ModuleFacts, plans: list[PipelinePlan]) -> Places:
    """One walk for where pipelines are created and where their metadata, iterators and
    checkpoints are used: those uses are tied to the binding in force in their function."""
    pipe_vars = [v for p in plans for v in p.pipe_vars]
    by_hand = {v for p in plans for v in p.epochs_by_hand}
    uses = [*meta_sites(facts, pipe_vars), *iterator_sites(facts, pipe_vars), *setting_sites(facts, pipe_vars),
            *(site for var in pipe_vars for site in checkpoint_sites(facts, var)),
            *(site for site in facts.pipeline_method_calls if site.origin in by_hand)]
    places = Places({id(s.node) for s in uses} | {id(call) for call in facts.pipeline_factory_calls})
    if uses:  # otherwise nothing asks where anything is
        walk(module, places)
    return places


def _plan_reader_meta(module: cst.Module, facts: ModuleFacts, plans: list[PipelinePlan], ndd_alias: str,
                      loader_classes: tuple[str, str], places: Places, factories: dict[str, list[cst.Call]],
                      keep: dict[str, str]) -> dict[int, ReaderMetaRewrites]:
    """Per plan (by id), its metadata lookups and framework iterators (``loader_classes``: the
    PyTorch and JAX loaders' names); a plan they cannot be done for is blocked. ``keep``: names
    other files use, which stay as they are."""
    by_plan: dict[int, ReaderMetaRewrites] = {}
    _block_unbound_iterators(facts, plans)
    pipe_vars = [v for p in plans for v in p.pipe_vars]
    settings = setting_sites(facts, pipe_vars)
    if not meta_sites(facts, pipe_vars) and not iterator_sites(facts, pipe_vars) and not settings:
        return by_plan
    setting_names = SettingNames(all_names(module) if settings else set())
    for plan in [p for p in plans if p.migratable]:
        try:
            loaders = TorchLoaders(plan, facts, *loader_classes, module, keep)
            planned = plan_reader_meta(plan, facts, factories, ndd_alias, places, loaders, setting_names)
        except IteratorNotMigratable as reason:
            plan.block("DM010", reason.site.node, str(reason))
            continue
        except SettingNotMigratable as reason:
            plan.block("DM003", reason.site.node, str(reason))
            continue
        except NotMigratable as reason:
            for site in meta_sites(facts, plan.pipe_vars):
                plan.block("DM017", site.node, f"`{site.name}.{site.detail}()`: {reason}")
            for site in iterator_sites(facts, plan.pipe_vars):
                plan.block("DM010", site.node, f"{iterator_name(site)}: {reason}")
            continue
        by_plan[id(plan)] = planned
    for plan, site, reason in unlike_rewrites([(p, by_plan[id(p)]) for p in plans if id(p) in by_plan]):
        if isinstance(site, cst.Attribute):  # ``pipe.max_batch_size``
            plan.block("DM003", site, reason)
            continue
        is_lookup = isinstance(site.func, cst.Attribute) and site.func.attr.value in META_METHODS
        plan.block("DM017" if is_lookup else "DM010", site, reason)
    return by_plan


def _block_unbound_iterators(facts: ModuleFacts, plans: list[PipelinePlan]) -> None:
    for site in unbound_pipelines(facts, {p.graph.name for p in plans} | set(facts.pipeline_helpers)):
        for plan in plans:
            if plan.graph.name in all_names(site.node):
                plan.block("DM010", site.node, "the iterator's pipeline must be a variable: `pipe = "
                                               f"{plan.graph.name}(...)`, then pass `pipe`")


def _plan_checkpoints(module: cst.Module, facts: ModuleFacts, plans: list[PipelinePlan], ndd_alias: str,
                      places: Places, factories: dict[str, list[cst.Call]]) -> dict[int, CheckpointRewrites]:
    """Per plan (by id), the rewrites of its checkpoints; a plan they cannot be done for is blocked."""
    by_plan: dict[int, CheckpointRewrites] = {}
    checkpointed = [p for p in plans if p.migratable and p.checkpointing]
    if not checkpointed:
        return by_plan
    sites = [s for p in checkpointed for v in p.pipe_vars for s in checkpoint_sites(facts, v)]
    lines = StatementOf({id(s.node) for s in sites})
    walk(module, lines)
    for plan in checkpointed:
        try:
            planned = plan_checkpoints(plan, facts, factories, places, lambda node: lines.found.get(id(node)),
                                       ndd_alias)
        except CheckpointNotMigratable as reason:
            plan.block("DM013", reason.node, f"checkpointing: {reason}")
            continue
        except NotMigratable as reason:
            plan.block("DM013", plan.function, f"checkpointing: {reason}")
            continue
        by_plan[id(plan)] = planned
    return by_plan


def _settle(plans: list[PipelinePlan], facts: ModuleFacts, uses: HelperUses | None,
            reader_meta: dict[int, ReaderMetaRewrites]) -> dict:
    """Blocks until no blocking causes another: shared variables, shared graph helpers, and
    iterator subclasses shared with pipelines that stay."""
    own = [p for p in plans if not p.imported]
    while True:
        blocked = sum(not p.migratable for p in plans)
        block_shared_variables(plans, facts)
        _block_iterator_classes_kept_elsewhere(plans, facts, reader_meta)
        block_mixed_output_helpers(plans, facts)
        helpers = plan_helpers(own, uses)
        if sum(not p.migratable for p in plans) == blocked:
            return helpers


def _block_iterator_classes_kept_elsewhere(plans: list[PipelinePlan], facts: ModuleFacts,
                                           reader_meta: dict[int, ReaderMetaRewrites]) -> None:
    """A subclass of the iterator derives from the loader once migrated: every call of it must
    be over a migrated pipeline, or none."""
    migratable = [p for p in plans if p.migratable and id(p) in reader_meta]
    planned = {id(s.node) for p in migratable for s in reader_meta[id(p)].loaders}
    for name in facts.iterator_classes:
        calls = [s.node for s in facts.iterator_uses if s.detail == name]
        left = [call for call in calls if id(call) not in planned]
        if not left or len(left) == len(calls):
            continue
        line = cst.Module([]).code_for_node(left[0]).split("\n")[0]
        for plan in migratable:
            for site in (s for s in reader_meta[id(plan)].loaders if s.detail == name):
                plan.block("DM010", site.node, f"`{name}` is also used over a pipeline that stays in pipeline "
                                               f"mode (`{line}`): it must derive from one iterator class")


def _restore_todos(checkpoints: CheckpointRewrites) -> list[Todo]:
    return [Todo("DM013", "restores from an `ndd.checkpoint.Checkpoint` now: checkpoints that pipeline mode "
                          "saved do not load; start from a new one", call) for call in checkpoints.foreign_restores()]


def _helper_requests(module: cst.Module, facts: ModuleFacts, migrated: list[PipelinePlan]) -> list[HelperRequest]:
    pipe_vars = {var for plan in migrated for var in plan.pipe_vars}
    by_call: dict[str, dict[int, list[str]]] = {}
    for call, arg, site in facts.output_arguments:
        local = call.func.value
        if site.origin not in pipe_vars or local in facts.module_functions:
            continue
        position = next(index for index, given in enumerate(call.args) if given is arg)
        where = arg.keyword.value if arg.keyword is not None else str(position)
        by_call.setdefault(local, {}).setdefault(id(call), []).append(where)
    if not by_call:
        return []
    references = References(set(by_call))
    walk(module, references)
    return [HelperRequest(local, tuple(tuple(sorted(w)) for w in calls.values()), len(references.calls.get(local, [])))
            for local, calls in sorted(by_call.items())]


def _escape_todos(facts: ModuleFacts, migrated: list[PipelinePlan],
                  handled_helpers: frozenset[str] = frozenset()) -> list[Todo]:
    """Outputs of migrated pipelines that leave for code the migration does not see
    (``handled_helpers``: functions of other modules migrated to take them)."""
    pipe_vars = {var for plan in migrated for var in plan.pipe_vars}
    handled = {id(site) for call, _, site in facts.output_arguments if call.func.value in handled_helpers}
    def what(site: Site) -> str:
        return ("holds ndd Batches now, not TensorLists"
                if site.name in facts.output_tuples_seen or id(site.node) in facts.tuple_escapes
                else "is an ndd Batch now, not a TensorList")

    return [Todo("DM007", f"`{site.name}` {site.detail}: it {what(site)}; check that the code it goes "
                          "to uses `.tensors[i]`, `ndd.as_tensor()`, `.torch()`", site.node)
            for site in facts.escaping_outputs if site.origin in pipe_vars and id(site) not in handled]


def _keep_in_pipeline_mode(plans: list[PipelinePlan], facts: ModuleFacts, keep: dict[str, str]) -> None:
    """Pipelines named in ``keep`` (directly or through a helper that returns them) stay."""
    for plan in plans:
        reasons = [why for name, why in keep.items()
                   if name == plan.graph.name or plan.graph.name in facts.graphs_of(facts.pipeline_helpers.get(name, ""))
                   or plan.graph.name in facts.output_helper_graphs(name)]
        if reasons:
            plan.block("DM001", plan.function, reasons[0])


def _exported(module: cst.Module, facts: ModuleFacts, migrated: list[PipelinePlan]) -> list[str]:
    """Top-level functions and helpers whose callers now get a generator, not a pipeline, and
    functions now rewritten to take ndd Batches: callers in other files must not pass them
    TensorLists."""
    top_level = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    names = {p.graph.name for p in migrated} & top_level
    migrated_names = {p.graph.name for p in migrated}
    names |= {helper for helper, var in facts.pipeline_helpers.items()
              if helper in top_level and facts.graphs_of(var) and facts.graphs_of(var) <= migrated_names}
    names |= {name for name in facts.output_helpers
              if name in top_level and facts.output_helper_graphs(name) & migrated_names}
    return sorted(names)


def migrate_module(module: cst.Module, facts: ModuleFacts, findings: list[Finding],
                   graph_reasons: dict[int, list] | None = None, keep: dict[str, str] | None = None,
                   imported: dict[str, PipelinePlan] | None = None,
                   loader_import: str | None = None, handled_helpers: frozenset[str] = frozenset(),
                   capture: bool = False, imported_graph_helpers: dict[str, str] | None = None) -> MigrationResult:
    """``graph_reasons``: per ``with`` statement, the Blockers found when its graph was tried
    in decorator form; they become its TODOs. ``keep``: top-level names that other modules use
    as pipelines, with the reason, to leave in pipeline mode. ``imported``: local name -> the
    plan of a pipeline another module defines and migrates; its uses here are migrated.
    ``loader_import``: the module that framework iterators' stand-in is imported from (None:
    the class is written into this module). ``handled_helpers``: functions this module imports
    that are migrated to take ndd Batches (the outputs it passes them need no TODO).
    ``capture``: generators with one reader and no checkpoint read their epochs with
    ``next_epoch(capture=True)``. ``imported_graph_helpers``: names this module calls that are
    functions of other project files running operators -> the file (imported_helpers.py)."""
    strays = find_stray_references(module, facts)
    uses = find_helpers(facts, module)
    plans = [plan_decorated_pipeline(g, facts, strays, uses.helpers if uses else {})
             for g in facts.graphs if g.kind == "decorator"]
    plans += [plan_imported_pipeline(plan, local, facts, strays) for local, plan in (imported or {}).items()]
    block_imported_graph_helpers(plans, imported_graph_helpers or {})
    resolve_parameter_sources(module, facts, plans)
    _keep_in_pipeline_mode(plans, facts, keep or {})
    block_hidden_module_reads(plans, module)
    block_mixed_factory_calls(plans, facts)
    block_spread_arguments(plans, facts, module)
    block_shared_variables(plans, facts)
    ndd_alias = has_ndd_import(module) or "ndd"
    loader_class = unique_name(torch_loader.CLASS_NAME, all_names(module))
    jax_loader_class = unique_name(torch_loader.JAX_CLASS_NAME, all_names(module))
    places, factories = _places_of_uses(module, facts, plans), factory_statements(facts)
    reader_meta_by_plan = _plan_reader_meta(module, facts, [p for p in plans if p.migratable], ndd_alias,
                                            (loader_class, jax_loader_class), places, factories, keep or {})
    manual_epochs = plan_manual_epochs(module, facts, plans, places, factories)
    block_unrestarted_sources(plans)
    checkpoints_by_plan = _plan_checkpoints(module, facts, plans, ndd_alias, places, factories)
    helpers = _settle(plans, facts, uses, reader_meta_by_plan)
    migratable = [p for p in plans if p.migratable]
    # what was planned for pipelines blocked afterwards is left out
    reader_meta = ReaderMetaRewrites.merged([reader_meta_by_plan[id(p)] for p in migratable if id(p) in reader_meta_by_plan]
                                            + [manual_epochs.reader_meta])
    checkpoints = CheckpointRewrites.merged([checkpoints_by_plan[id(p)] for p in migratable if id(p) in checkpoints_by_plan])
    call_sites = plan_call_sites(facts, migratable, ndd_alias, module, reader_meta, checkpoints, manual_epochs)
    rebased = {site.detail for site in reader_meta.loaders if site.detail}  # iterator subclasses
    fixed_ids = set().union(*(node_ids(p.function) | p.mixed_strings for p in migratable if not p.imported),
                            *(node_ids(h.function) for h in helpers.values())) | call_sites.fixed_ids
    fixed_ids |= {id(site.node) for site in facts.iterator_subclasses if site.detail in rebased}
    fixed = [f for f in findings if id(f.node) in fixed_ids]
    todos = TodoInserter.for_unfixed(facts, plans, [f for f in findings if id(f.node) not in fixed_ids],
                                     graph_reasons or {}, [*_escape_todos(facts, migratable, handled_helpers),
                                                           *_restore_todos(checkpoints)],
                                     module)
    own = [p for p in migratable if not p.imported]
    for plan in own:  # capture runs one source's epochs; a checkpoint registers the reader itself
        plan.capture = capture and len(plan.readers) == 1 and not plan.checkpointing
    migrator = Migrator(facts, own, ndd_alias, call_sites, todos, helpers, jax_loader_class, all_names(module))
    new_module = module.visit(migrator)
    if rebased:
        new_module = with_loader_base(new_module, rebased, loader_class)
    if migratable or call_sites.fixed_ids:
        types_names = set().union(*(names_needed(p.sources) for p in own))
        need_numpy = call_sites.needs_numpy or (migrator.op_plan.needs_numpy and numpy_alias(module) is None)
        new_module = fix_imports(new_module, need_ndd=bool(own),
                                 need_numpy=need_numpy, need_types=types_names,
                                 need_itertools=any(len(p.readers) > 1 for p in own))
    jax_functions = any(p.jax_iterator is not None for p in own)  # ``@data_iterator`` ones
    for_jax = any(is_jax(site) for site in reader_meta.loaders) or jax_functions
    needs_loader = bool(reader_meta.loaders) or jax_functions
    if needs_loader and loader_import:
        names = {torch_loader.JAX_CLASS_NAME: jax_loader_class} if for_jax else {}
        if not all(is_jax(site) for site in reader_meta.loaders):
            names = {torch_loader.CLASS_NAME: loader_class, **names}
        new_module = add_local_import(new_module, torch_loader.import_statement(loader_import, names))
    elif needs_loader:
        classes = torch_loader.source(loader_class, jax_loader_class if for_jax else None)
        new_module = insert_after_imports(new_module, cst.parse_module(classes).body)
    return MigrationResult(new_module, fixed, todos.placed, [p.graph.name for p in own],
                           {p.graph.name: p.blockers for p in plans if not p.migratable and not p.imported},
                           sorted({*_exported(module, facts, own), *rebased}),  # importers must follow
                           {p.graph.name: "; ".join(dict.fromkeys(b.message for b in p.blockers))  # all of them
                            for p in plans if p.imported and not p.migratable},
                           {p.graph.name: pipeline_safety(p) for p in own},
                           bool(needs_loader and loader_import), _helper_requests(module, facts, own),
                           loader_for_jax=for_jax, loader_modes=reader_meta.loader_modes())
