"""Outputs paired with names or numbers in a loop (`zip`, `enumerate`, and one inside the other)
are pipeline outputs to the migration and to the audit alike; a display helper that only they
reach migrates with the pipeline (fixture `named_outputs`, same data and program output)."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

PROGRAM = '''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


def show(batch, title):
    print(title, np.array(batch.at(0)).shape, len(batch))


def main(root):
    pipe = images_pipeline(root)
    pipe.build()
    outputs = pipe.run()
    names = ["images", "labels"]
{loop}
'''


@pytest.mark.parametrize("loop", [
    "    for name, batch in zip(names, outputs):\n        show(batch, name)",
    "    for batch, name in zip(outputs[:1], names):\n        show(batch, name)",
    "    for index, batch in enumerate(outputs):\n        show(batch, str(index))",
    "    for index, (name, batch) in enumerate(zip(names, outputs)):\n        show(batch, name)",
])
def test_a_helper_reached_through_zip_or_enumerate_migrates(loop):
    result = migrate_source(PROGRAM.format(loop=loop).encode(), "gallery.py", Config())
    assert result.error is None
    assert result.pipelines == [("images_pipeline", [])]
    assert "np.array(batch.tensors[0]).shape, batch.batch_size" in result.new_source.decode()


@pytest.mark.parametrize("loop", [
    "    for name, batch in zip(names, list(outputs)):\n        show(batch, name)",
    "    for name, batch in zip(names, outputs, strict=True):\n        show(batch, name)",
    "    pairs = zip(names, outputs)\n    for name, batch in pairs:\n        show(batch, name)",
])
def test_loops_the_model_does_not_follow_keep_the_pipeline(loop):
    result = migrate_source(PROGRAM.format(loop=loop).encode(), "gallery.py", Config())
    assert result.error is None
    assert dict(result.pipelines)["images_pipeline"], "kept, with the reason"
    assert b"pipe.run()" in result.new_source
