"""A random operator's own `seed=` read from a name the graph computes (`s = 42`, then
`fn.random.coin_flip(seed=s)`): its RNG was made at the top of the generator, before `s`
existed (UnboundLocalError on the first batch, reported migrated). It is made right after the
line that computes the seed; a seed computed in a block or from an operator keeps the pipeline."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source
from dali_migrate.verify import VerifyOptions, verify_files

pytest.importorskip("nvidia.dali")

PROGRAM = '''from nvidia.dali import fn, pipeline_def

IMAGES = {images!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
def flips(root):
{seed_lines}
    jpegs, labels = fn.readers.file(file_root=root)
    flip = fn.random.coin_flip(probability=0.5, seed=s)
    return flip, labels


pipe = flips(IMAGES)
pipe.build()
for _ in range(3):
    flip, labels = pipe.run()
    print(flip.as_array().ravel().tolist(), labels.as_array().ravel().tolist())
'''
IMAGES = str((FIXTURES / "data" / "images").resolve())


def _assert_bit_exact(tmp_path, source: str, code: str) -> None:
    """The harness runs both, with the RNG streams aligned: every sample equal."""
    original, migrated = tmp_path / "original.py", tmp_path / "migrated.py"
    original.write_text(source)
    migrated.write_text(code)
    report = verify_files(original, migrated, VerifyOptions(iterations=3, rtol=0, atol=0))
    [pipeline] = report.pipelines
    assert pipeline.migrated.ok, pipeline.migrated.error
    assert pipeline.rng_aligned and pipeline.comparison.mismatches == []


def test_the_rng_is_made_after_the_line_computing_its_seed_and_draws_the_same(tmp_path):
    source = PROGRAM.format(images=IMAGES, seed_lines="    base = 40\n    s = base + 2")
    result = migrate_source(source.encode(), "flips.py", Config())
    assert result.pipelines == [("flips", [])]
    code = result.new_source.decode()
    assert code.index("s = base + 2") < code.index("coin_flip_rng = ndd.random.RNG(seed=s)") < code.index("while")
    _assert_bit_exact(tmp_path, source, code)


def test_a_seed_computed_in_a_block_keeps_the_pipeline():
    source = PROGRAM.format(images=IMAGES, seed_lines="    if IMAGES:\n        s = 1\n    else:\n        s = 2")
    result = migrate_source(source.encode(), "flips.py", Config())
    [(_, reasons)] = result.pipelines
    assert "the `seed=` of `coin_flip` reads `s`" in reasons[0]


SEEDED_HELPER = '''import glob
import os

from nvidia.dali import fn, pipeline_def, types

FILES = sorted(glob.glob(os.path.join({images!r}, "*", "*.jpg")))


def random_flip(images, probability, seed):
    flip = fn.random.coin_flip(probability=1 - probability, seed=seed)
    return fn.flip(images, horizontal=flip)


@pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=9)
def pairs(files):
    common = 1234
    jpegs, _ = fn.readers.file(files=files)
    images = fn.resize(fn.decoders.image(jpegs, device="cpu"), size=[8, 8])
    masks = fn.resize(fn.decoders.image(jpegs, device="cpu"), size=[8, 8])
    return random_flip(images, 0.5, common), random_flip(masks, 0.5, seed=common){more}


pipe = pairs(FILES)
pipe.build()
for _ in range(3):
    images, masks = pipe.run()
    print([bool((images.at(i) == masks.at(i)).all()) for i in range(3)])
'''


def test_each_call_of_a_seeded_helper_gets_its_own_rng_and_the_data_is_the_same(tmp_path):
    """`random_flip(images, 0.5, common)` and `random_flip(masks, 0.5, seed=common)` made two
    operators seeded alike, so images and masks flip together; each call now gets an RNG of
    its own, seeded by its argument."""
    source = SEEDED_HELPER.format(images=IMAGES, more="")
    result = migrate_source(source.encode(), "pairs.py", Config())
    assert result.pipelines == [("pairs", [])]
    code = result.new_source.decode()
    assert "random_flip_rng = ndd.random.RNG(seed=common)" in code
    assert "random_flip_rng_1 = ndd.random.RNG(seed=common)" in code
    assert "rng=random_flip_rng_1" in code and "ndd.random.RNG(seed=seed)" not in code
    _assert_bit_exact(tmp_path, source, code)


@pytest.mark.parametrize("change, reason", [
    (("    flip = fn.random.coin_flip(", "    seed = seed + 1\n    flip = fn.random.coin_flip("), "which it rebinds"),
    (("return fn.flip(images, horizontal=flip)",
      "return fn.flip(images, horizontal=flip)\n\n\ndef twice(images):\n    return random_flip(images, 0.5, 7)"),
     "something else than a graph calls it"),
])
def test_a_seeded_helper_the_migration_cannot_follow_keeps_the_pipeline(change, reason):
    source = SEEDED_HELPER.format(images=IMAGES, more="").replace(*change)
    result = migrate_source(source.encode(), "pairs.py", Config())
    [(_, reasons)] = result.pipelines
    assert reason in reasons[0]


def test_a_seed_the_graph_computes_under_the_generators_name_is_renamed_first(tmp_path):
    """`seed = 40 + 2` then `coin_flip(seed=seed)`: the graph's `seed` becomes `seed_`, and the
    RNG is made after `seed_ = ...` (made before it, it was an UnboundLocalError)."""
    source = PROGRAM.format(images=IMAGES, seed_lines="    seed = 40 + 2\n    s = seed")
    source = source.replace("fn.random.coin_flip(probability=0.5, seed=s)", "fn.random.coin_flip(probability=0.5, seed=seed)")
    result = migrate_source(source.encode(), "flips.py", Config())
    assert result.pipelines == [("flips", [])]
    code = result.new_source.decode()
    assert code.index("seed_ = 40 + 2") < code.index("coin_flip_rng = ndd.random.RNG(seed=seed_)")
    _assert_bit_exact(tmp_path, source, code)
