"""A random operator in a per-sample `if`'s own condition: computed for the batch first, as
pipeline mode computes a condition before it splits the batch; not where the condition, or an
`elif`, runs it only for some samples."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

GRAPH = '''\
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
def augment(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.decoders.image(jpegs)
    condition = labels
{statement}
    return images, condition
'''


def _migrated(statement: str):
    return migrate_source(GRAPH.format(statement=statement).encode(), "augment.py", Config())


def test_the_condition_is_drawn_for_the_batch_and_read_per_sample():
    result = _migrated("    if fn.random.coin_flip(probability=0.5):\n        images = fn.flip(images, horizontal=1)")
    code = result.new_source.decode()
    assert result.pipelines == [("augment", [])]
    # ``condition`` is the graph's own: the drawn one gets a name of its own
    assert ("condition_1 = ndd.random.coin_flip(\n"
            "                probability=0.5, batch_size=batch_size, rng=rng\n"
            "            )\n") in code
    assert "def per_sample_if(condition_1, images):" in code
    assert "if bool(np.asarray(condition_1)):" in code
    assert "zip(condition_1, images)" in code


@pytest.mark.parametrize("statement", [
    # ``and`` runs its right operand only for the samples whose left one is true
    "    if labels[0] > 0 and fn.random.coin_flip(probability=0.5):\n        images = fn.flip(images, horizontal=1)",
    # an ``elif`` condition runs only for the samples the ``if`` did not take
    "    if labels[0] > 0:\n        images = fn.flip(images, vertical=1)\n"
    "    elif fn.random.coin_flip(probability=0.5):\n        images = fn.flip(images, horizontal=1)",
])
def test_a_condition_drawn_for_some_samples_keeps_the_pipeline(statement):
    result = _migrated(statement)
    assert result.pipelines and result.pipelines[0][1], result.pipelines
    assert "inside a per-sample `if`" in result.pipelines[0][1][0]
