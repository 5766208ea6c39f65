"""A module-level lambda handed pipeline outputs (``as_numpy = lambda tl: tl.as_array()``) is
read by the audit where it is called: TensorList calls in its body would fail on ndd Batches,
so the pipeline is kept (it was migrated with a TODO at the call, and the program crashed).
A lambda whose body works on either kind does not keep it."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

PROGRAM = '''import numpy as np
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels_pipeline(root):
    _, labels = fn.readers.file(file_root=root)
    return labels


{helper}

pipe = labels_pipeline("images")
pipe.build()
(labels,) = pipe.run()
print(convert(labels))
'''


def _migrated(helper: str):
    result = migrate_source(PROGRAM.format(helper=helper).encode(), "lambdas.py", Config())
    assert result.error is None
    return result


@pytest.mark.parametrize("helper", [
    "convert = lambda tl: tl.as_array()",
    "convert = lambda tl, n=1: [tl.at(i) for i in range(n)]",
])
def test_a_lambda_using_tensorlist_api_keeps_the_pipeline(helper):
    [(name, reasons)] = _migrated(helper).pipelines
    assert name == "labels_pipeline"
    assert any("after migration `convert = lambda tl" in reason and "DM018" in reason for reason in reasons)


@pytest.mark.parametrize("helper", [
    "convert = lambda tl: str(type(tl))",
    "convert = lambda tl: tl.as_array()\nconvert = print",  # bound twice: not followed
])
def test_a_lambda_that_works_on_either_kind_or_is_rebound_does_not_keep_it(helper):
    assert _migrated(helper).pipelines == [("labels_pipeline", [])]
