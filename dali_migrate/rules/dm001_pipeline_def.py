"""DM001: the ``@pipeline_def`` decorator."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts, iterator_decorator
from .base import Finding, Rule


class PipelineDefDecorator(Rule):
    """
    ## What it does
    Flags functions decorated with `@pipeline_def` (with or without arguments).

    ## Why
    Dynamic mode has no pipeline object: operators are plain Python calls that run when they
    are called. Pipeline-level arguments (`batch_size`, `num_threads`, `device_id`, `seed`)
    have dynamic-mode homes of their own.

    ## Example
    ```python
    @pipeline_def(batch_size=32, num_threads=4, device_id=None, seed=42)
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root)
        return fn.decoders.image(jpegs), labels
    ```

    ## Use instead
    ```python
    def train_pipe(root, *, batch_size=32, num_threads=4, seed=42):
        rng = ndd.random.RNG(seed=seed)
        reader = ndd.readers.File(file_root=root)
        while True:
            for jpegs, labels in reader.next_epoch(batch_size=batch_size):
                yield ndd.decoders.image(jpegs), labels
    ```
    The migrated function is a generator: each `next()` gives what one `pipe.run()` gave.
    `num_threads` sets nothing (dynamic mode has one process-wide pool); a `device_id` becomes
    `context = ndd.EvalContext(device_id=device_id)`, entered for each iteration's work.

    ## Fix safety
    Safe for graphs made of operators with an ndd equivalent and at most one reader; anything
    else in the graph is migrated where it can be and marked with a TODO where it cannot.
    Execution-only arguments (`prefetch_queue_depth`, `exec_dynamic`, ...) go. So does
    `debug=True` (debug mode of `nvidia.dali.pipeline.experimental.pipeline_def`, which ran the
    same graph eagerly), except in a graph that reads its DataNodes with `.get()`: that graph
    keeps a TODO at the call, as its values become ndd Batches. A call that passes a
    `**mapping` keeps the pipeline unless the mapping is a dict display of the module holding
    only the graph's own parameters (its pipeline arguments would reach a function that takes
    them otherwise).
    """

    code = "DM001"
    name = "pipeline-def"
    message = "`@pipeline_def` pipeline; dynamic mode uses plain functions"
    fix = "always"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for graph in facts.graphs:
            if graph.kind == "decorator" and iterator_decorator(graph.node, facts.imports) is None:
                yield self.finding(graph.decorator, f"`{graph.name}`")
