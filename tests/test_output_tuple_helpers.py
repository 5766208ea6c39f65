"""A function handed a pipeline's whole `pipe.run()` tuple (`describe(pipe_out)`) that takes it
apart (`images, labels = pipe_out`, `labels = pipe_out[1]`, `for output in pipe_out`): its
outputs' TensorList API is rewritten with the pipeline. Any other use of the tuple leaves the function alone, and the
pipeline is not reported migrated with a function that would break (fixture
`display_helpers`, same program output)."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_source

PROGRAM = '''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


def describe(out, count):
{body}


def main(root):
    pipe = images_pipeline(root)
    pipe.build()
    out = pipe.run()
    describe(out, len(out[0]))
'''


def migrate(body: str):
    result = migrate_source(PROGRAM.format(body=body).encode(), "summary.py", Config())
    assert result.error is None
    return result


@pytest.mark.parametrize("body, expected", [
    ("    images, labels = out\n    images = images.as_cpu()\n    print(np.array(images.at(0)), len(labels))",
     "    images, labels = out\n    images = images.cpu()\n    print(np.array(images.tensors[0]), labels.batch_size)"),
    ("    labels = out[1]\n    for i in range(count):\n        print(labels.at(i))",
     "    labels = out[1]\n    for i in range(count):\n        print(np.asarray(labels.tensors[i]))"),
    # a loop over the tuple gives one output each turn (tests/test_handed_outputs.py runs it)
    ("    for output in out:\n        print(output.at(0))",
     "    for output in out:\n        print(np.asarray(output.tensors[0]))"),
])
def test_a_helper_taking_the_tuple_apart_is_migrated_with_the_pipeline(body, expected):
    result = migrate(body)
    assert result.pipelines == [("images_pipeline", [])]
    assert expected in result.new_source.decode()


@pytest.mark.parametrize("body", [
    "    for output in out[:1]:\n        print(output.at(0))",
    "    print(len(out), out[0].at(0))",
    "    images, labels = out\n    labels = np.zeros(2)\n    print(images.at(0), labels[0])",
])
def test_any_other_use_of_the_tuple_keeps_the_pipeline(body):
    result = migrate(body)
    [(name, reasons)] = result.pipelines
    assert reasons, f"{name} was reported migrated"
    assert b"pipe.run()" in (result.new_source or PROGRAM.encode())


@pytest.mark.parametrize("body, migrated", [
    ("    images = out[0]\n    print([np.asarray(image).shape for image in images])", True),
    ("    images = out[0]\n    for image in images:\n        print(np.array(image).sum())", True),
    # a sample's TensorList-era API fails on an ndd Tensor: the audit keeps the pipeline
    ("    images = out[0]\n    print([image.shape() for image in images])", False),
    ("    images = out[0]\n    for image in images:\n        print(image.layout())", False),
])
def test_a_helper_iterating_over_an_output_migrates_when_its_samples_are_used_alike(body, migrated):
    result = migrate(body)
    [(name, reasons)] = result.pipelines
    assert (not reasons) == migrated, reasons
    assert (b"pipe.run()" in (result.new_source or PROGRAM.encode())) != migrated



@pytest.mark.parametrize("attribute", ["layout", "shape"])
def test_hasattr_answered_alike_by_an_ndd_batch_is_no_finding(attribute):
    """`hasattr(out, "layout")` is True for a TensorList and an ndd Batch alike: `check` flagged
    it as `hasattr(out, "as_cpu")`, and the migration rewrote it to itself."""
    source = PROGRAM.format(body=f'    images, labels = out\n    print(hasattr(images, "{attribute}"), len(labels))')
    findings = check_source(source.encode(), "summary.py", Config()).diagnostics
    assert not [f for f in findings if "hasattr" in f.message]
    result = migrate(f'    images, labels = out\n    print(hasattr(images, "{attribute}"), len(labels))')
    assert result.pipelines == [("images_pipeline", [])]


def test_hasattr_an_ndd_batch_answers_differently_keeps_the_pipeline():
    result = migrate('    images, labels = out\n    print(hasattr(images, "at"), len(labels))')
    assert "hasattr" in " ".join(dict(result.pipelines)["images_pipeline"])
