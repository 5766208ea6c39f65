"""A function of one file that makes a pipeline and returns it (``def get_pipe(...): pipe =
train_pipe(...); pipe.build(); return pipe``), called from another file: both migrate together,
and the program gives the same data; uses the migration cannot follow keep both files as they are."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, package_project, run_script, unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.runner import run_migrate

IMAGES = str((FIXTURES / "data" / "images").resolve())
DECORATED = f'''from nvidia.dali import fn, pipeline_def, types

ROOT = {IMAGES!r}


@pipeline_def
def plain(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    return fn.resize(images, size=(32, 32)), labels


def get_pipe(root, batch_size):
    pipe = plain(root, batch_size=batch_size, num_threads=1, device_id=None)
    pipe.build()
    return pipe
'''
WITH_GRAPH = f'''import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali.pipeline import Pipeline

ROOT = {IMAGES!r}


def create_pipeline(root, batch_size, num_threads=2, device_id=None, training=True):
    pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=48, resize_y=48)
        if training:
            images = fn.flip(images, horizontal=1)
        images = fn.crop_mirror_normalize(images, crop=(32, 32), dtype=types.FLOAT, output_layout="CHW",
                                          mean=[128.0] * 3, std=[64.0] * 3)
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe
'''
FROM_IMPORT = '''import numpy as np

from pkg.pipelines import ROOT, get_pipe


def main():
    pipe = get_pipe(ROOT, 2)
    for _ in range(3):
        images, labels = pipe.run()
        print(np.array(images.as_tensor()).sum(), labels.as_array().ravel().tolist())


if __name__ == "__main__":
    main()
'''
MODULE_IMPORT = '''import pkg.pipelines as pipelines

pipe = pipelines.get_pipe(pipelines.ROOT, 2)
for _ in range(3):
    images, labels = pipe.run()
    print(images.as_tensor().shape(), labels.at(1))
'''
TRAINER = '''import numpy as np

from pkg.pipelines import ROOT, create_pipeline


class Trainer:
    def __init__(self, root, batch_size):
        self.pipe = create_pipeline(root, batch_size)
        self.val_pipe = create_pipeline(root, batch_size, training=False)

    def step(self):
        images, labels = self.pipe.run()
        return float(np.array(images.as_tensor()).mean()), labels.as_array().ravel().tolist()

    def validate(self):
        images, _ = self.val_pipe.run()
        return float(np.array(images.as_tensor()).std())


trainer = Trainer(ROOT, 2)
for _ in range(4):
    print(trainer.step())
print(trainer.validate())
'''


def _migrated(root: Path):
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    return results, (root / "pkg" / "pipelines.py").read_text(), (root / "train.py").read_text()


def test_a_function_returning_a_pipeline_migrates_with_its_importer(tmp_path):
    root = package_project(tmp_path, DECORATED, FROM_IMPORT)
    before = run_script(root)
    results, pipelines, caller = _migrated(root)
    assert "def plain(root, *, batch_size" in pipelines and "build()" not in pipelines
    assert "next(pipe)" in caller and ".run()" not in caller and "TODO" not in caller + pipelines
    assert [r.pipelines for r in results if r.pipelines] == [[("plain", [])]]
    assert run_script(root) == before
    assert run_migrate([root], Config(), write=False)[0].changed is False  # a second run changes nothing


def test_a_module_import_of_the_function_is_followed(tmp_path):
    root = package_project(tmp_path, DECORATED, MODULE_IMPORT)
    before = run_script(root)
    _, pipelines, caller = _migrated(root)
    assert "next(pipe)" in caller and "labels.tensors[1]" in caller and "TODO" not in caller + pipelines
    assert run_script(root) == before


def test_a_with_graph_returned_from_a_function_migrates_with_the_class_that_keeps_it(tmp_path):
    root = package_project(tmp_path, WITH_GRAPH, TRAINER)
    before = run_script(root)
    _, pipelines, caller = _migrated(root)
    assert "with pipe:" not in pipelines and "ndd.readers.File(" in pipelines
    assert "next(self.pipe)" in caller and "next(self.val_pipe)" in caller and "TODO" not in caller + pipelines
    assert run_script(root) == before


def _kept(tmp_path: Path, caller: str) -> tuple[str, str]:
    root = package_project(tmp_path, DECORATED, caller)
    before = run_script(root)
    _, pipelines, caller_now = _migrated(root)
    assert "@pipeline_def" in pipelines and "pipe.build()" in pipelines
    assert run_script(root) == before  # the program still runs in pipeline mode
    return unwrapped_todos(pipelines), caller_now


def test_a_method_called_on_the_returned_pipeline_unbound_keeps_it(tmp_path):
    pipelines, _ = _kept(tmp_path, '''from pkg.pipelines import ROOT, get_pipe

images, labels = get_pipe(ROOT, 2).run()
print(labels.as_array().ravel().tolist())
''')
    assert "`get_pipe` is used from train.py" in pipelines and "get_pipe(ROOT, 2).run()" in pipelines


def test_metadata_of_the_returned_pipeline_keeps_it_with_the_reason(tmp_path):
    pipelines, _ = _kept(tmp_path, '''from pkg.pipelines import ROOT, get_pipe

pipe = get_pipe(ROOT, 2)
for _ in range(pipe.epoch_size("Reader") // 2):
    print(pipe.run()[1].as_array().ravel().tolist())
''')
    assert "`get_pipe()` makes the pipeline in another file" in pipelines


def test_an_iterator_over_the_returned_pipeline_keeps_it_with_the_reason(tmp_path):
    pipelines, _ = _kept(tmp_path, '''from nvidia.dali.plugin.pytorch import DALIGenericIterator

from pkg.pipelines import ROOT, get_pipe

pipe = get_pipe(ROOT, 2)
loader = DALIGenericIterator(pipe, ["images", "labels"], reader_name="Reader")
for batch in loader:
    print(batch[0]["labels"].ravel().tolist())
''')
    assert "`get_pipe()` makes the pipeline in another file" in pipelines


def test_a_function_whose_own_module_reads_the_metadata_keeps_its_pipeline(tmp_path):
    """There the pipeline gives its metadata first: a caller in another file would take it for
    a batch."""
    root = package_project(tmp_path, DECORATED + '''

def epoch_steps():
    pipe = get_pipe(ROOT, 2)
    return pipe.epoch_size("Reader") // 2
''', '''from pkg.pipelines import ROOT, epoch_steps, get_pipe

pipe = get_pipe(ROOT, 2)
for _ in range(epoch_steps()):
    images, labels = pipe.run()
    print(labels.as_array().ravel().tolist())
''')
    before = run_script(root)
    _, pipelines, caller = _migrated(root)
    assert "@pipeline_def" in pipelines and "pipe.run()" in caller
    assert "`get_pipe()` also returns the pipeline in its own module" in unwrapped_todos(pipelines)
    assert run_script(root) == before
