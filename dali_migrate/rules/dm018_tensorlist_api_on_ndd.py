"""DM018: TensorList API on an ndd value."""

from __future__ import annotations

from .base import ValueRule


class TensorListApiOnNdd(ValueRule):
    """
    ## What it does
    Flags pipeline-output (`TensorList`) habits applied to dynamic-mode values: `batch[i]`,
    `.at(i)`, `.as_array()`, `.as_cpu()`, `.as_tensor()`, `.shape()`, `.layout()` and `len()`
    on an ndd Batch or Tensor, and `.tensors`/`.slice`/`.select` on a value that is certainly
    not a Batch (a NumPy array, a literal). Values are followed through assignments, unpacking,
    tuples, loops, `.cpu()`/`.gpu()`, and into functions of the same module.

    ## Why
    An ndd Batch has no `__getitem__` (a TypeError) and no TensorList methods; an ndd Tensor has
    `.cpu()`, not `.as_cpu()`. Code migrated by hand keeps these calls most often.

    ## Example
    ```python
    images, labels = next(pipe)
    first = labels.at(0)
    n = len(images)
    ```

    ## Use instead
    ```python
    images, labels = next(pipe)
    first = np.asarray(labels.select(0))
    n = images.batch_size
    ```

    ## Fix safety
    Not fixed: reported for a person. In migrated code the audit keeps the pipeline instead.
    """

    code = "DM018"
    name = "tensorlist-api-on-ndd"
    message = "TensorList API on an ndd value"
