"""`pipe.reset()`: DALI restarts only a pipeline whose external sources ended an epoch, so on a
pipeline that reads only from readers it does nothing and goes with `build()`; with sources it
keeps the pipeline."""

from __future__ import annotations

import pytest

from conftest import printed_by
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

READER = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


pipe = labels("images")
pipe.build()
for epoch in range(2):
    print(pipe.run()[0].at(0))
    if epoch == 0:
        pipe.reset()
'''
SOURCE = '''from nvidia.dali import fn, pipeline_def


def batches():
    yield [[1], [2]]


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def fed():
    return fn.external_source(source=batches, batch=True)


pipe = fed()
pipe.build()
print(pipe.run()[0].at(0))
pipe.reset()
'''


def test_reset_of_a_reader_pipeline_goes_with_build():
    result = migrate_source(READER.encode(), "epochs.py", Config())
    assert result.error is None and result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "reset" not in migrated and "    if epoch == 0:\n        pass\n" in migrated


def test_reset_after_sources_ended_keeps_the_pipeline():
    result = migrate_source(SOURCE.encode(), "fed.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "fed" and any("`pipe.reset()` starts the sources' next epoch" in r for r in reasons), reasons
    assert result.new_source is None or b"pipe.reset()" in result.new_source


HAND_DRIVEN = '''import numpy as np
from nvidia.dali import fn, pipeline_def


def batch(info):
    if info.iteration >= 2:
        raise StopIteration
    return [np.array([info.epoch_idx * 10 + info.iteration])] * 2


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def fed():
    return fn.external_source(source=batch, batch_info=True)


def epochs():
    pipe = fed()
    pipe.build()
    for _ in range(3):
        try:
            while True:
                print(pipe.run()[0].at(0))
        except StopIteration:
            pipe.reset()
'''


def test_a_reset_after_stop_iteration_reads_the_next_epoch_of_the_sources(tmp_path):
    result = migrate_source(HAND_DRIVEN.encode(), "fed.py", Config())
    assert result.pipelines == [("fed", [])]
    migrated = result.new_source.decode()
    assert "pipe = fed(mark_epoch_ends=True)\n" in migrated
    assert "print(np.asarray(next(pipe_epoch)[0].tensors[0]))" in migrated
    assert "        except StopIteration:\n            pipe_epoch = iter(pipe.__next__, None)\n" in migrated
    printed = printed_by(tmp_path, original=HAND_DRIVEN + "\nepochs()\n", migrated=migrated + "\nepochs()\n")
    assert printed["migrated"] == printed["original"]
    assert "[20]" in printed["original"]  # the third epoch was read


@pytest.mark.parametrize("change, reason", [
    ("        except StopIteration:\n            pipe.reset()\n",
     "        except StopIteration:\n            pass\n        pipe.reset()\n"),
    ("    pipe = fed()\n    pipe.build()\n", "    pipe.build()\n"),
])
def test_a_reset_the_migration_cannot_follow_keeps_the_pipeline(change, reason):
    source = HAND_DRIVEN.replace(change, reason)
    if "pipe = fed()" not in source:  # made in another function, held by the module
        source = source.replace("def epochs():", "pipe = fed()\n\n\ndef epochs():")
    result = migrate_source(source.encode(), "fed.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "fed" and any("`pipe.reset()` starts the sources' next epoch" in r for r in reasons), reasons
