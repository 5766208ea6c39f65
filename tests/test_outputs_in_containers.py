"""Outputs that reach TensorList API through containers the value model does not follow one by
one (a dict of outputs, `*rest`, a list of outputs tuples): the audit keeps the pipeline."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_source

PIPELINE = '''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def simple(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


pipe = simple("images")
pipe.build()
'''
USES = {
    "dict": 'named = dict(zip(["img", "lbl"], pipe.run()))\nprint(named["lbl"].as_array())\n',
    "dict-literal": 'images, labels = pipe.run()\nrecord = {"img": images, "lbl": labels}\nprint(record["lbl"].at(0))\n',
    "set": "images, labels = pipe.run()\nprint([b.as_array() for b in {labels}])\n",
    "starred": "first, *rest = pipe.run()\nprint([r.as_array() for r in rest])\n",
    "list-of-runs": "batches = [pipe.run() for _ in range(2)]\nprint([b[1].as_array() for b in batches])\n",
}


@pytest.mark.parametrize("use", sorted(USES))
def test_tensorlist_api_through_a_container_keeps_the_pipeline(use):
    result = migrate_source((PIPELINE + USES[use]).encode(), "flow.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    method = "at" if use == "dict-literal" else "as_array"
    assert name == "simple" and reasons and f"would fail (DM018: `.{method}()` is TensorList API" in reasons[0]


def test_check_reports_tensorlist_api_on_a_dict_of_ndd_outputs():
    source = '''import nvidia.dali.experimental.dynamic as ndd


def outputs(root):
    reader = ndd.readers.File(file_root=root)
    for jpegs, labels in reader.next_epoch(batch_size=2):
        yield ndd.decoders.image(jpegs), labels


named = dict(zip(["img", "lbl"], next(outputs("images"))))
print(named["lbl"].as_array(), len(named))
'''
    result = check_source(source.encode(), "ndd_code.py", Config())
    found = [(d.code, d.line) for d in result.diagnostics]
    assert ("DM018", 11) in found
