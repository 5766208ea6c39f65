"""Pipeline calls that spread a mapping: ``pipe = train_pipe(root, **cfg)``.

The migration splits a call's pipeline arguments (``batch_size``, ``num_threads``,
``device_id``, ``seed``, ...) from the graph's own parameters: the generator takes some of
them, under other terms, and not others. What ``**cfg`` holds is read only where it is a dict
display with string keys, bound once at the top of the module and used nowhere but in ``**``::

    AUG = {"crop": 24, "mirror_prob": 0.5}      # only the graph's parameters: the call migrates
    CFG = {"batch_size": 4, "num_threads": 2}   # pipeline arguments: the pipeline stays

Any other ``**`` keeps the pipeline, with a TODO that says which keys to pass as keywords.
"""

from __future__ import annotations

from collections import Counter

import libcst as cst

from ..analysis import ModuleFacts
from ..imports import dotted_name
from ..visitors import Visitor, walk
from .names import all_params

PIPELINE_ARGUMENTS_HINT = "`batch_size`, `num_threads`, `device_id`, `seed`, ..."


def block_spread_arguments(plans: list, facts: ModuleFacts, module: cst.Module) -> None:
    """Blocks each plan called with a ``**mapping`` that holds, or may hold, pipeline arguments:
    where the pipeline is made (also in a function returning it) or through a function that
    returns it."""
    spread = [(plan, arg) for plan in plans for arg in _spread_args(plan, facts.spread_calls)]
    if not spread:
        return
    name_uses = _NameCounter()
    walk(module, name_uses)
    for plan, arg in spread:
        reason = _spread_reason(plan, arg, facts, name_uses.uses)
        if reason:
            plan.block("DM001", arg, reason)


def spelled_spread(arg: cst.Arg) -> str:
    """``**cfg`` (or ``*args``) as the call writes it."""
    return f"{arg.star}{cst.Module([]).code_for_node(arg.value)}"


def _spread_args(plan, spread_calls: list[cst.Call]) -> list[cst.Arg]:
    by_name = [call for call in spread_calls if dotted_name(call.func) == plan.graph.name]
    made = {id(call): call for call in [*plan.factory_calls, *by_name]}
    return [arg for call in made.values() for arg in call.args if arg.star == "**"]


def _spread_reason(plan, arg: cst.Arg, facts: ModuleFacts, name_uses: Counter) -> str:
    spelled = spelled_spread(arg)
    keys = _literal_keys(arg.value, facts, name_uses)
    if keys is None:
        return (f"a call passes `{spelled}`, which may hold pipeline arguments ({PIPELINE_ARGUMENTS_HINT}) that "
                f"the migrated function takes otherwise or not at all: pass them as keywords, then re-run")
    graph_params = {p.name.value for p in all_params(plan.function.params)}
    pipeline_keys = [key for key in keys if key not in graph_params]
    if not pipeline_keys:
        return ""
    named = ", ".join(f"`{key}`" for key in pipeline_keys)
    return (f"a call passes `{spelled}`, which holds pipeline arguments ({named}) that the migrated function "
            f"takes otherwise or not at all: pass them as keywords, then re-run")


def _literal_keys(value: cst.BaseExpression, facts: ModuleFacts, name_uses: Counter) -> list[str] | None:
    """The keys of a module-level dict display with string keys, bound once and only spread."""
    if not isinstance(value, cst.Name):
        return None
    bound = facts.module_values.get(value.value, [])
    if len(bound) != 1 or not isinstance(bound[0], cst.Dict):
        return None
    keys = [element.key.evaluated_value for element in bound[0].elements
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)]
    if len(keys) != len(bound[0].elements):  # ``**other`` inside, or a computed key
        return None
    # one Name where it is bound, one per ``**``: any other use may change the dict
    return keys if name_uses[value.value] == 1 + name_uses[f"**{value.value}"] else None


class _NameCounter(Visitor):
    """How often each name is written in the module, and how often it is spread (``**name``)."""

    def __init__(self) -> None:
        self.uses: Counter = Counter()

    def visit_Name(self, node: cst.Name) -> None:
        self.uses[node.value] += 1

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.star == "**" and isinstance(node.value, cst.Name):
            self.uses[f"**{node.value.value}"] += 1
