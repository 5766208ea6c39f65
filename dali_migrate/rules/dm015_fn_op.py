"""DM015: other ``fn.*`` operator calls."""

from __future__ import annotations

from typing import Iterator

from ..analysis import MATH_MODULE, ModuleFacts
from .base import Finding, Rule
from .dm012_python_source import PYTHON_OPS


class FunctionalOp(Rule):
    """
    ## What it does
    Flags `fn.X(...)` and `nvidia.dali.math` calls that are neither readers, random ops nor Python operators (those
    have rules of their own), and says which `ndd.X` replaces each, per the op table generated
    from DALI.

    ## Why
    In dynamic mode `ndd.X(...)` runs the operator at once and returns a Batch; `fn.X` only
    adds a node to a graph.

    ## Example
    ```python
    images = fn.resize(images, resize_x=224, resize_y=224)
    ```

    ## Use instead
    ```python
    images = ndd.resize(images, resize_x=224, resize_y=224)
    ```

    ## Fix safety
    Safe where the op table names an ndd function (same operator, same arguments). Ops with
    no ndd equivalent (deprecated before DALI 2.0 without successor, pipeline-only ops) are
    marked with a TODO. `fn.constant` with its data written in the call becomes the same batch
    made from NumPy: `ndd.full(np.float32(0.5), shape=[1], batch_size=batch_size)` for one
    value, `ndd.batch([np.array([1, 2, 3], dtype=np.int32)] * batch_size)` for several (with
    `.reshape(shape)`, `layout=` and `device=` as given); data NumPy would convert otherwise
    than DALI (fractions or out-of-range values for an integer `dtype=`) keeps a TODO.
    `fn.shapes(x)` (deprecated in favour of the DataNode's shape) becomes
    `ndd.batch(x.shape, dtype=ndd.int64, device=x.device)`: the same per-sample 1-D tensors,
    `dtype=` kept; `x` must be a name. Operators in plain functions that graphs call
    (`def augment(images): return fn.resize(...)`) are migrated with those graphs when every
    use of the function is in a migrated graph and it holds no reader, source or subscript;
    otherwise the graphs stay in pipeline mode, with a TODO saying why. Random operators in
    such a function draw from the calling graph's RNG: it gets keyword-only `batch_size` and
    `rng` parameters that every call passes (so it must only be called by name, and a random
    operator with its own `seed=` keeps it).
    `nvidia.dali.math` functions become the `ndd.math` functions of the same name (bit for bit).
    """

    code = "DM015"
    name = "fn-op"
    message = "pipeline-mode operator call"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.qualname.startswith(MATH_MODULE):
                name = call.qualname.removeprefix(MATH_MODULE)
                detail = f"use `ndd.math.{name}`" if name in facts.optable.ndd_math else "no ndd equivalent"
                yield self.finding(call.node, f"`math.{name}`, {detail}")
                continue
            if not call.qualname.startswith("nvidia.dali.fn."):
                continue
            op = call.op
            if op is None:
                yield self.finding(call.node, f"`{call.qualname}` is not a DALI {facts.optable.dali_version} op")
            elif not (op.is_reader or op.random or op.fn in PYTHON_OPS):
                target = facts.optable.ndd_target(op)
                detail = f"use `ndd.{target}`" if target else "no ndd equivalent"
                if op.fn == "shapes":
                    detail = "use `ndd.batch(x.shape, dtype=ndd.int64, device=x.device)`"
                elif op.fn == "constant":
                    detail = "use `ndd.full(np.float32(x), shape=..., batch_size=...)` or `ndd.batch([array] * batch_size)`"
                yield self.finding(call.node, f"`fn.{op.fn}`, {detail}")
