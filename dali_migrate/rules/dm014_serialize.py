"""DM014: pipeline serialization."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import ModuleFacts
from .base import Finding, Rule


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
            for decorator in getattr(graph.node, "decorators", ()):
                target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
                if facts.imports.resolve(target) == "nvidia.dali.plugin.triton.autoserialize":
                    yield self.finding(decorator, "`@autoserialize` (Triton)")
