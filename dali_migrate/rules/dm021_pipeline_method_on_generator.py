"""DM021: pipeline method on a migrated generator."""

from __future__ import annotations

from .base import ValueRule


class PipelineMethodOnGenerator(ValueRule):
    """
    ## What it does
    Flags attributes other than `send`/`close`/`throw` (`.build()`, `.run()`, `.epoch_size()`,
    `.reset()`, `.checkpoint()`, ...) and `with` on a generator of ndd outputs: a function that
    yields Batches, such as a migrated pipeline, called here or in a helper that returns it.
    Also a framework iterator of `nvidia.dali.plugin` (`DALIGenericIterator(pipe, ...)`,
    `DALIGenericIterator([pipe], ...)`) given such a generator: those iterators take Pipelines.

    ## Why
    A migrated pipeline is a generator; pipeline methods fail with `AttributeError: 'generator'
    object has no attribute 'build'`. This is what a caller left in pipeline mode looks like
    after its pipeline moved (an interrupted run, a file not passed to the migration).

    ## Example
    ```python
    pipe = train_pipeline(DATA)  # now a generator
    pipe.build()
    ```

    ## Use instead
    ```python
    pipe = train_pipeline(DATA)
    images, labels = next(pipe)
    ```

    ## Fix safety
    Not fixed: run `dali-migrate` on the caller together with the pipeline's module.
    """

    code = "DM021"
    name = "pipeline-method-on-generator"
    message = "pipeline method on a migrated generator"
