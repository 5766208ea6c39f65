"""A migrated program that ends before it reads every output of its last batch exits cleanly.

Dynamic mode runs operators in a background thread; DALI 2.4 aborts the interpreter at exit
(``terminate called without an active exception``) while one is still running. Without the
generator's ``.evaluate()``, the program below aborted about one run in two on CPU, so six
clean runs in a row would pass by chance about one time in sixty."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, printed_by
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

IMAGES = str((FIXTURES / "data" / "images").resolve())

PROGRAM = f'''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def thumbnails():
    jpegs, labels = fn.readers.file(file_root={IMAGES!r})
    small = fn.resize(fn.decoders.image(jpegs), resize_x=16, resize_y=16)
    return fn.flip(small, horizontal=1), labels


pipe = thumbnails()
pipe.build()
for step in range(3):
    images, labels = pipe.run()
    if step == 2:
        break  # the last batch's images are never read
    print(np.asarray(images.at(0)).shape)
print("labels", np.asarray(labels.at(0)).tolist())
'''


def test_a_program_leaving_outputs_unread_exits_cleanly(tmp_path):
    result = migrate_source(PROGRAM.encode(), "thumbnails.py", Config())
    assert result.error is None and result.pipelines == [("thumbnails", [])]
    (tmp_path / "thumbnails.py").write_bytes(result.new_source)
    codes = []
    for _ in range(6):
        done = subprocess.run([sys.executable, "thumbnails.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert "labels" in done.stdout, done.stderr[-2000:]
        codes.append(done.returncode)
    assert codes == [0] * 6, "the migrated program aborted at exit"


def test_outputs_are_finished_before_they_are_yielded():
    new = migrate_source(PROGRAM.encode(), "thumbnails.py", Config()).new_source.decode()
    assert "yield ndd.flip(small, horizontal=1).evaluate(), labels.evaluate()" in new


VIEWS = f'''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def views():
    jpegs, labels = fn.readers.file(file_root={IMAGES!r})
    images = fn.decoders.image(jpegs)
    return tuple(fn.resize(images, size=[s, s]) for s in (8, 16))


pipe = views()
pipe.build()
small, large = pipe.run()
print(np.asarray(small.at(1)).sum(), np.asarray(large.at(0)).shape)
'''


def test_outputs_a_generator_expression_makes_are_each_finished(tmp_path):
    """``return tuple(<generator>)``: the outputs come from a generator expression, which the
    ``.evaluate()`` loop takes in parentheses of its own."""
    result = migrate_source(VIEWS.encode(), "views.py", Config())
    assert result.error is None and result.pipelines == [("views", [])]
    new = result.new_source.decode()
    assert "for output in (ndd.resize(images, size=[s, s]) for s in (8, 16))" in new
    printed = printed_by(tmp_path, original=VIEWS, migrated=new)
    assert printed["original"] == printed["migrated"] and printed["original"].strip()
