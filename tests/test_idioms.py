"""NVIDIA's dynamic-mode idioms where they are exact, checked by running both programs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SHAPES_ONLY = f'''\
from nvidia.dali import fn, pipeline_def, types


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def decoded():
    jpegs, labels = fn.readers.file(file_root={str(FIXTURES / "data" / "images")!r})
    return fn.decoders.image(jpegs, output_type=types.RGB), labels


pipe = decoded()
pipe.build()
images, labels = pipe.run()
print([images.at(i).shape for i in range(len(images))], labels.at(0).shape)
'''


def test_a_sample_read_only_for_its_shape_needs_no_numpy(tmp_path):
    """``out.at(i).shape`` -> ``out.tensors[i].shape``: an ndd Tensor's shape is the same tuple
    of ints (measured), so no NumPy copy and no NumPy import."""
    pytest.importorskip("nvidia.dali")
    result = migrate_source(SHAPES_ONLY.encode(), "shapes.py", Config())
    migrated = result.new_source.decode()
    assert "[images.tensors[i].shape for i in range(images.batch_size)], labels.tensors[0].shape" in migrated
    assert "numpy" not in migrated
    printed = []
    for name, code in (("original.py", SHAPES_ONLY), ("migrated.py", migrated)):
        (tmp_path / name).write_text(code)
        done = subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        printed.append(done.stdout)
    assert printed[0].strip() and printed[0] == printed[1]
