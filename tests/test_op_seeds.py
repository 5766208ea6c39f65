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


def test_the_rng_is_made_after_the_line_computing_its_seed_and_draws_the_same(tmp_path):
    source = PROGRAM.format(images=IMAGES, seed_lines="    base = 40\n    s = base + 2")
    result = migrate_source(source.encode(), "flips.py", Config())
    assert result.pipelines == [("flips", [])]
    code = result.new_source.decode()
    assert code.index("s = base + 2") < code.index("coin_flip_rng = ndd.random.RNG(seed=s)") < code.index("while")
    original, migrated = tmp_path / "flips.py", tmp_path / "flips_ndd.py"
    original.write_text(source)
    migrated.write_text(code)
    report = verify_files(original, migrated, VerifyOptions(iterations=3, rtol=0, atol=0))
    [pipeline] = report.pipelines
    assert pipeline.migrated.ok, pipeline.migrated.error
    assert pipeline.rng_aligned and pipeline.comparison.mismatches == []


def test_a_seed_computed_in_a_block_keeps_the_pipeline():
    source = PROGRAM.format(images=IMAGES, seed_lines="    if IMAGES:\n        s = 1\n    else:\n        s = 2")
    result = migrate_source(source.encode(), "flips.py", Config())
    [(_, reasons)] = result.pipelines
    assert "the `seed=` of `coin_flip` reads `s`" in reasons[0]
