"""DM008: subscripts on DataNodes inside a pipeline graph."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule


class DataNodeSubscript(Rule):
    """
    ## What it does
    Flags `x[...]` where `x` is a DataNode inside a pipeline graph.

    ## Why
    In a graph, `x[0]` or `x[:, 1:3]` slices inside every sample. On a dynamic-mode `Batch` the
    same spelling is a TypeError; the per-sample slice is `x.slice[...]` (and `x.tensors[i]`
    would pick sample `i`, which is something else).

    ## Example
    ```python
    xy = fn.random.uniform(range=[0, 1], shape=2)
    crop_x = xy[0]
    ```

    ## Use instead
    ```python
    xy = ndd.random.uniform(range=[0, 1], shape=2, batch_size=batch_size, rng=rng)
    crop_x = xy.slice[0]
    ```

    ## Fix safety
    Safe: the same per-sample indexing.
    """

    code = "DM008"
    name = "datanode-subscript"
    message = "per-sample subscript on a DataNode; use `.slice[...]`"
    fix = "always"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.datanode_subscripts:
            yield self.finding(site.node, f"`{site.name}[...]`")
