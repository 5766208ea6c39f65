"""DM002: ``Pipeline(...)`` objects and ``Pipeline`` subclasses."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import PIPELINE_CLASS, ModuleFacts
from .base import Finding, Rule


class PipelineObject(Rule):
    """
    ## What it does
    Flags `Pipeline(...)` constructions (usually followed by `with pipe:` and
    `pipe.set_outputs(...)`) and classes that subclass `Pipeline`.

    ## Why
    Dynamic mode runs operators directly; there is no graph object to build, fill and run.

    ## Example
    ```python
    pipe = Pipeline(batch_size=8, num_threads=2, device_id=None)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root)
        pipe.set_outputs(fn.decoders.image(jpegs), labels)
    ```

    ## Use instead
    ```python
    def pipe_outputs(*, batch_size=8):
        reader = ndd.readers.File(file_root=root)
        while True:
            for jpegs, labels in reader.next_epoch(batch_size=batch_size):
                yield ndd.decoders.image(jpegs), labels
    pipe = pipe_outputs()
    ```

    ## Fix safety
    `pipe = Pipeline(keyword=...)` directly followed by `with pipe:` ending in
    `pipe.set_outputs(...)`, in a function or at module level, is migrated: the graph becomes a
    generator function defined where the `with` stood. A function that returns the pipeline
    returns the generator, and its callers' `build()`/`run()` are migrated too. Left with a TODO
    (and the reasons): positional `Pipeline` arguments, names bound in the graph and read
    after it, and graphs that cannot be migrated in decorator form either.
    A subclass with `__init__` building legacy operators and `define_graph` wiring them becomes
    a generator function of the same name (see DM009); calls of the class are given keyword
    arguments. An `iter_setup` that feeds external sources with `self.feed_input(self.x, data)`
    becomes a function the graph defines, read by one `external_source` per batch; what it assigns
    (`self.iterator = ...`) is a variable of the generator (`nonlocal`). Helper methods that
    `define_graph` calls become functions the generator defines. A class derived from a base
    class of the module is converted with the base merged in (see `migrate/base_classes.py`);
    the base goes once all its derived classes migrated. A subclass with special
    methods, helper methods that assign `self.x` or call readers or sources,
    other uses of `self`, or pipeline arguments computed from `__init__`'s parameters keeps a
    TODO that says which.
    """

    code = "DM002"
    name = "pipeline-object"
    message = "`Pipeline` object; dynamic mode has no pipeline graph"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.qualname == PIPELINE_CLASS:
                made = cst.Module([]).code_for_node(call.node.func)
                yield self.finding(call.node, f"`{made}(...)` and its graph become a generator function")
        for site in facts.pipeline_subclass_defs:
            yield self.finding(site.node, f"subclass `{site.name}`")
