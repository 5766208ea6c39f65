"""DM010: framework iterators from ``nvidia.dali.plugin``."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FEED_NDARRAY, ModuleFacts
from .base import Finding, Rule

GUIDANCE = {
    "pytorch": "loop over the migrated generator and call `.torch()` on each Batch (`.torch(pad=True)` "
               "for ragged ones)",
    "tf": "feed `tf.data.Dataset.from_generator` from the migrated generator, each Batch converted with "
          "`tf.experimental.dlpack.from_dlpack(ndd.as_tensor(batch).__dlpack__())`",
    "jax": "loop over the migrated generator and convert each Batch with "
           "`jax.dlpack.from_dlpack(ndd.as_tensor(batch))`",
    "mxnet": "loop over the migrated generator and convert each Batch with "
             "`mx.nd.from_dlpack(ndd.as_tensor(batch).__dlpack__())`",
    "paddle": "loop over the migrated generator and convert each Batch with "
              "`paddle.utils.dlpack.from_dlpack(ndd.as_tensor(batch).__dlpack__())`",
    "numba": "call the function on NumPy data between ndd calls",
}
# ``feed_ndarray`` is no iterator: it copies a DALI value into a torch tensor
FEED_GUIDANCE = "on an ndd Batch or Tensor, `tensor.copy_(value.torch())` copies the same data"


def iterator_name(site) -> str:
    """```DALIGenericIterator``` or, for a call of a subclass of it, ```Wrapper` (a `DALIGenericIterator`)``."""
    short = f"`{site.name.rsplit('.', 1)[-1]}`"
    return f"`{site.detail}` (a {short})" if site.detail else short


def plugin_name(qualname: str) -> str:
    return qualname.split(".")[3] if qualname.count(".") >= 3 else ""


class FrameworkIterator(Rule):
    """
    ## What it does
    Flags use of `nvidia.dali.plugin.*`: `DALIGenericIterator`, `DALIClassificationIterator`,
    the TensorFlow `DALIDataset`, the JAX, MXNet and Paddle iterators.

    ## Why
    These iterators drive a pipeline's `run()`. A dynamic-mode pipeline is iterated directly,
    and each `Batch` converts to the framework (`.torch()`, DLPack).

    ## Example
    ```python
    loader = DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader",
                                 last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    for data in loader:
        images = data[0]["data"]
    ```

    ## Use instead
    ```python
    loader = DALITorchLoader(pipe, ["data", "label"], batch_size=4, reader_meta=pipe_reader_meta,
                             last_batch_policy="partial", auto_reset=True)
    for data in loader:
        images = data[0]["data"]
    ```
    `DALITorchLoader` is a class of about 100 lines that the migration writes once per project,
    into a module of its own that migrated files import (README: "PyTorch and JAX iterators"). It
    gives what the iterator gave, batch for batch: the steps per epoch across all shards, the
    samples carried into the next epoch (FILL), the trimmed (PARTIAL) or dropped (DROP) last
    batch, `len()`, `reset()` and `auto_reset`. `pipe_reader_meta` is what the first
    `next(pipe)` gives when the pipeline is created with `yield_reader_meta=True`: its reader's
    metadata. The loops that read `data[0]["data"]` stay as
    they are, also in the functions the loader is handed to.

    ## Fix safety
    Fixed for the PyTorch `DALIGenericIterator` and `DALIClassificationIterator` over one
    migrated pipeline with `reader_name=` naming one of its readers, the output map given as a
    literal, and the pipeline created in the function that creates the
    iterator, or handed to it new (`get_loader(train_pipe(...))`: that function then takes the
    metadata with the first `next()`). JAX's `DALIGenericIterator` is fixed the same way (FILL or DROP, no `sharding=`,
    no `pmap_compatible=True`): it becomes `DALIJaxLoader`, which gives `{name: jax.Array}` per
    step. Without `reader_name=` (and without `size=`), a pipeline fed only by
    external sources is fixed too: its generator is created with `mark_epoch_ends=True` and
    yields None where the sources raised StopIteration, which is where DALI's iterator ended
    an epoch. PyTorch's iterator given `size=` instead of `reader_name=` (DALI's older form)
    is fixed too: the loader is given the same `size=` and counts it as DALI did (the samples
    read past an epoch's end start the next one under FILL, `last_batch_padded=True` starts at
    zero). A project's own subclass of the PyTorch iterator that only passes its arguments on,
    asks `super()` for what the loader has too and defines no private names of its own
    (`class LightningWrapper(DALIGenericIterator)`) derives from `DALITorchLoader` instead; a
    pipeline variable bound in each branch of an `if`/`else` before the iterator is fixed when
    every branch needs the same loader arguments. JAX's `@data_iterator` function becomes its
    migrated graph (`<name>_batches`) and a function of its name that makes `DALIJaxLoader` over
    it, so that its callers stay as they are (one device, `reader_name=`, FILL or DROP).
    Everything else (a list of pipelines, no `reader_name=` or `size=` over a reader,
    `sharding=`/`devices=`, other frameworks) keeps the pipeline in pipeline mode, with a TODO
    naming the manual step.
    """

    code = "DM010"
    name = "framework-iterator"
    message = "framework iterator from `nvidia.dali.plugin`"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.iterator_uses:
            guidance = FEED_GUIDANCE if site.name == FEED_NDARRAY else GUIDANCE.get(
                plugin_name(site.name), "iterate the migrated pipeline")
            yield self.finding(site.node, f"{iterator_name(site)}: {guidance}")
        for site in facts.iterator_subclasses:
            yield self.finding(site.node, f"`{site.detail}` subclasses `{site.name.rsplit('.', 1)[-1]}`, which "
                                          "needs a DALI pipeline; rewrite it over the migrated generator by hand")
