"""Functions that a graph calls to build part of itself (DM015).

Real pipelines share their processing between graphs::

    def augment(images, size):
        images = fn.random_resized_crop(images, size=size)
        return fn.flip(images, horizontal=fn.random.coin_flip())

    @pipeline_def
    def train(root):
        jpegs, labels = fn.readers.file(file_root=root)
        return augment(fn.decoders.image(jpegs), 224), labels

Once ``train`` is a generator, ``augment`` gets Batches: its ``fn`` calls must become ``ndd``
calls too. That is done where every use of the helper is in a graph being migrated (or in
another such helper), and the helper holds only operators that can run outside a graph: no
readers or sources, and no subscripts (per sample inside a graph, not in a helper). Otherwise
the graphs that call it stay in pipeline mode, with a TODO: a migrated graph must never hand
Batches to ``fn``.

A helper whose operators are random (or that calls such a helper) draws from the RNG of the
graph that calls it, as in pipeline mode, where its operators are the graph's: it gets
keyword-only ``batch_size`` and ``rng`` parameters, and every call of it is given the
caller's (``augment(images, 224, batch_size=batch_size, rng=rng)``). So every use of it must be
a call. A helper whose one random operator takes its ``seed=`` from a parameter
(``def random_flip(images, p, seed)``) made a new operator with that seed at each call in
pipeline mode: each call gets an RNG of its own instead, made once with the seed it gives
(``Helper.seed_param``); any other random operator with a ``seed=`` of its own stays in the graph.

The same holds for a function the graph itself defines (``def augment(images):`` at the top of
``train``'s body, or a helper method of a legacy ``Pipeline`` subclass), where no other function
of the module has its name; it sees the graph's RNG and batch size, so its random operators draw
from them as the graph's own do (the plan counts them among the graph's calls).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..visitors import Visitor, walk

from ..analysis import DaliCall, ModuleFacts
from ..optable import OpTable
from ..rules.dm004_mixed_device import mixed_device_strings
from .names import calls_named, scope_names, unique_name, variable_names
from .ops import append_keyword, keyword_values, shapes_call_problem
from .places import node_ids


@dataclass
class Helper:
    function: cst.FunctionDef
    calls: list[DaliCall]
    subscripts: int = 0
    nested: bool = False  # defined by its graph, whose RNG and batch size it sees
    # a top-level helper whose random operators (or helpers') need the caller's batch size / RNG
    takes_batch_size: bool = False
    takes_rng: bool = False

    @property
    def random_calls(self) -> list[DaliCall]:
        return [c for c in self.calls if c.op is not None and c.op.random]

    @property
    def seeded(self) -> bool:
        """``def random_flip(images, p, seed)`` whose one random operator takes ``seed=seed``
        (or a number, ``seed=5``): each call of it in pipeline mode made an operator seeded so,
        and each call gets an RNG of its own, seeded alike (``seeded_call_rngs``)."""
        return self.seed_param is not None or isinstance(self._seed(), cst.Integer)

    @property
    def seed_param(self) -> str | None:
        """The parameter the one random operator takes its ``seed=`` from, if any."""
        seed = self._seed()
        params = [p.name.value for p in [*self.function.params.posonly_params, *self.function.params.params]]
        return seed.value if isinstance(seed, cst.Name) and seed.value in params else None

    def _seed(self) -> cst.BaseExpression | None:
        if self.nested or len(self.random_calls) != 1:
            return None
        return keyword_values(self.random_calls[0].node).get("seed")

    def seed_argument(self, call: cst.Call) -> cst.BaseExpression | None:
        """The seed ``call`` gives: its argument for the seed parameter (or that parameter's
        default), or the operator's own number."""
        if self.seed_param is None:
            return self._seed()
        params = [*self.function.params.posonly_params, *self.function.params.params]
        position = next(i for i, p in enumerate(params) if p.name.value == self.seed_param)
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position].value
        given = keyword_values(call).get(self.seed_param)
        return given if given is not None else params[position].default


def nested_functions(graph_function: cst.FunctionDef) -> list[cst.FunctionDef]:
    """The functions a graph defines at the top of its body."""
    return [s for s in graph_function.body.body if isinstance(s, cst.FunctionDef) and not s.decorators]


class _References(Visitor):
    """Each loaded name of ``names``, with the functions it stands in, outermost first."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.where: list[cst.FunctionDef] = []
        self.found: dict[str, list[tuple[cst.FunctionDef, ...]]] = {}
        self.callees: set[int] = set()  # names that are called (or defined)
        self.not_called: set[str] = set()  # names also used other than as ``name(...)``
        self.not_names: set[int] = set()  # attribute and keyword names

    def visit_Call(self, node: cst.Call) -> None:
        self.callees.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_names.add(id(node.attr))  # ``fn.flip`` is not the helper ``flip``

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_names.add(id(node.keyword))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.where.append(node)
        self.callees.add(id(node.name))  # its definition, not a use

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.where.pop()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and id(node) not in self.not_names:
            self.found.setdefault(node.value, []).append(tuple(self.where))
            if id(node) not in self.callees:
                self.not_called.add(node.value)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    visit_LazyImport = visit_Import
    visit_LazyImportFrom = visit_ImportFrom


class _Subscripts(Visitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.count += 1


def _subscripts(function: cst.FunctionDef) -> int:
    counter = _Subscripts()
    walk(function, counter)
    return counter.count


def graph_helpers(facts: ModuleFacts) -> dict[str, Helper]:
    """Top-level functions, not graphs, that call DALI operators; and the functions a graph
    defines at the top of its body that do, where no other function has their name."""
    loose = [call for call in facts.calls if call.graph is None and call.qualname.startswith("nvidia.dali.fn.")]
    if not loose:
        return {}
    helpers = _top_level_helpers(facts, loose)
    nested = _nested_helpers(facts, loose)
    return {**helpers, **{name: helper for name, helper in nested.items()
                          if name not in helpers and name not in facts.module_functions}}


def _nested_helpers(facts: ModuleFacts, loose: list[DaliCall]) -> dict[str, Helper]:
    found: dict[str, list[Helper]] = {}
    for graph in (g for g in facts.graphs if g.kind == "decorator"):
        for function in nested_functions(graph.node):
            inside = node_ids(function)
            calls = [call for call in loose if id(call.node) in inside]
            if calls:
                found.setdefault(function.name.value, []).append(
                    Helper(function, calls, _subscripts(function), nested=True))
    return {name: helpers[0] for name, helpers in found.items() if len(helpers) == 1}


def _top_level_helpers(facts: ModuleFacts, loose: list[DaliCall]) -> dict[str, Helper]:
    graphs = {id(graph.node) for graph in facts.graphs}
    functions = {facts.top_level[id(defs[0])]: (name, defs[0]) for name, defs in facts.module_functions.items()
                 if len(defs) == 1 and id(defs[0]) not in graphs}
    calls_by_function: dict[str, list[DaliCall]] = {}
    for call in loose:  # the analysis knows the top-level statement of every node
        found = functions.get(facts.top_level[id(call.node)])
        if found is not None:
            calls_by_function.setdefault(found[0], []).append(call)
    return {name: Helper(facts.module_functions[name][0], calls, _subscripts(facts.module_functions[name][0]))
            for name, calls in calls_by_function.items()}


def _called(node: cst.CSTNode, names: set[str]) -> set[str]:
    references = _References(names)
    walk(node, references)
    return set(references.found)


def helpers_of(function: cst.FunctionDef, helpers: dict[str, Helper]) -> set[str]:
    """The helpers ``function`` uses, and those they use."""
    found: set[str] = set()
    todo = [function]
    while todo:
        new = _called(todo.pop(), set(helpers)) - found
        found |= new
        todo += [helpers[name].function for name in new]
    return found


def random_helper_calls(function: cst.FunctionDef, helpers: dict[str, Helper]) -> list[DaliCall]:
    """The random operators of the top-level helpers ``function`` uses: its RNG feeds them."""
    return [call for name in sorted(helpers_of(function, helpers)) if not helpers[name].nested
            for call in helpers[name].random_calls]


def _mark_random_parameters(helpers: dict[str, Helper]) -> None:
    """A top-level helper takes ``batch_size`` where one of its random operators has no input
    (and so no batch to size itself by), ``rng`` where it has a random operator; and both
    where a helper it calls takes them, to pass them on."""
    for helper in helpers.values():
        if not helper.nested:
            helper.takes_rng = bool(helper.random_calls)
            helper.takes_batch_size = any(not _has_inputs(call.node) for call in helper.random_calls)
    top_level = {name for name, helper in helpers.items() if not helper.nested}
    callees = {name: _called(helpers[name].function, top_level - {name}) for name in top_level}
    changed = True
    while changed:
        changed = False
        for name, called in callees.items():
            helper = helpers[name]
            takes = (helper.takes_batch_size or any(helpers[c].takes_batch_size for c in called),
                     helper.takes_rng or any(helpers[c].takes_rng for c in called))
            changed |= takes != (helper.takes_batch_size, helper.takes_rng)
            helper.takes_batch_size, helper.takes_rng = takes


def _has_inputs(call: cst.Call) -> bool:
    return any(arg.keyword is None and arg.star == "" for arg in call.args)


def why_not(helper: Helper, optable: OpTable, not_called: set[str] = frozenset()) -> str | None:
    """Why the helper's operators cannot simply become ndd calls, or None. ``not_called``:
    the helpers used other than by a call somewhere in the module."""
    for call in helper.calls:
        op = call.op
        if op is None:
            return f"`{call.qualname}` is not in the op table"
        if op.is_reader or op.fn in ("external_source", "python_function"):
            return f"it calls `fn.{op.fn}`, which must stay in the graph"
        if op.fn == "constant":
            return "it calls `fn.constant`, which migrates only in the graph itself: move it there"
        if op.fn == "shapes" and (problem := shapes_call_problem(call.node)):
            return problem
        if op.fn != "shapes" and optable.ndd_target(op) is None:
            return f"it calls `fn.{op.fn}`, which has no ndd equivalent"
        if (op.random and not helper.nested and not helper.seeded
                and any(a.keyword and a.keyword.value == "seed" for a in call.node.args)):
            return (f"its `fn.{op.fn}` has a `seed=` of its own that is neither a number nor one of the "
                    "helper's parameters, or next to other random operators; move it into the graph")
    if (helper.takes_rng or helper.takes_batch_size) and helper.function.name.value in not_called:
        return ("it draws from its caller's RNG, so it must only be called by name (it is also passed "
                "around as a value)")
    if helper.subscripts:
        return "it subscripts its data (per sample in a graph); inline it into the graph"
    found = mixed_device_strings(helper.function, helper.calls)
    if found.strings:
        return "it gives a device variable \"mixed\"; write `device=\"mixed\"` where it is used"
    return None


@dataclass
class HelperUses:
    """The module's graph helpers, why each cannot be migrated (None if it can), and the
    top-level functions that use each: found once, before the plans settle."""

    helpers: dict[str, Helper]
    reasons: dict[str, str | None]
    users: dict[str, set[tuple[cst.FunctionDef, ...]]]  # the functions each use stands in, outermost first


def find_helpers(facts: ModuleFacts, module: cst.Module) -> HelperUses | None:
    helpers = graph_helpers(facts)
    if not helpers:
        return None
    _mark_random_parameters(helpers)
    references = _References(set(helpers))
    walk(module, references)
    reasons = {name: why_not(helper, facts.optable, references.not_called) for name, helper in helpers.items()}
    graphs = {id(g.node) for g in facts.graphs}
    for name, helper in helpers.items():
        if helper.seeded and reasons[name] is None:
            reasons[name] = _why_not_seeded(helper, references.found.get(name, []), graphs, helpers)
    return HelperUses(helpers, reasons, {name: set(found) for name, found in references.found.items()})


def _why_not_seeded(helper: Helper, uses: list[tuple[cst.FunctionDef, ...]], graphs: set[int],
                    helpers: dict[str, Helper]) -> str | None:
    """Each call of a seeded helper gets its RNG from the graph that calls it: only graphs may
    call it, and it may pass its RNG to no other helper."""
    uses = [where for where in uses if where != (helper.function,)]  # its own definition
    if any(len(where) != 1 or id(where[0]) not in graphs for where in uses):
        return "its random operator has a `seed=` of its own, and something else than a graph calls it"
    if _called(helper.function, set(helpers) - {helper.function.name.value}):
        return "its random operator has a `seed=` of its own, and it calls other helpers"
    if helper.seed_param is not None and helper.seed_param in scope_names([helper.function.body]).bound:
        return f"its random operator's `seed=` reads `{helper.seed_param}`, which it rebinds"
    return None


def plan_helpers(plans: list, uses: HelperUses | None) -> dict[str, Helper]:
    """Blocks the plans whose helpers cannot be migrated with them; returns the helpers that
    are (by name). A helper is migrated when all graphs and helpers that use it are."""
    if uses is None:
        return {}
    for plan in plans:
        plan.helpers = helpers_of(plan.function, uses.helpers)
    while True:
        usable = {name for name in set().union(*(p.helpers for p in plans if p.migratable))
                  if uses.reasons[name] is None}
        migrated = {id(p.function) for p in plans if p.migratable} | {id(uses.helpers[n].function) for n in usable}
        blocked = False
        for plan in [p for p in plans if p.migratable]:
            for name in sorted(plan.helpers):
                reason = uses.reasons[name]
                # a use inside a migrated graph (also one a function defines) or helper is migrated
                outside = sorted((where for where in uses.users.get(name, set())
                                  if not {id(function) for function in where} & migrated),
                                 key=lambda where: (len(where), [function.name.value for function in where]))
                if reason is None and outside:
                    user = outside[0][-1].name.value if outside[0] else "module-level code"
                    reason = f"`{user}` uses it too, and stays in pipeline mode"
                if reason is not None:  # every such helper is named: the person fixes them in one go
                    plan.block("DM015", plan.function, f"`{name}()` builds part of the graph with `fn`: {reason}")
                    blocked = True
        if not blocked:
            return {name: uses.helpers[name] for name in usable}


class RandomHelpers:
    """The migrated top-level helpers that take their caller's batch size and RNG: their new
    keyword-only parameters, and the calls that pass them."""

    def __init__(self, helpers: dict[str, Helper]) -> None:
        self.by_name = {name: helper for name, helper in helpers.items()
                        if not helper.nested and (helper.takes_batch_size or helper.takes_rng)}
        self.parameters: dict[int, tuple[str, str]] = {}  # id(function) -> (batch size, RNG) names

    def give_parameters(self, helper: Helper, op_plan) -> None:
        """Names the helper's new parameters; its random operators use them."""
        if helper.function.name.value not in self.by_name:
            return
        taken = variable_names(helper.function)
        batch_size, rng = unique_name("batch_size", taken), unique_name("rng", taken)
        self.parameters[id(helper.function)] = batch_size, rng
        for call in helper.random_calls:
            op_plan.call_rngs[id(call.node)] = rng
            op_plan.call_batch_sizes[id(call.node)] = batch_size

    def seeded_call_rngs(self, function: cst.FunctionDef, taken: set[str]) -> dict[int, tuple[str, cst.BaseExpression]]:
        """For each call of a seeded helper in ``function`` (a graph): a fresh RNG name and the
        seed the call gives."""
        found = {}
        for call in calls_named(function, {n for n, h in self.by_name.items() if h.seeded}):
            helper = self.by_name[call.func.value]
            found[id(call)] = (unique_name(f"{call.func.value}_rng", taken), helper.seed_argument(call))
            taken.add(found[id(call)][0])
        return found

    def is_call(self, call: cst.Call) -> bool:
        return isinstance(call.func, cst.Name) and call.func.value in self.by_name

    def given_caller_rng(self, call: cst.Call, caller: tuple[str, str] | None,
                         own_rng: str | None = None) -> cst.Call:
        """``augment(images)`` -> ``augment(images, batch_size=batch_size, rng=rng)`` with the
        caller's names (``caller``: its batch size and RNG); ``own_rng``: the RNG made for this
        call of a seeded helper (``seeded_call_rngs``)."""
        helper = self.by_name[call.func.value]
        if caller is None:  # a caller that stays in pipeline mode: planning blocked its graphs
            return call
        batch_size, rng = self.parameters[id(helper.function)]
        args = list(call.args)
        if helper.takes_batch_size:
            args = append_keyword(args, batch_size, cst.Name(caller[0]))
        if helper.takes_rng:
            args = append_keyword(args, rng, cst.Name(own_rng or caller[1]))
        return call.with_changes(args=args)

    def with_parameters(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        names = self.parameters.get(id(original))
        if names is None:
            return updated
        helper = self.by_name[original.name.value]
        taken = [name for name, takes in zip(names, (helper.takes_batch_size, helper.takes_rng)) if takes]
        params = updated.params
        star = params.star_arg if isinstance(params.star_arg, (cst.Param, cst.ParamStar)) else cst.ParamStar()
        return updated.with_changes(params=params.with_changes(
            star_arg=star, kwonly_params=[*params.kwonly_params, *(cst.Param(cst.Name(n)) for n in taken)]))
