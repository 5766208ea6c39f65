"""A pipeline handed to a function of its module that builds the PyTorch iterator or reads the
epoch size (``wrap(train_pipe(...))``, as public loaders write it): the function takes the
reader's metadata with the generator's first ``next()``, where every pipeline handed in is new,
and the loader's batch size is a number it can write there."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

IMAGES = str((FIXTURES / "data" / "images").resolve())

PROGRAM = f'''from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy


@pipeline_def(num_threads=1, device_id=None)
def images(root, size, shard_id=0, num_shards=1):
    jpegs, labels = fn.readers.file(file_root=root, shard_id=shard_id, num_shards=num_shards, name="Reader")
    decoded = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=size, resize_y=size)
    return fn.crop_mirror_normalize(decoded, dtype=types.FLOAT, output_layout="CHW"), labels


@pipeline_def(num_threads=1, device_id=None)
def grays(root, size):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    decoded = fn.resize(fn.decoders.image(jpegs, output_type=types.GRAY), resize_x=size, resize_y=size)
    return fn.cast(decoded, dtype=types.FLOAT), labels


def wrap(pipeline, policy=LastBatchPolicy.PARTIAL):
    """The loader, and its steps per epoch."""
    pipeline.build()
    steps = -(-pipeline.epoch_size("Reader") // 4)
    return DALIClassificationIterator(pipeline, reader_name="Reader", last_batch_policy=policy), steps


def show(loader, steps, epochs=2):
    for epoch in range(epochs):
        for step, data in enumerate(loader):
            x, y = data[0]["data"], data[0]["label"]
            print(epoch, step, steps, tuple(x.shape), round(float(x.sum()), 1), y.view(-1).tolist())
        loader.reset()


show(*wrap(images({IMAGES!r}, 16, shard_id=1, num_shards=2, batch_size=4)))
gray = grays({IMAGES!r}, 8, batch_size=4)
gray.build()
show(*wrap(gray, LastBatchPolicy.FILL))
'''


def _printed(tmp_path, *programs: str) -> list[str]:
    """What each program prints, run as a script."""
    outputs = []
    for number, code in enumerate(programs):
        (tmp_path / f"program{number}.py").write_text(code)
        done = subprocess.run([sys.executable, str(tmp_path / f"program{number}.py")], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    return outputs


def _migrated(source: str):
    result = migrate_source(source.encode(), "handed.py", Config())
    assert result.error is None
    return result


@pytest.mark.parametrize("batch, loader_batch", [
    ("4", "batch_size=4"),
    # not in scope where the loader is made: the generator's metadata carries it
    ("BATCH", 'batch_size=pipeline_reader_meta["batch_size"]'),
])
def test_the_function_takes_the_metadata_and_the_program_prints_the_same(tmp_path, batch, loader_batch):
    pytest.importorskip("nvidia.dali")
    pytest.importorskip("torch")
    program = PROGRAM.replace("batch_size=4)", f"batch_size={batch})").replace("\n\n\n@pipeline_def", "\nBATCH = 4\n\n\n@pipeline_def", 1)
    result = _migrated(program)
    assert result.pipelines == [("images", []), ("grays", [])]
    migrated = result.new_source.decode()
    assert '"""The loader, and its steps per epoch."""\n    pipeline_reader_meta = next(pipeline)\n' in migrated
    assert migrated.count("next(pipeline)") == 1
    assert migrated.count("yield_reader_meta=True") == 2
    assert 'steps = -(-pipeline_reader_meta["epoch_size_padded"] // 4)' in migrated
    assert loader_batch in migrated
    assert migrated.count("get_metadata(), batch_size=batch_size)") == (2 if batch == "BATCH" else 0)
    original, new = _printed(tmp_path, program, migrated)
    assert original.count("\n") == 10 and original == new


TWO_READERS = '''from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator


@pipeline_def(num_threads=1, device_id=None)
def pairs(root):
    images, _ = fn.readers.file(file_root=root, name="Images")
    masks, _ = fn.readers.file(file_root=root, name="Masks")
    return images, masks


def wrap(pipeline):
    return DALIGenericIterator(pipeline, ["image", "mask"], reader_name="Images")


def loader(root, batch):
    return wrap(pairs(root, batch_size=batch))
'''


def test_a_variable_the_caller_also_runs_keeps_the_pipeline():
    """The caller read a batch before handing the pipeline in: the function's first `next()`
    would not be the metadata."""
    source = PROGRAM.replace("gray.build()\n", "gray.build()\ngray.run()\n")
    result = _migrated(source)
    reasons = dict(result.pipelines)["grays"]
    assert any("`pipeline` is handed a pipeline through a variable that the caller uses otherwise too" in r
               for r in reasons), reasons
    assert result.new_source is None or b"next(pipeline)" not in result.new_source


def test_the_epoch_size_alone_needs_no_number_for_the_batch_size():
    source = PROGRAM.replace('return DALIClassificationIterator(pipeline, reader_name="Reader", '
                             'last_batch_policy=policy), steps', 'return steps')
    source = source.replace(f"show(*wrap(images({IMAGES!r}, 16, shard_id=1, num_shards=2, batch_size=4)))",
                            f"BATCH = 3\nprint(wrap(images({IMAGES!r}, 16, batch_size=BATCH)))")
    source = source.replace("show(*wrap(gray, LastBatchPolicy.FILL))", "print(wrap(gray))")
    result = _migrated(source)
    assert result.pipelines == [("images", []), ("grays", [])]
    assert "pipeline_reader_meta = next(pipeline)" in result.new_source.decode()


def test_a_batch_size_not_written_as_a_number_keeps_a_pipeline_of_several_readers():
    result = _migrated(TWO_READERS)
    [(name, reasons)] = result.pipelines
    assert any("and the pipeline has several readers" in r for r in reasons), reasons


def test_a_function_defined_inside_that_reads_the_metadata_keeps_the_pipeline():
    source = PROGRAM.replace('    steps = -(-pipeline.epoch_size("Reader") // 4)\n',
                             '    def count():\n        return -(-pipeline.epoch_size("Reader") // 4)\n\n'
                             '    steps = count()\n')
    result = _migrated(source)
    reasons = [r for _, rs in result.pipelines for r in rs]
    assert any("`pipeline`'s metadata is read in a function `wrap()` defines" in r for r in reasons), reasons


WRAPPER_CLASS = f'''from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.plugin.pytorch import DALIClassificationIterator


@pipeline_def(num_threads=1, device_id=None)
def images(root, size):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    decoded = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=size, resize_y=size)
    return fn.cast(decoded, dtype=types.FLOAT), labels


class ClassificationWrapper:
    """Gives (images, targets) for a pipeline, steps counted by the wrapper."""

    def __init__(self, pipeline, world_size=1):
        self.samples = pipeline.epoch_size("Reader") // world_size
        self.loader = DALIClassificationIterator(pipeline, size=self.samples, fill_last_batch=False, auto_reset=True)

    def __len__(self):
        return -(-self.samples // 4)

    def __iter__(self):
        for data in self.loader:
            yield data[0]["data"], data[0]["label"].view(-1)


def make(root, batch_size):
    pipe = images(root, 8, batch_size=batch_size)
    pipe.build()
    return ClassificationWrapper(pipe)


loader = make({IMAGES!r}, 4)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        print(epoch, step, len(loader), tuple(x.shape), float(x.sum()), y.tolist())
'''


def test_a_wrapper_class_takes_the_metadata_in_its_init_and_the_program_prints_the_same(tmp_path):
    pytest.importorskip("nvidia.dali")
    pytest.importorskip("torch")
    result = _migrated(WRAPPER_CLASS)
    assert result.pipelines == [("images", [])]
    migrated = result.new_source.decode()
    assert ('"""Gives (images, targets) for a pipeline, steps counted by the wrapper."""\n\n'
            '    def __init__(self, pipeline, world_size=1):\n        pipeline_reader_meta = next(pipeline)\n') in migrated
    assert 'batch_size=pipeline_reader_meta["batch_size"],\n            size=self.samples,' in migrated
    original, new = _printed(tmp_path, WRAPPER_CLASS, migrated)
    assert original.count("\n") == 6 and original == new


@pytest.mark.parametrize("change", [
    "class ClassificationWrapper(Base):",  # its base's __init__ may read the pipeline too
    "@dataclass\nclass ClassificationWrapper:",
])
def test_a_class_whose_init_is_not_all_it_runs_keeps_the_pipeline(change):
    source = WRAPPER_CLASS.replace("class ClassificationWrapper:", change)
    result = _migrated(source)
    [(name, reasons)] = result.pipelines
    assert reasons and "next(pipeline)" not in (result.new_source or b"").decode()


@pytest.mark.parametrize("batch, steps, takes_meta", [
    ("4", "return 100 // 4", False),  # copied: nothing to take from the generator
    ("BATCH", 'return 100 // pipeline_reader_meta["batch_size"]', True),
])
def test_a_batch_size_read_in_the_function_is_copied_or_comes_with_the_metadata(batch, steps, takes_meta):
    source = PROGRAM.split("\n\ndef wrap(")[0] + f'''

BATCH = 4


def steps(pipeline):
    return 100 // pipeline.max_batch_size


print(steps(grays("x", 8, batch_size={batch})))
'''
    result = _migrated(source)
    assert dict(result.pipelines)["grays"] == [], result.pipelines
    migrated = result.new_source.decode()
    assert steps in migrated
    assert ("pipeline_reader_meta = next(pipeline)" in migrated) is takes_meta
    assert ("yield_reader_meta=True" in migrated) is takes_meta
