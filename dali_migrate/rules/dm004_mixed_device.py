"""DM004: ``device="mixed"``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from ..visitors import Visitor, walk

from ..analysis import ModuleFacts
from .base import Finding, Rule


def is_mixed_device(arg: cst.Arg) -> bool:
    """``device="mixed"``, also as a branch of ``"cpu" if dali_cpu else "mixed"``."""
    return arg.keyword is not None and arg.keyword.value == "device" and bool(mixed_leaves(arg.value))


def mixed_leaves(value: cst.BaseExpression) -> list[cst.SimpleString]:
    """The ``"mixed"`` strings a device expression may evaluate to: the literal itself or the
    branches of conditional expressions."""
    if isinstance(value, cst.SimpleString):
        return [value] if value.evaluated_value == "mixed" else []
    if isinstance(value, cst.IfExp):
        return [*mixed_leaves(value.body), *mixed_leaves(value.orelse)]
    return []


def _device_names(calls) -> set[str]:
    return {arg.value.value for call in calls for arg in call.node.args
            if arg.keyword is not None and arg.keyword.value == "device" and isinstance(arg.value, cst.Name)}


class _MixedAssigned(Visitor):
    """``decoder_device = "cpu" if dali_cpu else "mixed"``: the "mixed" strings given to names,
    and those compared with them (``decoder_device == "mixed"``)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.strings: list[cst.SimpleString] = []
        self.assigned: set[str] = set()
        self.compared: dict[str, list] = {}  # name -> its comparisons' "mixed" literals

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
        if targets & self.names:
            found = _MixedStrings()
            walk(node.value, found)
            self.strings += found.strings
            self.assigned |= targets & self.names if found.strings else set()

    def visit_Comparison(self, node: cst.Comparison) -> None:
        sides = [node.left, *(target.comparator for target in node.comparisons)]
        names = [side.value for side in sides if isinstance(side, cst.Name) and side.value in self.names]
        mixed = [side for side in sides if isinstance(side, cst.SimpleString) and side.evaluated_value == "mixed"]
        for name in names if mixed else []:
            self.compared.setdefault(name, []).append(mixed)


class _MixedStrings(Visitor):
    def __init__(self) -> None:
        self.strings: list[cst.SimpleString] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value == "mixed":
            self.strings.append(node)


@dataclass
class MixedDeviceNames:
    strings: list[cst.SimpleString] = field(default_factory=list)  # "mixed" literals that mean a device
    names: set[str] = field(default_factory=set)  # variables given "mixed" and passed as device=
    compared: dict[str, int] = field(default_factory=dict)  # name -> its comparisons with "mixed"


def mixed_device_strings(function: cst.CSTNode, calls) -> MixedDeviceNames:
    """The "mixed" literals a graph gives to names it passes as ``device=`` (or compares them with)."""
    names = _device_names(calls)
    if not names:  # the common case: no walk over the graph
        return MixedDeviceNames()
    visitor = _MixedAssigned(names)
    walk(function, visitor)
    if not visitor.assigned:
        return MixedDeviceNames()
    # only where the graph itself gives the name "mixed": a parameter may be "mixed" on purpose
    compared = {name: found for name, found in visitor.compared.items() if name in visitor.assigned}
    strings = [*visitor.strings, *(string for found in compared.values() for group in found for string in group)]
    return MixedDeviceNames(strings, visitor.assigned, {name: len(found) for name, found in compared.items()})


class MixedDevice(Rule):
    """
    ## What it does
    Flags `device="mixed"` on a DALI operator.

    ## Why
    `"mixed"` is a pipeline-mode placement (CPU input, GPU output). Dynamic mode says
    `device="gpu"` and picks the hybrid backend itself.

    ## Example
    ```python
    images = fn.decoders.image(jpegs, device="mixed")
    ```

    ## Use instead
    ```python
    images = ndd.decoders.image(jpegs, device="gpu")
    ```

    Also flags `"mixed"` given to a variable that the graph passes as `device=`
    (`decoder_device = "cpu" if dali_cpu else "mixed"`), in the graph or in the function
    around it (above a `with pipe:` graph).

    ## Fix safety
    Safe: the same backend runs. A variable that holds `"mixed"` is fixed where the graph uses
    it only as `device=`; otherwise the pipeline keeps a TODO.
    """

    code = "DM004"
    name = "mixed-device"
    message = '`device="mixed"` is pipeline-only; use `device="gpu"`'
    fix = "always"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            for arg in call.node.args:
                if is_mixed_device(arg):
                    yield self.finding(arg)
        for graph in facts.graphs:  # the function around the graph may choose its device too
            found = mixed_device_strings(facts.graph_scope(graph.node), [c for c in facts.calls if c.graph is graph])
            yield from (self.finding(string) for string in found.strings)
