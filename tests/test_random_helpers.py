"""Module-level graph helpers with random operators take the caller's batch size and RNG
(fixtures multicrop_views and swav_crops run the common shapes); here the names that could
trip that up: a helper named like an operator (`flip` beside `fn.flip`), helpers with
parameters already called `rng` and `batch_size`, a helper called from a function the graph
defines, and helpers that must stay."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

pytest.importorskip("nvidia.dali")

SOURCE = f'''\
import nvidia.dali.fn as fn
from nvidia.dali import pipeline_def

DATA = {str(FIXTURES / "data" / "images")!r}


def flip(images, rng=None, *, p=0.5):
    return fn.flip(images, horizontal=fn.random.coin_flip(probability=p))


def shift(images, batch_size=1):
    return fn.crop(images, crop=(8, 8), crop_pos_x=fn.random.uniform(range=[0.0, 1.0]))


@pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=5)
def graph(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.decoders.image(jpegs)

    def both(x):
        return shift(flip(x, None, p=0.3))

    return both(images), flip(images), labels


if __name__ == "__main__":
    pipe = graph(DATA)
    pipe.build()
    a, b, c = pipe.run()
    print(a.as_tensor().shape(), len(b), c.as_array().ravel())
'''


def test_helpers_get_parameters_that_clash_with_nothing_and_run_equal(tmp_path):
    from dali_migrate.verify import VerifyOptions, verify_files

    result = migrate_source(SOURCE.encode(), "adv.py", Config())
    assert result.pipelines == [("graph", [])]
    migrated = result.new_source.decode()
    assert "def flip(images, rng=None, *, p=0.5, batch_size, rng_1):" in migrated
    assert "def shift(images, batch_size=1, *, batch_size_1, rng):" in migrated
    assert "flip(x, None, p=0.3, batch_size=batch_size, rng_1=rng)" in migrated
    original, target = tmp_path / "adv.py", tmp_path / "adv_migrated.py"
    original.write_text(SOURCE)
    target.write_text(migrated)
    report = verify_files(original, target, VerifyOptions(args={"root": str(FIXTURES / "data" / "images")},
                                                          iterations=3, rtol=0, atol=0))
    (pipeline,) = report.pipelines
    assert pipeline.original.ok and pipeline.migrated.ok, (pipeline.original.error, pipeline.migrated.error)
    assert pipeline.rng_aligned and pipeline.comparison.mismatches == []


@pytest.mark.parametrize("helper, reason", [
    ("SEED = 3\n\n\ndef noisy(images):\n    return images + fn.random.normal(images, seed=SEED)\n",
     "has a `seed=` of its own that is neither a number nor one of the"),
    ("def noisy(images):\n    return images + fn.random.normal(images)\n\n\nNOISES = [noisy]\n",
     "it draws from its caller's RNG, so it must only be called by name"),
    ("def noisy(images):\n    return images + fn.random.normal(images)\n\n\nSAMPLE = noisy(None)\n",
     "`module-level code` uses it too"),
    # `ndd.batch(x.shape, device=x.device)` would run the random crop twice
    ("def noisy(images):\n    return fn.shapes(fn.crop(images, crop=(4, 4), crop_pos_x=fn.random.uniform()))\n",
     "`fn.shapes`: give it one input, by name"),
])
def test_a_random_helper_that_cannot_follow_its_caller_keeps_the_graph(helper, reason):
    source = f'''\
import nvidia.dali.fn as fn
from nvidia.dali import pipeline_def


{helper}

@pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
def graph(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return noisy(fn.decoders.image(jpegs)), labels
'''
    result = migrate_source(source.encode(), "noisy.py", Config())
    ((name, reasons),) = result.pipelines
    assert any(reason in r for r in reasons), reasons
    assert result.new_source is None or b"@pipeline_def" in result.new_source
