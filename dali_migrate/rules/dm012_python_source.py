"""DM012: ``fn.external_source`` and Python operators."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule

PYTHON_OPS = {
    "external_source": "call the source and wrap its data with `ndd.batch(...)`",
    "python_function": "call the Python function between ndd calls",
    "dl_tensor_python_function": "call the function between ndd calls",
    "experimental.numba_function": "call the Numba function on NumPy data between ndd calls",
}


class PythonSource(Rule):
    """
    ## What it does
    Flags `fn.external_source(...)`, `fn.python_function(...)` and other Python-backed
    operators, plus `feed_input` on a pipeline.

    ## Why
    Dynamic mode has no Python operators: it is already Python. Data from a callback or a
    generator becomes a Batch with `ndd.batch(data)`; a Python function is simply called.

    ## Example
    ```python
    images = fn.external_source(source=read_batch, batch=True)
    ```

    ## Use instead
    ```python
    try:
        images = ndd.batch(read_batch())
    except StopIteration:
        return
    ```

    ## Fix safety
    `fn.external_source` is migrated when its source is a function, generator function or
    callable class defined at the top of the module: the migrated generator calls it as
    pipeline mode did (nothing, the iteration index, `BatchInfo`, or `SampleInfo` per sample,
    as its signature and `batch`/`batch_info` ask), iterates a generator (restarting it for
    `cycle=True`), keeps `layout`/`dtype`/`device`, and ends where the source raises
    `StopIteration`, as `run()` did. An iterable or generator function with `cycle="raise"`
    read by a framework iterator (which resets the pipeline at each epoch's end) is iterated
    anew at each epoch, every such source of the pipeline, as the reset made DALI do; an
    iterable the graph makes is made once and iterated again. A source object the graph makes (`source = Windows(files)`
    at its top, or inline) is made once, before the loop, after the plain statements that
    compute its arguments; one made from data, inside a block or bound twice keeps the
    pipeline. A function the graph defines (`def next_batch():` at its top, before the
    external_source) is defined once, before the loop, and called per batch: what it assigns
    with `nonlocal` lives as long as the generator, as it lived as long as the pipeline. A
    source the pipeline takes as a parameter (`def pipe(source):`, DALI's parallel
    external source examples) is used as the calls of the pipeline say: each call must pass a
    class, function or generator function of the module, inline (`pipe(Windows(files))`) or as
    a name bound once to one in the calling function or at the top of the module, and all calls
    one used the same way; otherwise the TODO names the call. A source the object holds
    (`source=self.source` in a method) is followed to the class's one `self.source = Class(...)`
    and read once, before the loop. The external source is assigned
    at the top of the graph, or returned by it (one output). `parallel=` only spread the calls over processes: the
    data is the same. `fn.python_function` becomes a comprehension that calls the function on
    each sample as a NumPy array (with `batch_processing=True`: once, on lists of them), batched
    with `ndd.batch`, one Batch per output (bit for bit). Other sources, `cycle="raise"` on a
    pipeline run by hand (`pipe.reset()` in an `except StopIteration:`), `feed_input` outside a convertible `iter_setup` (see DM002), GPU functions and the other
    Python operators get a TODO naming the manual step.
    """

    code = "DM012"
    name = "python-source"
    message = "Python-backed operator"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.op is not None and call.op.fn in PYTHON_OPS:
                yield self.finding(call.node, f"`fn.{call.op.fn}`: {PYTHON_OPS[call.op.fn]}")
        for site in facts.pipeline_method_sites(frozenset({"feed_input", "iter_setup"})):
            yield self.finding(site.node, f"`{site.detail}`: pass the data to the ndd call")
