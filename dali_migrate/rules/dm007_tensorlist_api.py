"""DM007: TensorList indexing and methods on pipeline outputs."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule

REPLACEMENTS = {
    "[]": "`.tensors[i]`",
    "at": "`np.asarray(out.tensors[i])`",
    "as_cpu": "`.cpu()`",
    "as_array": "`np.asarray(ndd.as_tensor(out))`",
    "as_tensor": "`ndd.as_tensor(out)`",
    "shape": "the `.shape` property",
    "layout": "`(out.layout or \"\")`",
    "tensor_shape": "`list(ndd.as_tensor(out).shape)`",
    "len": "`.batch_size`",
    "as_reshaped_tensor": "`ndd.as_tensor(out)` and a reshape",
    "is_dense_tensor": "`len(set(out.shape)) <= 1`",
    "feed_ndarray": "`tensor.copy_(ndd.as_tensor(out).torch())`",
    "dtype": "`.dtype.type_id` (an ndd value's `dtype` is an ndd type; `type_id` is the `DALIDataType`)",
    "dtype_call": "`.dtype` (the deprecated call gives the buffer format, such as `\"=B\"`; an ndd value has "
                  "only the property: kept with a TODO)",
    "hasattr": "`hasattr(out, \"cpu\")` (an ndd Batch has `cpu()`, not `as_cpu()`)",
    "isinstance_gpu": "`out.device.device_type == \"gpu\"` (an ndd Batch is never a `TensorListGPU`)",
    "isinstance_cpu": "`out.device.device_type == \"cpu\"` (an ndd Batch is never a `TensorListCPU`)",
}
SPELLED = {"[]": "out[i]", "tensor_shape": "as_tensor().shape()", "feed_ndarray": "feed_ndarray(out, tensor)",
           "dtype": "out.dtype", "dtype_call": "out[i].dtype()", "isinstance_gpu": "isinstance(out, TensorListGPU)",
           "isinstance_cpu": "isinstance(out, TensorListCPU)", "hasattr": "hasattr(out, \"as_cpu\")"}


class TensorListApi(Rule):
    """
    ## What it does
    Flags pipeline-output (`TensorList`) access: `out[i]`, `out.at(i)`, `as_cpu()`,
    `as_array()`, `as_tensor()`, `shape()`, `layout()`, `len(out)`, and the methods of one
    sample (`out[i].shape()`, `sample.layout()` after `sample = out[i]`) or of `as_tensor()`.

    ## Why
    Dynamic mode returns `Batch` objects. A `Batch` has no `__getitem__` (a TypeError): sample
    selection is `batch.tensors[i]`, per-sample slicing is `batch.slice[...]`.

    ## Example
    ```python
    images, labels = pipe.run()
    first = labels.at(0)
    n = len(images)
    ```

    ## Use instead
    ```python
    images, labels = next(pipe)
    first = np.asarray(labels.tensors[0])
    n = images.batch_size
    ```

    ## Fix safety
    Safe: each replacement returns the same data. `at(i)` keeps returning a NumPy array.
    `is_dense_tensor()` becomes "every sample has one shape": pipeline outputs are stored
    contiguously (measured on DALI 2.4, CPU), so that is when a pipeline output was dense.
    `out.dtype` (also of a sample or of `as_tensor()`) becomes `out.dtype.type_id`: the same
    `DALIDataType`, which prints and compares as before (`== types.UINT8`).
    A sample's `shape()` (a list) becomes `list(sample.shape)` (ndd's is a tuple), or the
    tuple itself where `len`, `tuple` or `list` takes it; its `layout()` becomes
    `(sample.layout or "")`, as for a whole output.
    `isinstance(out, TensorListGPU)` (or `TensorListCPU`) becomes `out.device.device_type ==
    "gpu"` (`"cpu"`): an ndd Batch is never an instance of those classes, so the test would
    always be False and the branch it guards (often the copy to the host) would never run.
    `hasattr(out, "as_cpu")` asks for the ndd spelling, `hasattr(out, "cpu")`, for the same
    reason.
    `as_reshaped_tensor` is marked with a TODO, and so is `out[i].dtype()` (or
    `out.as_tensor().dtype()`): that deprecated call gives the buffer format (`"=B"`), which no
    ndd value gives; use the `.dtype` property first. `feed_ndarray(out, tensor)` (PyTorch plugin)
    becomes `tensor.copy_(out.torch())`: the same copy into the same tensor, which it returns;
    `feed_ndarray` refused a tensor of another size or dtype, and code that ran did not give one.
    """

    code = "DM007"
    name = "tensorlist-api"
    message = "TensorList API on a pipeline output"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.tensorlist_uses:
            spelled = SPELLED.get(site.detail, f"{site.detail}()")
            yield self.finding(site.node, f"`{spelled}` -> {REPLACEMENTS[site.detail]}")
