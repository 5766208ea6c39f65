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
