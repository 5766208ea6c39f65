"""A project's own subclass of `DALIGenericIterator`, and pipelines bound in the branches of an
`if` before one iterator: migrated where the result runs as before (fixture
`segmentation_wrapper`), kept with a reason naming what stands in the way otherwise."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

PIPELINES = '''from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator


@pipeline_def
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    return fn.decoders.image(jpegs), labels


@pipeline_def
def eval_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return fn.decoders.image(jpegs), labels


'''
WRAPPER = '''class Wrapper(DALIGenericIterator):
    def __init__(self, pipe, **kwargs):
        super().__init__(pipe, **kwargs)

    def __next__(self):
        return super().__next__()[0]


'''
LOADER = '''def loader(root, train, batch_size):
    if train:
        pipe = train_pipe(root, batch_size=batch_size, num_threads=1, device_id=None)
    else:
        pipe = eval_pipe(root, batch_size=batch_size, num_threads=1, device_id=None)
    return Wrapper(pipe, output_map=["images", "labels"], reader_name="Reader")
'''


def migrate(source: str):
    result = migrate_source(source.encode(), "loaders.py", Config())
    assert result.error is None
    return result


def test_a_transparent_subclass_derives_from_the_loader_and_both_branches_migrate():
    result = migrate(PIPELINES + WRAPPER + LOADER)
    assert [(name, reasons) for name, reasons in result.pipelines] == [("train_pipe", []), ("eval_pipe", [])]
    code = result.new_source.decode()
    assert "class Wrapper(DALITorchLoader):" in code
    assert "from nvidia.dali.plugin" not in code
    assert code.count("pipe_reader_meta = next(pipe)") == 2
    assert "reader_meta=pipe_reader_meta" in code
    assert not any(d.fix != "fixed" for d in result.diagnostics)


@pytest.mark.parametrize("wrapper, reason", [
    (WRAPPER.replace("return super().__next__()[0]", "return self._counter"), "`self._counter`"),
    (WRAPPER.replace("super().__init__(pipe, **kwargs)", "super().__init__(pipe, reader_name='Reader', **kwargs)"),
     "passing on its own parameters"),
    (WRAPPER.replace("super().__next__()", "super(Wrapper, self).__next__()"), "`super()`"),
    (WRAPPER + "CLASSES = [Wrapper]\n\n\n", "used other than by calling it"),
    (WRAPPER.replace("    def __next__", "    def _step(self, named):\n        return named\n\n    def __next__"),
     "defines `_step`"),
])
def test_a_subclass_reaching_the_iterator_keeps_its_pipelines(wrapper, reason):
    result = migrate(PIPELINES + wrapper + LOADER)
    assert sorted(name for name, _ in result.pipelines) == ["eval_pipe", "train_pipe"]
    assert all(reason in reasons[0] for _, reasons in result.pipelines)
    assert result.new_source is None or b"(DALIGenericIterator)" in result.new_source


def test_a_subclass_also_used_over_a_pipeline_that_stays_keeps_them_all():
    kept = '''

@pipeline_def
def served(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return jpegs, labels


def other(root):
    served_pipe = served(root, batch_size=2, num_threads=1, device_id=None)
    served_pipe.serialize()
    return Wrapper(served_pipe, output_map=["images", "labels"], reader_name="Reader")
'''
    result = migrate(PIPELINES + WRAPPER + LOADER + kept)
    reasons = dict(result.pipelines)
    assert "also used over a pipeline that stays" in reasons["train_pipe"][0]
    assert reasons["eval_pipe"] and reasons["served"]
    assert result.new_source is None or b"class Wrapper(DALIGenericIterator)" in result.new_source


def test_branches_that_need_different_loaders_keep_their_pipelines():
    source = PIPELINES + WRAPPER + LOADER.replace("eval_pipe(root, batch_size=batch_size", "eval_pipe(root, batch_size=8")
    result = migrate(source)
    reasons = dict(result.pipelines)
    assert "`batch_size` and `8` for `batch_size=`" in reasons["train_pipe"][0]


def test_a_branch_without_else_keeps_the_pipeline():
    loader = LOADER.replace("    else:\n        pipe = eval_pipe", "    if not train:\n        pipe = eval_pipe")
    result = migrate(PIPELINES + WRAPPER + loader)
    assert all(reasons for _, reasons in result.pipelines)
    assert result.new_source is None or b"class Wrapper(DALIGenericIterator)" in result.new_source


def test_a_subclass_that_only_renames_the_iterator_derives_from_the_loader():
    renamed = "class Wrapper(DALIGenericIterator):\n    pass\n\n\n"
    result = migrate(PIPELINES + renamed + LOADER)
    assert [reasons for _, reasons in result.pipelines] == [[], []]
    assert "class Wrapper(DALITorchLoader):\n    pass" in result.new_source.decode()


LIGHTNING = '''import torch
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

IMAGES = {images!r}


@pipeline_def
def mnist_pipeline(shard_id=0, num_shards=1):
    jpegs, labels = fn.readers.file(file_root=IMAGES, shard_id=shard_id, num_shards=num_shards,
                                    random_shuffle=False, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    images = fn.resize(images, resize_x=8, resize_y=8)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    labels = labels.gpu() if False else labels
    return images, labels


class LightningWrapper(DALIClassificationIterator):
    def __init__(self, *kargs, **kvargs):
        super().__init__(*kargs, **kvargs)

    def __next__(self):
        out = super().__next__()
        # DDP is used so only one pipeline per process
        out = out[0]
        return [out[k] if k != "label" else torch.squeeze(out[k]) for k in self.output_map]


class DALILitMNIST:
    def setup(self, stage=None):
        device_id = None
        shard_id = 0
        mnist_pipe = mnist_pipeline(batch_size=4, num_threads=2, device_id=device_id, shard_id=shard_id, num_shards=1)
        self.train_loader = LightningWrapper(mnist_pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)

    def train_dataloader(self):
        return self.train_loader


if __name__ == "__main__":
    module = DALILitMNIST()
    module.setup()
    for epoch in range(2):
        for x, y in module.train_dataloader():
            print(epoch, tuple(x.shape), y.tolist(), round(float(x.sum()), 3))
'''


def test_dalis_lightning_wrapper_over_the_classification_iterator_runs_as_before(tmp_path):
    """DALI's PyTorch Lightning example: `LightningWrapper(DALIClassificationIterator)` with
    `*kargs, **kvargs` and `self.output_map` in `__next__`."""
    pytest.importorskip("torch")
    from conftest import FIXTURES, printed_by

    source = LIGHTNING.format(images=str((FIXTURES / "data" / "images").resolve()))
    result = migrate(source)
    assert [reasons for _, reasons in result.pipelines] == [[]]
    code = result.new_source.decode()
    assert "class LightningWrapper(DALITorchLoader):" in code and 'output_map=["data", "label"]' in code
    printed = printed_by(tmp_path, original=source, migrated=code)
    assert printed["original"] == printed["migrated"] and printed["original"].count("\n") == 6


def test_a_subclass_another_file_imports_keeps_its_pipelines(tmp_path):
    """Its base class would change under the importer's feet: it stays, and says why."""
    from dali_migrate.runner import run_migrate

    (tmp_path / "loaders.py").write_text(PIPELINES + WRAPPER + LOADER)
    (tmp_path / "other.py").write_text("from loaders import Wrapper\n\n\ndef wrapped(pipe):\n"
                                       "    return Wrapper(pipe, output_map=['a'], reader_name='Reader')\n")
    results = {r.path.rsplit("/", 1)[-1]: r for r in run_migrate([tmp_path], Config(), write=False)}
    reasons = dict(results["loaders.py"].pipelines)
    assert "`Wrapper` is used from other.py" in reasons["train_pipe"][0]


def test_an_iterator_over_a_pipeline_a_class_is_given_says_it_stays():
    """``DALIGenericIterator(pipeline, ...)`` over an ``__init__`` parameter of a class that also
    keeps the pipeline: the pipeline passed in is kept (a value handed to a class), so the advice
    to loop over "the migrated generator" would be untrue. (Without ``self.pipeline``, the
    ``__init__`` takes the metadata itself and migrates: tests/test_handed_pipelines.py.)"""
    source = PIPELINES + '''class Pipeloader:
    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.iterator = DALIGenericIterator(pipeline, ["data", "label"], reader_name="Reader")


loader = Pipeloader(eval_pipe("a", batch_size=2, num_threads=1, device_id=None))
'''
    migrated = migrate_source(source.encode(), "loaders.py", Config()).new_source.decode()
    todo = migrated.split("# TODO(dali-migrate): DM010 ")[1].split("self.iterator")[0]
    assert "(it stays: `pipeline` is not a pipeline this run migrates" in " ".join(todo.replace("#", "").split())
    assert "loop over the migrated generator" not in todo
