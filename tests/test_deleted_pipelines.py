"""``del pipe`` (notebooks free a pipeline before making the next one): the name then holds a
generator, and deleting it frees that as it freed the pipeline. The pipeline was kept ("`pipe`
is used as a value in `del pipe`")."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, printed_by
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEAD = f'''import numpy as np
from nvidia.dali import fn, pipeline_def

IMAGES = {str(FIXTURES / "data" / "images")!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root, size):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.resize(fn.decoders.image(jpegs), resize_x=size, resize_y=size), labels


'''


@pytest.mark.parametrize("body", [
    "pipe = images_pipeline(IMAGES, 8)\npipe.build()\nimages, labels = pipe.run()\ndel pipe\n"
    "print(np.array(labels.at(0)), np.array(images.at(1)).sum())\n",
    "def first(size):\n    pipe = images_pipeline(IMAGES, size)\n    pipe.build()\n    out = pipe.run()\n"
    "    del out, pipe\n    return size\n\nprint(first(4))\n",
    "small = images_pipeline(IMAGES, 4)\nsmall.build()\nprint(np.array(small.run()[0].at(0)).shape)\n"
    "del small\nlarge = images_pipeline(IMAGES, 8)\nlarge.build()\nprint(np.array(large.run()[0].at(0)).shape)\n",
])
def test_a_deleted_pipeline_migrates(tmp_path, body):
    original = HEAD + body
    result = migrate_source(original.encode(), "deleted.py", Config())
    assert result.pipelines == [("images_pipeline", [])]
    migrated = result.new_source.decode()
    assert "del " in migrated and ".build()" not in migrated
    printed = printed_by(tmp_path, original=original, migrated=migrated)
    assert printed["migrated"] == printed["original"] != ""


def test_a_deleted_pipeline_read_afterwards_stays_an_error_of_its_own():
    """``del`` accounts for the deleted name only: a later use is still judged."""
    original = HEAD + "pipe = images_pipeline(IMAGES, 8)\npipe.build()\ndel pipe\nkeep = [pipe]\n"
    [(name, reasons)] = migrate_source(original.encode(), "deleted.py", Config()).pipelines
    assert any("keep = [pipe]" in reason for reason in reasons), reasons
