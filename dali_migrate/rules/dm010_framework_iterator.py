"""DM010: framework iterators from ``nvidia.dali.plugin``."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule

GUIDANCE = {
    "pytorch": "iterate the migrated generator and call `.torch()` on each Batch",
    "tf": "wrap the migrated generator with `tf.data.Dataset.from_generator`",
    "jax": "convert each Batch with `jax.dlpack.from_dlpack(ndd.as_tensor(batch))`",
    "mxnet": "convert each Batch through DLPack (`ndd.as_tensor(batch)`)",
    "paddle": "convert each Batch through DLPack (`ndd.as_tensor(batch)`)",
    "numba": "call the function on NumPy data between ndd calls",
}


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
    loader = DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader")
    for data in loader:
        images = data[0]["data"]
    ```

    ## Use instead
    ```python
    for images, labels in reader.next_epoch(batch_size=batch_size):
        images = images.torch()
    ```

    ## Fix safety
    Not fixed automatically: `last_batch_policy`, `auto_reset` and `output_map` decide how
    many batches an epoch has. Each site is marked with a TODO naming the manual step.
    """

    code = "DM010"
    name = "framework-iterator"
    message = "framework iterator from `nvidia.dali.plugin`"
    fix = "never"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.iterator_uses:
            guidance = GUIDANCE.get(plugin_name(site.name), "iterate the migrated pipeline")
            yield self.finding(site.node, f"`{site.name.rsplit('.', 1)[-1]}`: {guidance}")
