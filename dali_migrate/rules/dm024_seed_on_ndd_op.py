"""DM024: seed given to an ndd operator function."""

from __future__ import annotations

from .base import ValueRule


class SeedOnNddOp(ValueRule):
    """
    ## What it does
    Flags `seed=` passed to an ndd operator function (`ndd.crop_mirror_normalize`,
    `ndd.random.uniform`, ...).

    ## Why
    In pipeline mode every operator took `seed=`, and DALI ignored it on operators that draw no
    random numbers. In dynamic mode only the readers (and `ndd.random.RNG`) take one: on any
    other operator it is a TypeError (checked against every ndd operator of DALI 2.4). A random
    operator draws from the `rng=` it is given.

    ## Example
    ```python
    mirror = ndd.random.coin_flip(batch_size=32, seed=7)
    images = ndd.crop_mirror_normalize(images, mirror=mirror, seed=7)
    ```

    ## Use instead
    ```python
    rng = ndd.random.RNG(seed=7)
    mirror = ndd.random.coin_flip(batch_size=32, rng=rng)
    images = ndd.crop_mirror_normalize(images, mirror=mirror)
    ```

    ## Fix safety
    Not fixed: reported for a person (`migrate` itself moves a random operator's seed into an
    RNG and drops it elsewhere, DM016).
    """

    code = "DM024"
    name = "seed-on-ndd-op"
    message = "seed given to an ndd operator function"
