"""A display helper in a module of its own (DALI's getting-started shape: ``from display import
show_images``) is migrated with the files that pass it migrated outputs, or left with its callers'
TODOs when any use of it is out of reach."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from conftest import FIXTURES
from dali_migrate.cli import main

IMAGES = (FIXTURES / "data" / "images").resolve()

EXPLORE = f'''\
import numpy as np
from nvidia.dali import fn, pipeline_def

from display import show_images

IMAGES = {str(IMAGES)!r}


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def simple_pipeline():
    jpegs, labels = fn.readers.file(file_root=IMAGES)
    images = fn.decoders.image(jpegs, device="cpu")
    return images, labels


pipe = simple_pipeline()
pipe.build()
images, labels = pipe.run()
show_images(images, columns=2)
show_images(image_batch=images)
print(np.array(labels.as_tensor()).ravel())
'''

DISPLAY = '''\
import math


def show_images(image_batch, columns=4):
    rows = math.ceil(len(image_batch) / columns)
    print("grid", rows, columns)
    for j in range(len(image_batch)):
        image = image_batch.at(j)
        print(j, image.shape, image.dtype, int(image.sum()))
'''


def _project(root: Path, display: str = DISPLAY) -> Path:
    (root / "explore.py").write_text(EXPLORE)
    (root / "display.py").write_text(display)
    return root


def _run(root: Path) -> str:
    done = subprocess.run([sys.executable, "explore.py"], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _migrate(*paths: Path):
    return CliRunner().invoke(main, [str(p) for p in paths])


def test_the_helper_is_migrated_with_its_caller_and_the_program_prints_the_same(tmp_path):
    root = _project(tmp_path)
    before = _run(root)
    result = _migrate(root / "explore.py", root / "display.py")
    assert result.exit_code == 0, result.output
    assert "0 left with a TODO" in result.output
    display = (root / "display.py").read_text()
    assert "image_batch.batch_size / columns" in display
    assert "image = np.asarray(image_batch.tensors[j])" in display
    assert display.startswith("import math\nimport numpy as np\n")
    assert "TODO" not in (root / "explore.py").read_text()
    assert _run(root) == before
    explore = (root / "explore.py").read_text()
    again = _migrate(root / "explore.py", root / "display.py")  # a second run changes nothing
    assert again.exit_code == 0 and (root / "display.py").read_text() == display
    assert (root / "explore.py").read_text() == explore


def test_a_caller_outside_the_run_leaves_the_helper_and_the_todo(tmp_path):
    root = _project(tmp_path)
    result = _migrate(root / "explore.py")
    assert (root / "display.py").read_text() == DISPLAY
    assert "TODO(dali-migrate): DM007 `images` is passed to `show_images`" in (root / "explore.py").read_text()
    assert "left with a TODO" in result.output and "0 left with a TODO" not in result.output


def test_a_caller_that_passes_other_data_leaves_the_helper_alone(tmp_path):
    root = _project(tmp_path)
    (root / "other.py").write_text("import numpy as np\n\nfrom display import show_images\n\n"
                                   "show_images(np.zeros((2, 3)))\n")
    _migrate(root / "explore.py", root / "display.py", root / "other.py")
    assert (root / "display.py").read_text() == DISPLAY
    assert "is passed to `show_images`" in (root / "explore.py").read_text()


def test_a_helper_that_uses_its_batch_another_way_is_left_alone(tmp_path):
    iterating = DISPLAY.replace("    for j in range(len(image_batch)):\n        image = image_batch.at(j)\n",
                                "    for j, image in enumerate(image_batch):\n")
    root = _project(tmp_path, iterating)
    _migrate(root / "explore.py", root / "display.py")
    assert (root / "display.py").read_text() == iterating
    assert "is passed to `show_images`" in (root / "explore.py").read_text()
