"""A function handed a pipeline's output that makes it one DALI Tensor (`dense =
batch.as_tensor()`) and reads that tensor's `shape()`/`layout()` or copies it into a torch tensor
with `feed_ndarray`, as older PyTorch training scripts do: the helper is migrated with the
pipeline (fixture `torch_copies`, same program output). A dense name used any other way keeps
the pipeline, and a `feed_ndarray` that stays says how to copy an ndd value."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, printed_by

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

PROGRAM = '''import torch
from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import feed_ndarray


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


def to_torch(batch):
{body}


def main(root):
    pipe = images_pipeline(root)
    pipe.build()
    images, labels = pipe.run()
    return to_torch(labels)
'''


def migrate(body: str):
    result = migrate_source(PROGRAM.format(body=body).encode(), "loader.py", Config())
    assert result.error is None
    return result


@pytest.mark.parametrize("body, expected", [
    ("    dense = batch.as_tensor()\n    out = torch.empty(dense.shape(), dtype=torch.int32)\n"
     "    feed_ndarray(dense, out)\n    return out",
     "    dense = ndd.as_tensor(batch)\n    out = torch.empty(list(dense.shape), dtype=torch.int32)\n"
     "    out.copy_(dense.torch())\n    return out"),
    ("    dense = batch.as_tensor()\n    assert dense.layout() == ''\n    return dense.shape()",
     "    dense = ndd.as_tensor(batch)\n    assert (dense.layout or \"\") == ''\n    return list(dense.shape)"),
    ("    return feed_ndarray(batch, torch.empty((2, 1), dtype=torch.int32))",
     "    return torch.empty((2, 1), dtype=torch.int32).copy_(batch.torch())"),
    ("    return feed_ndarray(batch.as_tensor(), torch.empty((2, 1), dtype=torch.int32))",
     "    return torch.empty((2, 1), dtype=torch.int32).copy_(ndd.as_tensor(batch).torch())"),
])
def test_a_dense_tensor_made_in_a_helper_is_migrated_with_the_pipeline(body, expected):
    result = migrate(body)
    assert result.pipelines == [("images_pipeline", [])]
    new = result.new_source.decode()
    assert expected in new
    assert "feed_ndarray" not in new and "TODO" not in new


@pytest.mark.parametrize("body", [
    "    dense = batch.as_tensor()\n    dense = torch.zeros(dense.shape())\n    return dense",
    "    dense = batch.as_tensor()\n    print(dense.dtype)\n    return dense.shape()",
    "    dense = batch.as_tensor()\n    size = lambda: dense.shape()\n    return size()",
    "    dense = batch.as_tensor()\n    out = torch.empty(dense.shape(), dtype=torch.int32)\n"
    "    return feed_ndarray(dense, out, cuda_stream=None)",
])
def test_a_dense_name_used_otherwise_keeps_the_pipeline(body):
    result = migrate(body)
    [(name, reasons)] = result.pipelines
    assert name == "images_pipeline" and reasons
    assert "pipe.build()" in result.new_source.decode()


def test_a_feed_ndarray_that_stays_says_how_to_copy_an_ndd_value():
    result = migrate("    dense = batch.as_tensor()\n    print(dense.dtype)\n    out = torch.empty(dense.shape())\n"
                     "    feed_ndarray(dense, out)\n    return out")
    messages = [d.message for d in result.diagnostics if "feed_ndarray" in d.message]
    assert messages and all("`tensor.copy_(value.torch())`" in m for m in messages)
    assert not any("loop over their generator" in m for m in messages)


TUPLE_HELPER = '''import torch
from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import feed_ndarray

IMAGES = {images!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8)
    return images, labels


def to_torch(pipe_out):
    images, labels = pipe_out
    dense = images.as_tensor()
    x = torch.empty(dense.shape(), dtype=torch.uint8)
    feed_ndarray(dense, x)
    y = torch.empty(labels.as_tensor().shape(), dtype=torch.int32)
    feed_ndarray(labels.as_tensor(), y)
    return x, y


if __name__ == "__main__":
    pipe = images_pipeline(IMAGES)
    pipe.build()
    for _ in range(3):
        x, y = to_torch(pipe.run())
        print(tuple(x.shape), x.float().mean().item(), y.view(-1).tolist())
'''


def test_a_run_handed_straight_to_a_helper_is_its_outputs_tuple(tmp_path):
    """``to_torch(pipe.run())``: the helper takes the tuple apart as it does a named one."""
    original = TUPLE_HELPER.format(images=str(FIXTURES / "data" / "images"))
    result = migrate_source(original.encode(), "loader.py", Config())
    assert result.pipelines == [("images_pipeline", [])]
    migrated = result.new_source.decode()
    assert "x, y = to_torch(next(pipe))" in migrated and "x.copy_(dense.torch())" in migrated
    printed = printed_by(tmp_path, original=original, migrated=migrated)
    assert printed["migrated"] == printed["original"] and printed["original"].count("\n") == 3


def test_a_run_handed_to_a_function_of_another_module_is_a_todo():
    """``summarize(pipe.run())`` with ``summarize`` imported: the outputs leave for code the run
    does not see, as they do from ``out = pipe.run(); summarize(out)`` (it was reported with no TODO)."""
    source = TUPLE_HELPER.replace("x, y = to_torch(pipe.run())", "x, y = summarize(pipe.run())").replace(
        "import torch\n", "import torch\nfrom utils import summarize\n")
    result = migrate_source(source.format(images="images").encode(), "loader.py", Config())
    todos = [d.message for d in result.diagnostics if d.fix == "todo" and "summarize" in d.message]
    assert todos == ["`pipe.run()` is passed to `summarize`: it holds ndd Batches now, not TensorLists; check "
                     "that the code it goes to uses `.tensors[i]`, `ndd.as_tensor()`, `.torch()`"]
