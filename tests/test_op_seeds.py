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


SEEDED_NON_RANDOM_OP = '''import numpy as np
from nvidia.dali import fn, pipeline_def, types

IMAGES = {images!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def normalized(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, seed=1)
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    return fn.crop_mirror_normalize(images, crop=(8, 8), dtype=types.FLOAT, seed=3), labels


pipe = normalized(IMAGES)
pipe.build()
for _ in range(2):
    images, labels = pipe.run()
    print(np.asarray(images.as_tensor()).sum(), labels.as_array().ravel().tolist())
'''


def test_a_seed_on_an_operator_that_draws_nothing_is_dropped(tmp_path):
    """DALI ignores it (with a DeprecationWarning); ndd operators other than readers take no
    ``seed=`` at all (TypeError), so keeping it was reported migrated and crashed."""
    from conftest import printed_by

    source = SEEDED_NON_RANDOM_OP.format(images=IMAGES)
    result = migrate_source(source.encode(), "train.py", Config())
    code = result.new_source.decode()
    assert result.pipelines == [("normalized", [])]
    assert "seed=3" not in code and "seed=1" in code  # the reader keeps its shuffling seed
    printed = printed_by(tmp_path, original=source, migrated=code)
    assert printed["migrated"] == printed["original"]


def test_the_audit_catches_a_seed_given_to_an_ndd_operator():
    """Migrated code that still passes ``seed=`` to an ndd operator would crash: the audit says
    so; a reader's seed and an RNG's are theirs to take."""
    from dali_migrate.audit import audit

    source = ("import nvidia.dali.experimental.dynamic as ndd\n\n"
              "reader = ndd.readers.File(file_root='/data', random_shuffle=True, seed=1)\n"
              "rng = ndd.random.RNG(seed=2)\n"
              "for jpegs, labels in reader.next_epoch(batch_size=2):\n"
              "    images = ndd.crop_mirror_normalize(ndd.decoders.image(jpegs), seed=3)\n")
    found = [(problem.code, problem.line) for problem in audit(source.encode())]
    assert found == [("DM024", 6)]


def test_check_reports_the_seed_the_migration_drops():
    from dali_migrate.engine import check_source

    source = SEEDED_NON_RANDOM_OP.format(images=IMAGES)
    found = [d for d in check_source(source.encode(), "train.py", Config()).diagnostics if d.code == "DM016"]
    assert [(d.line, "no random numbers" in d.message) for d in found] == [(11, True)]
