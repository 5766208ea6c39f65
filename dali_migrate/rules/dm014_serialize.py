"""DM014: pipeline serialization."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import ModuleFacts
from ..imports import ImportTable
from .base import Finding, Rule

AUTOSERIALIZE = "nvidia.dali.plugin.triton.autoserialize"


def autoserialize_decorators(function: cst.CSTNode, imports: ImportTable) -> list[cst.Decorator]:
    """``@autoserialize`` on a graph function: Triton's DALI backend gets its serialized graph."""
    found = []
    for decorator in getattr(function, "decorators", ()):
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if imports.resolve(target) == AUTOSERIALIZE:
            found.append(decorator)
    return found


class Serialize(Rule):
    """
    ## What it does
    Flags `pipe.serialize()`, `Pipeline.deserialize(...)`, `serialized_pipeline=` and
    `@autoserialize` (`nvidia.dali.plugin.triton`).

    ## Why
    A dynamic-mode pipeline is Python code; there is no graph to serialize. Serialized
    pipelines consumed elsewhere (Triton's DALI backend, C++) still need pipeline mode.

    ## Example
    ```python
    pipe.serialize(filename="model.dali")
    ```

    ## Use instead
    Keep the pipeline definition that produces the serialized graph in pipeline mode, or ship
    the Python code.

    ## Fix safety
    Never fixed. `migrate` keeps a serialized pipeline in pipeline mode and says why ("kept in
    pipeline mode: ... needs the pipeline graph"), without asking for a re-run.
    """

    code = "DM014"
    name = "serialize"
    message = "pipeline serialization has no dynamic-mode equivalent"
    fix = "never"
    safety = "none"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.pipeline_method_sites(frozenset({"serialize"})):
            yield self.finding(site.node, f"`{site.name}.serialize()`")
        for call in facts.calls:
            if call.qualname.endswith("Pipeline.deserialize"):
                yield self.finding(call.node, "`Pipeline.deserialize`")
        for graph in facts.graphs:
            for decorator in autoserialize_decorators(graph.node, facts.imports):
                yield self.finding(decorator, "`@autoserialize` (Triton)")
