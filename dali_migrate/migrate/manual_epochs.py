"""Epochs that the sources end, driven by hand with ``pipe.reset()`` (DM003, DM012).

DALI's external-source docs read epoch after epoch so::

    try:
        while True:
            images, labels = pipe.run()
            ...
    except StopIteration:
        pipe.reset()

``run()`` raises StopIteration where the sources end an epoch, and raises it again until
``reset()`` starts their next one. The migrated generator marks those ends
(``mark_epoch_ends=True``: it yields None there), and the caller reads one epoch at a time from
``iter(pipe.__next__, None)``, which stops at the mark and stays stopped until it is made again::

    pipe = graph(mark_epoch_ends=True)
    # its batches until the sources end an epoch
    pipe_epoch = iter(pipe.__next__, None)
    try:
        while True:
            images, labels = next(pipe_epoch)
            ...
    except StopIteration:
        pipe_epoch = iter(pipe.__next__, None)

Only a reset that stands as a statement in an ``except StopIteration:`` handler is followed
(elsewhere it would restart an epoch in the middle); the pipeline has no reader (a reader
wraps into its next epoch on its own), no framework iterator reads it, and it is made in the
function that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis import RUN_METHODS, ModuleFacts, Site, iterated_pipeline
from ..pipeline_scopes import spelled
from ..visitors import Visitor, walk
from .names import all_names, unique_name
from .places import Places
from .plan import PipelinePlan
from .reader_meta import NotMigratable, ReaderMetaRewrites, factories_in_scope


def may_run_epochs_by_hand(var: str, plan: PipelinePlan, facts: ModuleFacts) -> bool:
    """What the plan can tell: sources end the epochs, and nothing but ``run()`` reads them."""
    return (bool(plan.sources) and not plan.readers and not plan.imported
            and not any(facts.key_of(iterated_pipeline(s.node)) == var for s in facts.iterator_uses))


@dataclass
class ManualEpochs:
    reader_meta: ReaderMetaRewrites = field(default_factory=ReaderMetaRewrites)
    run_receivers: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(run call) -> what next() reads
    resets: dict[int, cst.BaseStatement] = field(default_factory=dict)  # id(reset call) -> its statement


def plan_manual_epochs(module: cst.Module, facts: ModuleFacts, plans: list[PipelinePlan], places: Places,
                       factories: dict[str, list[cst.Call]]) -> ManualEpochs:
    """The rewrites for the pipelines ``plan.py`` let through with a reset run by hand
    (``plan.epochs_by_hand``); a pipeline they cannot be done for is blocked."""
    planned = ManualEpochs()
    handlers = _stop_iteration_handler_ids(module)
    taken = set(all_names(module))
    for plan in (p for p in plans if p.migratable and p.epochs_by_hand):
        for var in plan.epochs_by_hand:
            try:
                _plan_var(var, plan, facts, places, factories, handlers, taken, planned)
            except NotMigratable as reason:
                for site in _sites(facts, var, {"reset"}):
                    plan.block("DM003", site.node, f"`{site.name}.reset()` starts the sources' next epoch after "
                                                   f"they ended one: {reason}")
    return planned


def _plan_var(var: str, plan: PipelinePlan, facts: ModuleFacts, places: Places, factories, handlers: set[int],
              taken: set[str], planned: ManualEpochs) -> None:
    resets, runs = _sites(facts, var, {"reset"}), _sites(facts, var, RUN_METHODS)
    for site in resets:
        if id(site.node) not in handlers:
            raise NotMigratable(f"`{site.name}.reset()` is followed only as a statement of an "
                                "`except StopIteration:` handler")
    made = {id(call): call for site in [*resets, *runs]
            for call in factories_in_scope(factories.get(var, []), site, places, var, plan, facts)}
    if not made or not _shared(var, [*made.values(), *(s.node for s in [*resets, *runs])], places):
        raise NotMigratable(f"make `{spelled(var)}` in the one function that runs and resets it, or in a "
                            "method of the class whose methods do (`self.pipe`)")
    epoch = _epoch_name(spelled(var), taken)
    stream = cst.parse_expression(f"iter({spelled(var)}.__next__, None)")
    for call in made.values():
        planned.reader_meta.epoch_end_calls.add(id(call))
        planned.reader_meta.statements_after.setdefault(id(call), {})[epoch] = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.parse_expression(epoch))], stream)],
            leading_lines=[cst.EmptyLine(comment=cst.Comment("# its batches until the sources end an epoch"))])
    for site in runs:
        planned.run_receivers[id(site.node)] = cst.parse_expression(epoch)
    for site in resets:
        planned.resets[id(site.node)] = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.parse_expression(epoch))], stream)])
    plan.marks_epoch_ends = True


def _shared(var: str, nodes: list[cst.CSTNode], places: Places) -> bool:
    """One function makes, runs and resets the pipeline, or methods of one class through ``self``."""
    if len({id(places.scope(node)) for node in nodes}) == 1:
        return True
    classes = {id(places.owner_class(node)) for node in nodes}
    return spelled(var).startswith("self.") and len(classes) == 1 and places.owner_class(nodes[0]) is not None


def _epoch_name(var: str, taken: set[str]) -> str:
    """``pipe`` -> ``pipe_epoch``; ``self.pipe`` -> ``self.pipe_epoch``."""
    owner, _, name = var.rpartition(".")
    if owner:
        return f"{owner}.{name}_epoch"
    chosen = unique_name(f"{name}_epoch", taken)
    taken.add(chosen)
    return chosen


def _sites(facts: ModuleFacts, var: str, methods) -> list[Site]:
    return [s for s in facts.pipeline_method_calls if s.origin == var and s.detail in methods]


class _Handlers(Visitor):
    """The ids of the calls that stand alone as statements of ``except StopIteration:`` bodies."""

    def __init__(self) -> None:
        self.found: set[int] = set()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if isinstance(node.type, cst.Name) and node.type.value == "StopIteration" and node.name is None:
            for line in node.body.body:
                if isinstance(line, cst.SimpleStatementLine):
                    self.found |= {id(s.value) for s in line.body if isinstance(s, cst.Expr)}


def _stop_iteration_handler_ids(module: cst.Module) -> set[int]:
    handlers = _Handlers()
    walk(module, handlers)
    return handlers.found

