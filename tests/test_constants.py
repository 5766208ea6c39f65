"""``fn.constant`` in a graph: a batch made from NumPy where NumPy makes exactly what DALI made,
and a TODO that says why wherever it would not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import check_file, migrate_source

IMAGES = str((FIXTURES / "data" / "images").resolve())

GRAPH = '''from nvidia.dali import fn, pipeline_def, types


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def constants():
    jpegs, labels = fn.readers.file(file_root={root!r})
    value = {constant}
    return value, labels
'''


def _migrated(constant: str):
    result = migrate_source(GRAPH.format(root=IMAGES, constant=constant).encode(), "constants.py", Config(line_length=120))
    assert result.error is None
    return result


@pytest.mark.parametrize("constant, reason", [
    ("fn.constant(fdata=[1.5, 2.5], dtype=types.INT32)", "DALI rounds fractional values to `int32`, NumPy truncates"),
    ("fn.constant(idata=[300], dtype=types.UINT8)", "DALI saturates values outside `uint8`, NumPy does not"),
    ("fn.constant(fdata=[1.0, 2.0, 3.0], shape=[2, 2])", "3 values do not fill `shape=[2, 2]`"),
    ("fn.constant(fdata=SCALE)", "give its data as numbers written in the call"),
    ("fn.constant(fdata=0.5, shape=dims)", "give `shape=` as a list of whole numbers written in the call"),
    ("fn.constant(fdata=0.5, dtype=types.BOOL)", "give `dtype=` as a numeric `types.<TYPE>` constant"),
])
def test_a_constant_numpy_would_make_otherwise_keeps_the_pipeline(constant, reason):
    result = _migrated(constant)
    [(name, reasons)] = result.pipelines
    assert name == "constants"
    assert any(f"`fn.constant`: {reason}" in r for r in reasons), reasons
    assert f"value = {constant}" in result.new_source.decode()


@pytest.mark.parametrize("constant, written", [
    ("fn.constant(fdata=1.0 / 255)", "ndd.full(np.float32(1.0 / 255), shape=[1], batch_size=batch_size)"),
    ("fn.constant(idata=[1, 2, 3])", "ndd.batch([np.array([1, 2, 3], dtype=np.int32)] * batch_size)"),
    ("fn.constant(idata=(1, 2), shape=[2])", "ndd.batch([np.array([1, 2], dtype=np.int32)] * batch_size)"),
    ("fn.constant(idata=3, device=\"cpu\")", "ndd.full(np.int32(3), shape=[1], batch_size=batch_size, device=\"cpu\")"),
    ("fn.constant(fdata=[1.0, 2.0], dtype=types.INT8)", "ndd.batch([np.array([1.0, 2.0], dtype=np.int8)] * batch_size)"),
])
def test_a_constant_becomes_the_same_batch_from_numpy(constant, written):
    result = _migrated(constant)
    assert result.pipelines == [("constants", [])]
    assert f"value = {written}" in result.new_source.decode()


def test_check_says_what_replaces_a_constant():
    source = GRAPH.format(root=IMAGES, constant="fn.constant(fdata=0.5)").encode()
    [finding] = [d for d in check_file(source, "constants.py", Config()).diagnostics if d.code == "DM015"]
    assert "ndd.full(" in finding.message


PER_SAMPLE = f'''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
def graph():
    jpegs, labels = fn.readers.file(file_root={IMAGES!r})
    if labels[0] > 0:
        extra = fn.constant(fdata=[1.0, 2.0])
        scale = fn.constant(fdata=2.0)
    else:
        extra = fn.constant(fdata=[3.0, 4.0])
        scale = fn.constant(fdata=0.5)
    return extra * scale, labels


pipe = graph()
pipe.build()
for _ in range(3):
    e, l = pipe.run()
    print(np.asarray(e.as_tensor()).tolist(), l.as_array().ravel().tolist())
'''


def test_a_constant_in_a_per_sample_branch_is_one_tensor_and_the_program_prints_the_same(tmp_path):
    pytest.importorskip("nvidia.dali")
    result = migrate_source(PER_SAMPLE.encode(), "branches.py", Config())
    assert result.pipelines == [("graph", [])]
    migrated = result.new_source.decode()
    assert "extra = ndd.as_tensor(np.array([1.0, 2.0], dtype=np.float32))" in migrated
    assert "scale = ndd.full(np.float32(0.5), shape=[1])" in migrated
    outputs = []
    for name, code in (("original.py", PER_SAMPLE), ("migrated.py", migrated)):
        (tmp_path / name).write_text(code)
        done = subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0].strip() and outputs[0] == outputs[1]


HELPER = f'''from nvidia.dali import fn, pipeline_def, types


def normalize(images):
    return fn.cast(images, dtype=types.FLOAT) * fn.constant(fdata=0.5)


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def graph():
    jpegs, labels = fn.readers.file(file_root={IMAGES!r})
    return normalize(fn.decoders.image(jpegs)), labels
'''


def test_a_constant_in_a_graph_helper_keeps_the_pipeline_with_a_reason():
    """It was an internal error (the helper's op was written as `ndd.None`)."""
    result = migrate_source(HELPER.encode(), "helper.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "graph"
    assert any("`normalize()` builds part of the graph with `fn`: it calls `fn.constant`" in r for r in reasons)
    assert b"fn.constant(fdata=0.5)" in result.new_source
