"""Pipeline checkpointing -> ``ndd.checkpoint.Checkpoint`` (DM013).

Pipeline mode checkpoints a whole pipeline; dynamic mode checkpoints its stateful objects, the
readers and RNGs, which the migrated generator registers with a ``Checkpoint`` it is given::

    pipe = train(root, enable_checkpointing=True)     pipe_checkpoint = ndd.checkpoint.Checkpoint()
                                                      pipe = train(root, checkpoint=pipe_checkpoint)
    state = pipe.checkpoint()                         pipe_checkpoint.collect()
                                                      state = pipe_checkpoint.serialize()
    again = train(root, checkpoint=state)             again_checkpoint = ndd.checkpoint.Checkpoint()
                                                      again_checkpoint.deserialize(state)
                                                      again = train(root, checkpoint=again_checkpoint)

Measured on DALI 2.4: a reader registered before its first ``next_epoch`` resumes where the
state was collected, across epoch boundaries, as a restored pipeline does. The formats differ:
a checkpoint saved by pipeline mode does not load, which the restore site's TODO says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Visitor

from ..analysis import ModuleFacts, Site
from ..imports import dotted_name
from ..pipeline_scopes import spelled
from .ops import is_true, keyword_values
from .reader_meta import NotMigratable, factory_in_scope

CHECKPOINT_METHOD = frozenset({"checkpoint"})


class CheckpointNotMigratable(NotMigratable):
    """NotMigratable at ``node``: the TODO goes there."""

    def __init__(self, node: cst.CSTNode, reason: str) -> None:
        super().__init__(reason)
        self.node = node


@dataclass
class CheckpointRewrites:
    before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)  # id(factory call)
    factory_args: dict[int, cst.Name] = field(default_factory=dict)  # id(factory call) -> its checkpoint=
    replaced: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)  # id(pipe.checkpoint() call)
    restores: list[cst.Call] = field(default_factory=list)  # factory calls given a saved state
    states: set[str] = field(default_factory=set)  # names that now hold an ndd checkpoint's state

    def foreign_restores(self) -> list[cst.Call]:
        """Restores from a state this module did not make: it may come from pipeline mode."""
        def state(call):
            return keyword_values(call)["checkpoint"]
        return [c for c in self.restores if not (isinstance(state(c), cst.Name) and state(c).value in self.states)]

    @classmethod
    def merged(cls, parts: list[CheckpointRewrites]) -> CheckpointRewrites:
        whole = cls()
        for part in parts:
            whole.before.update(part.before)
            whole.factory_args.update(part.factory_args)
            whole.replaced.update(part.replaced)
            whole.restores += part.restores
            whole.states |= part.states
        return whole


def checkpoint_sites(facts: ModuleFacts, var: str) -> list[Site]:
    return [s for s in facts.pipeline_method_sites(CHECKPOINT_METHOD) if s.origin == var]


def plan_checkpoints(plan, facts: ModuleFacts, factories: dict[str, list[cst.Call]], places,
                     statement_of, ndd_alias: str) -> CheckpointRewrites:
    """``statement_of(call)``: the statement line that holds ``call``, or None."""
    rewrites = CheckpointRewrites()
    enabled_by_decorator = is_true(plan.pipeline_args.get("enable_checkpointing"))
    for var, calls in factories.items():
        sites = checkpoint_sites(facts, var)
        binding = {id(s.node): factory_in_scope(calls, s, places, var, plan) for s in sites}
        for call in [c for c in calls if dotted_name(c.func) == plan.graph.name]:
            own = [s for s in sites if binding[id(s.node)] is call]
            given = keyword_values(call)
            if not own and "checkpoint" not in given:
                continue
            if not (enabled_by_decorator or is_true(given.get("enable_checkpointing"))):
                raise CheckpointNotMigratable(call, f"`{spelled(var)}.checkpoint()` on a pipeline built without "
                                                    "`enable_checkpointing=True`")
            _plan_one(rewrites, spelled(var), call, own, given, ndd_alias, statement_of)
        for site in sites:
            if binding[id(site.node)] is None:
                continue  # another pipeline's
            if id(site.node) not in rewrites.replaced:
                raise CheckpointNotMigratable(site.node, f"`{spelled(var)}.checkpoint()` must be a statement of its own")
    unbound = [c for c in plan.factory_calls if "checkpoint" in keyword_values(c) and id(c) not in rewrites.before]
    if unbound:
        raise CheckpointNotMigratable(unbound[0], "a restored pipeline must be assigned to a name: "
                                                  "`pipe = f(..., checkpoint=...)`")
    return rewrites


def _plan_one(rewrites: CheckpointRewrites, var: str, call: cst.Call, sites: list[Site],
              given: dict[str, cst.BaseExpression], ndd_alias: str, statement_of) -> None:
    name = f"{var}_checkpoint"
    before = [cst.parse_statement(f"{name} = {ndd_alias}.checkpoint.Checkpoint()\n")]
    if "checkpoint" in given:
        state = cst.Module([]).code_for_node(given["checkpoint"])
        before.append(cst.parse_statement(f"{name}.deserialize({state})\n"))
        rewrites.restores.append(call)
    rewrites.before[id(call)] = before
    rewrites.factory_args[id(call)] = cst.Name(name)
    for site in sites:
        if site.node.args:
            raise CheckpointNotMigratable(site.node, f"`{var}.checkpoint(filename)`: write `state = {var}.checkpoint()` "
                                                     "to the file yourself, then re-run dali-migrate")
        line = statement_of(site.node)
        if line is None:
            continue
        if isinstance(line.body[0], cst.Assign) and isinstance(line.body[0].targets[0].target, cst.Name):
            rewrites.states.add(line.body[0].targets[0].target.value)
        collect = cst.parse_statement(f"{name}.collect()\n").with_changes(leading_lines=line.leading_lines)
        rewrites.replaced[id(site.node)] = [collect, _with_value(line, f"{name}.serialize()")]


def _with_value(line: cst.SimpleStatementLine, code: str) -> cst.SimpleStatementLine:
    small = line.body[0]
    return line.with_changes(body=[small.with_changes(value=cst.parse_expression(code))], leading_lines=[])


class StatementOf(Visitor):
    """The one-statement line around each wanted call: ``x = call`` or ``call``."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.found: dict[int, cst.SimpleStatementLine] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1:
            return
        small = node.body[0]
        plain_assign = isinstance(small, cst.Assign) and len(small.targets) == 1
        if (plain_assign or isinstance(small, cst.Expr)) and id(small.value) in self.wanted:
            self.found[id(small.value)] = node


def generator_registrations(reader_names: list[str], rng_names: list[str]) -> list[cst.BaseStatement]:
    """What the migrated generator registers with the ``checkpoint`` it is given."""
    register = [f'    checkpoint.register({name}, "{name}")\n' for name in [*reader_names, *rng_names]]
    return [cst.parse_statement("if checkpoint is not None:\n" + "".join(register))]
