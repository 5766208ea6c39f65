"""DM020: pipeline-mode operator applied to ndd values."""

from __future__ import annotations

from .base import ValueRule


class PipelineApiOnNdd(ValueRule):
    """
    ## What it does
    Flags `fn.*`, `ops.*`, `nvidia.dali.math.*`, `nvidia.dali.auto_aug` and framework-plugin
    calls that receive ndd Batches or Tensors.

    ## Why
    These build pipeline graphs out of DataNodes; given ndd values they fail, or build a graph
    that never runs. `auto_aug` (`rand_augment`, `auto_augment`, `trivial_augment`) has no
    dynamic-mode form in DALI 2.4.

    ## Example
    ```python
    images, labels = next(pipe)
    images = fn.resize(images, size=224)
    ```

    ## Use instead
    ```python
    images = ndd.resize(images, size=224)
    ```

    ## Fix safety
    Not fixed: reported for a person. The migration keeps a pipeline whose migrated code would
    do this.
    """

    code = "DM020"
    name = "pipeline-api-on-ndd"
    message = "pipeline-mode operator applied to ndd values"
