"""Pipelines used from other files stay in pipeline mode, so that no caller is broken."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, package_project, run_script, unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.runner import run_migrate

IMAGES = str((FIXTURES / "data" / "images").resolve())
PIPELINES = f'''from nvidia.dali import fn, pipeline_def

ROOT = {IMAGES!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def local_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


def first_labels():
    pipe = local_pipe(ROOT)
    pipe.build()
    return pipe.run()[0].as_array().ravel().tolist()
'''


def _project(tmp_path: Path, caller: str) -> Path:
    return package_project(tmp_path, PIPELINES, caller)


FROM_IMPORT = '''from pkg.pipelines import ROOT, first_labels, train_pipe

pipe = train_pipe(ROOT)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist(), first_labels())
'''
MODULE_IMPORT = '''import pkg.pipelines as pipelines

pipe = pipelines.train_pipe(pipelines.ROOT)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist(), pipelines.first_labels())
'''


@pytest.mark.parametrize("caller", [FROM_IMPORT, MODULE_IMPORT], ids=["from-import", "module-import"])
def test_a_pipeline_and_its_importer_are_migrated_together(tmp_path, caller):
    root = _project(tmp_path, caller)
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "def train_pipe(root, *, batch_size=2, num_threads=1):" in migrated
    assert "def local_pipe(root, *, batch_size=2, num_threads=1):" in migrated
    caller_now = (root / "train.py").read_text()
    assert "build()" not in caller_now and "next(pipe)" in caller_now and "TODO" not in caller_now
    assert run_script(root) == before


@pytest.mark.parametrize("caller", [FROM_IMPORT, MODULE_IMPORT], ids=["from-import", "module-import"])
def test_a_pipeline_whose_importer_is_not_in_the_run_is_kept(tmp_path, caller):
    root = _project(tmp_path, caller)
    before = run_script(root)
    results = run_migrate([root / "pkg" / "pipelines.py"], Config(), write=True)
    assert all(r.error is None for r in results)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "def local_pipe(root, *, batch_size=2, num_threads=1):" in migrated  # nobody imports it
    assert "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\ndef train_pipe(root):" in migrated
    assert "DM001 `train_pipe` is used from train.py, which this run does not migrate: pass it too" in migrated
    assert (root / "train.py").read_text() == caller
    assert run_script(root) == before


def test_a_use_that_cannot_be_migrated_keeps_the_pipeline_in_both_files(tmp_path):
    caller = FROM_IMPORT.replace("pipe.build()", "pipe.build()\nprint(pipe.serialize() is not None)")
    root = _project(tmp_path, caller)
    before = run_script(root)
    run_migrate([root], Config(), write=True)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\ndef train_pipe(root):" in migrated
    assert ("DM001 `train_pipe` is used from train.py: kept in pipeline mode: `pipe.serialize()` needs the "
            "pipeline graph") in migrated
    assert "`train_pipe` was not migrated: see the reason below" in migrated  # no re-run would change it
    assert (root / "train.py").read_text() == caller
    assert run_script(root) == before


def test_relative_imports_inside_a_package_are_followed(tmp_path):
    root = _project(tmp_path, "from pkg.cli import main\n\nmain()\n")
    (root / "pkg" / "cli.py").write_text("from .pipelines import ROOT, train_pipe as make\n\n\ndef main():\n"
                                         "    pipe = make(ROOT, batch_size=3)\n    pipe.build()\n"
                                         "    print(pipe.run()[0].as_array().ravel().tolist())\n")
    before = run_script(root)
    run_migrate([root], Config(), write=True)
    assert "next(pipe)" in (root / "pkg" / "cli.py").read_text()
    assert "def train_pipe(root, *, batch_size=2" in (root / "pkg" / "pipelines.py").read_text()
    assert run_script(root) == before


def test_an_import_that_cannot_be_followed_keeps_the_pipeline(tmp_path):
    caller = "import pkg.pipelines\nimport pkg\n\npipe = pkg.pipelines.train_pipe(pkg.pipelines.ROOT)\npipe.build()\n" \
             "print(pipe.run()[0].as_array().ravel().tolist())\n"
    root = _project(tmp_path, caller)
    before = run_script(root)
    run_migrate([root], Config(), write=True)
    assert run_script(root) == before


def test_a_name_that_is_not_imported_from_the_module_does_not_keep_it(tmp_path):
    root = _project(tmp_path, "train_pipe = 'a string of my own'\nprint(train_pipe)\n")
    run_migrate([root], Config(), write=True)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "def train_pipe(root, *, batch_size=2, num_threads=1):" in migrated
    assert "TODO" not in migrated


def test_two_copies_of_a_project_in_one_run_are_not_each_others_callers(tmp_path):
    """Module names alone would match both copies' `pkg/pipelines.py`; Python's lookup from the
    importer's folders matches only its own."""
    kept_caller = FROM_IMPORT.replace("pipe.build()", "pipe.build()\nprint(pipe.serialize() is not None)")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, two = _project(tmp_path / "one", FROM_IMPORT), _project(tmp_path / "two", kept_caller)
    before = run_script(one)
    results = run_migrate([tmp_path], Config(), write=True)
    assert all(r.error is None for r in results)
    assert "next(pipe)" in (one / "train.py").read_text()  # two's use does not keep one's pipeline
    assert (two / "train.py").read_text() == kept_caller
    assert run_script(one) == before


def test_a_sibling_package_import_is_followed_without_a_project_root(tmp_path):
    """`from common.pipelines import ...` in `common/loader.py`, run from the project's folder,
    with neither git nor pyproject.toml to name the root."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "pipelines.py").write_text(PIPELINES)
    (tmp_path / "common" / "loader.py").write_text(
        "from common.pipelines import ROOT, train_pipe\n\n\ndef labels():\n    pipe = train_pipe(ROOT)\n"
        "    pipe.build()\n    return pipe.run()[0].as_array().ravel().tolist()\n")
    (tmp_path / "train.py").write_text("from common.loader import labels\n\nprint(labels())\n")
    before = run_script(tmp_path)
    results = run_migrate([tmp_path], Config(), write=True)
    assert [r.pipelines for r in results if r.pipelines] == [[("train_pipe", []), ("local_pipe", [])]]
    assert "next(pipe)" in (tmp_path / "common" / "loader.py").read_text()
    assert run_script(tmp_path) == before


DEVICE_CALLER = '''from pkg.devices import ROOT, labels_pipe

DEVICE = None  # a GPU rank in training; None runs on the CPU
pipe = labels_pipe(ROOT, batch_size=2, num_threads=1, device_id=DEVICE)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist())
'''


DEVICE_PIPELINES = f'''from nvidia.dali import fn, pipeline_def

ROOT = {IMAGES!r}


{{decorator}}
def labels_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels
'''


def _device_project(tmp_path: Path, pipelines: str) -> Path:
    root = _project(tmp_path, DEVICE_CALLER)
    (root / "pkg" / "devices.py").write_text(pipelines)
    return root


def test_a_device_given_by_the_importer_reaches_the_migrated_pipeline(tmp_path):
    """The defining module has no call of its own: the device comes from its importers."""
    root = _device_project(tmp_path, DEVICE_PIPELINES.format(decorator="@pipeline_def"))
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    defined = (root / "pkg" / "devices.py").read_text()
    assert "device_id=None" in defined and "ndd.EvalContext(device_id=device_id)" in defined
    assert "device_id=DEVICE" in (root / "train.py").read_text()
    assert run_script(root) == before


def test_an_importer_that_gives_a_device_the_definition_fixes_is_kept(tmp_path):
    root = _device_project(tmp_path, DEVICE_PIPELINES.format(decorator="@pipeline_def(device_id=None)"))
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    kept = dict(r.pipelines[0] for r in results if r.pipelines)
    assert "`device_id=` is given here" in kept["labels_pipe"][0]
    assert "@pipeline_def(device_id=None)\ndef labels_pipe(root):" in (root / "pkg" / "devices.py").read_text()
    assert "pipe.build()" in (root / "train.py").read_text()
    assert run_script(root) == before


LEGACY_PIPELINES = f'''import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline

ROOT = {IMAGES!r}


class LabelsPipeline(Pipeline):
    def __init__(self, batch_size, device_id, file_root, num_threads=1, seed=15):
        super(LabelsPipeline, self).__init__(batch_size=batch_size, device_id=device_id,
                                             num_threads=num_threads, seed=seed)
        self.input = ops.FileReader(file_root=file_root, shard_id=0, num_shards=1)
        self.decode = ops.ImageDecoder(device="cpu")
        self.resize = ops.Resize(device="cpu", resize_x=8, resize_y=8)

    def define_graph(self):
        jpegs, labels = self.input()
        return self.resize(self.decode(jpegs)), labels
'''

LEGACY_CALLER = '''from pkg.legacy import ROOT, LabelsPipeline


def main():
    pipe = LabelsPipeline({arguments})
    pipe.build()
    for _ in range(3):
        images, labels = pipe.run()
        print([images.at(i).shape for i in range(len(images))], labels.as_array().ravel().tolist())


if __name__ == "__main__":
    main()
'''


def _legacy_project(tmp_path: Path, arguments: str) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "legacy.py").write_text(LEGACY_PIPELINES)
    (tmp_path / "train.py").write_text(LEGACY_CALLER.format(arguments=arguments))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_a_legacy_subclass_and_its_importer_are_migrated_together(tmp_path):
    """The importer calls the class positionally, in __init__'s order: the calls are named for
    the function the class becomes."""
    root = _legacy_project(tmp_path, "4, None, ROOT")
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    assert "class LabelsPipeline" not in (root / "pkg" / "legacy.py").read_text()
    caller = (root / "train.py").read_text()
    assert "LabelsPipeline(batch_size=4, device_id=None, file_root=ROOT)" in caller
    assert "next(pipe)" in caller and "TODO" not in caller
    assert run_script(root) == before


def test_a_legacy_subclass_whose_importer_passes_args_it_cannot_name_is_kept(tmp_path):
    root = _legacy_project(tmp_path, "*[4, None, ROOT]")
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    assert "class LabelsPipeline(Pipeline):" in (root / "pkg" / "legacy.py").read_text()
    assert "`LabelsPipeline` is used from train.py" in unwrapped_todos((root / "pkg" / "legacy.py").read_text())
    assert "pipe.build()" in (root / "train.py").read_text()
    assert run_script(root) == before


SOURCES = '''import numpy as np
from nvidia.dali import fn, pipeline_def


class Counter:
    def __init__(self, offset):
        self.offset = offset

    def __call__(self, sample_info):
        return np.array([sample_info.idx_in_epoch + self.offset], dtype=np.int32)


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def counted(source):
    data = fn.external_source(source, batch=False)
    return data


def preview():
    pipe = counted(Counter(1))
    pipe.build()
    return pipe.run()[0].as_array().ravel().tolist()
'''


@pytest.mark.parametrize("passed, migrates", [
    ("def tens(sample_info):\n    return np.array([sample_info.idx_in_epoch * 10], dtype=np.int32)\n", True),
    ("def tens():\n    while True:\n        yield np.array([10], dtype=np.int32)\n", False),
], ids=["per-sample-like-its-home", "generator"])
def test_an_importer_must_pass_a_parameter_source_used_as_the_home_module_uses_it(tmp_path, passed, migrates):
    caller = ("import numpy as np\n\nfrom pkg.pipelines import counted, preview\n\n\n" + passed +
              "\n\npipe = counted(tens)\npipe.build()\nprint(pipe.run()[0].as_array().ravel().tolist(), preview())\n")
    root = _project(tmp_path, caller)
    (root / "pkg" / "pipelines.py").write_text(SOURCES)
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    home = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert ("def counted(source, *, batch_size=2, num_threads=1):" in home) is migrates
    assert ("next(pipe)" in (root / "train.py").read_text()) is migrates
    if not migrates:
        assert "`counted` is used from train.py" in home and "would use another way" in home
        assert (root / "train.py").read_text() == caller
    assert run_script(root) == before


BASE_CLASS = f'''import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline

ROOT = {IMAGES!r}


class GenericPipe(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, data_dir):
        super().__init__(batch_size, num_threads, device_id)
        self.input = ops.readers.File(file_root=data_dir)


class LabelsPipe(GenericPipe):
    def define_graph(self):
        jpegs, labels = self.input()
        return labels
'''

DERIVED_ELSEWHERE = '''import nvidia.dali.ops as ops
from pkg.pipelines import ROOT, GenericPipe


class BytesPipe(GenericPipe):
    def __init__(self, batch_size, num_threads, device_id, data_dir):
        super().__init__(batch_size, num_threads, device_id, data_dir)
        self.cast = ops.Cast(dtype=7)

    def define_graph(self):
        jpegs, labels = self.input()
        return self.cast(labels)


pipe = BytesPipe(batch_size=2, num_threads=1, device_id=None, data_dir=ROOT)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist())
'''


@pytest.mark.parametrize("also_run", [False, True])
def test_a_base_class_another_file_uses_stays(tmp_path, also_run):
    """Its derived class of the same file migrates; the base, which another file subclasses, stays."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "pipelines.py").write_text(BASE_CLASS)
    (tmp_path / "train.py").write_text(DERIVED_ELSEWHERE)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    before = run_script(tmp_path)
    paths = [tmp_path / "pkg" / "pipelines.py", *([tmp_path / "train.py"] if also_run else [])]
    results = run_migrate(paths, Config(), write=True)
    assert all(r.error is None for r in results)
    migrated = (tmp_path / "pkg" / "pipelines.py").read_text()
    assert "def LabelsPipe(data_dir, *, batch_size" in migrated
    assert "class GenericPipe(Pipeline):" in migrated
    assert run_script(tmp_path) == before


AUGMENT = '''import nvidia.dali.fn as fn


def size_of(crop):
    return crop * 2


def flipped(images):
    return fn.flip(images, horizontal=1)


def random_matrix(size):
    return fn.transforms.rotation(angle=fn.random.uniform(range=(-15.0, 15.0)), center=[size / 2, size / 2])


def twice_flipped(images):
    return flipped(flipped(images))
'''
GRAPHS = f'''import numpy as np
from nvidia.dali import fn, pipeline_def

from pkg.augment import size_of, twice_flipped
from pkg import augment

ROOT = {IMAGES!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
def warped(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.resize(fn.decoders.image(jpegs), size=[size_of(8)] * 2)
    return fn.warp_affine(images, matrix=augment.random_matrix(16)), labels


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def flips(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return twice_flipped(fn.decoders.image(jpegs)), labels


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def plain(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.resize(fn.decoders.image(jpegs), size=[size_of(4)] * 2), labels


for name in ("warped", "flips"):
    pipe = warped(ROOT) if name == "warped" else flips(ROOT)
    pipe.build()
    images, labels = pipe.run()
    print(name, np.array(images.at(0)).shape, labels.as_array().ravel().tolist())
small = plain(ROOT)
small.build()
images, labels = small.run()
print(np.array(images.at(1)).shape, labels.as_array().ravel().tolist())
'''


@pytest.mark.parametrize("also_run", [False, True], ids=["importer-alone", "with-the-helpers"])
def test_a_graph_calling_operator_helpers_of_another_file_is_kept(tmp_path, also_run):
    """Migrated alone, such a graph would hand `fn.*` helpers ndd Batches: it stays, with the
    helper and its file named. A helper of plain Python (`size_of`) keeps nothing."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "augment.py").write_text(AUGMENT)
    (tmp_path / "train.py").write_text(GRAPHS)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    before = run_script(tmp_path)
    paths = [tmp_path / "train.py", *([tmp_path / "pkg"] if also_run else [])]
    results = run_migrate(paths, Config(), write=True)
    assert all(r.error is None for r in results)
    train = next(r for r in results if r.path.endswith("train.py"))
    assert sorted(name for name, reasons in train.pipelines if reasons) == ["flips", "warped"]
    assert sorted(name for name, reasons in train.pipelines if not reasons) == ["plain"]
    migrated = unwrapped_todos((tmp_path / "train.py").read_text())
    assert "DM015 `augment.random_matrix()` comes from `pkg/augment.py` and builds part of the graph" in migrated
    assert "DM015 `twice_flipped()` comes from `pkg/augment.py`" in migrated  # through `flipped`
    assert "size_of()` comes from" not in migrated
    assert "def plain(root, *, batch_size=2, num_threads=1):" in migrated
    assert run_script(tmp_path) == before


WRAPPER = '''class Wrapper:
    def __init__(self, pipe):
        pipe.build()
        self.pipe = pipe

    def first(self):
        return self.pipe.run()[0].as_array().ravel().tolist()
'''
NO_FINDING_OF_ITS_OWN = '''from pkg.pipelines import ROOT, train_pipe
from wrapper import Wrapper

pipe = train_pipe(ROOT, num_threads=2)
print(Wrapper(pipe).first())
'''


def test_an_importer_without_pipeline_mode_api_of_its_own_still_decides(tmp_path):
    """train.py only calls the pipeline function and hands the pipeline to a class of another
    file: nothing there is pipeline-mode API, yet migrating the pipeline alone breaks it."""
    root = _project(tmp_path, NO_FINDING_OF_ITS_OWN)
    (root / "wrapper.py").write_text(WRAPPER)
    before = run_script(root)
    results = run_migrate([root], Config(), write=True)
    assert all(r.error is None for r in results)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\ndef train_pipe(root):" in migrated
    assert "`train_pipe` is used from train.py: `pipe` is used as a value in `Wrapper(pipe)`" in migrated
    assert (root / "train.py").read_text() == NO_FINDING_OF_ITS_OWN
    assert run_script(root) == before


def test_every_reason_an_importer_keeps_the_pipeline_is_named(tmp_path):
    """Two uses in train.py keep the pipeline: the defining file's TODO names both, so that one
    edit and one re-run suffice."""
    caller = FROM_IMPORT.replace("pipe.build()", "pipe.build()\nprint(pipe.serialize() is not None)\nprint(len([pipe]))")
    root = _project(tmp_path, caller)
    run_migrate([root], Config(), write=True)
    migrated = unwrapped_todos((root / "pkg" / "pipelines.py").read_text())
    assert "`pipe.serialize()` needs the pipeline graph" in migrated
    assert "`pipe` is used as a value in `len([pipe])`" in migrated
