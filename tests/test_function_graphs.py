"""A ``with pipe:`` graph in a function that chooses its device above it, and outputs spread
into a helper (``summary(*pipe.run())``): the shapes of ``function_graph_devices``, and where
they must stay."""

from __future__ import annotations

from conftest import FIXTURES, unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SOURCE = (FIXTURES / "migrate" / "function_graph_devices.input.py").read_text()


def _migrated(source: str):
    result = migrate_source(source.encode(), "train.py", Config())
    return result, unwrapped_todos(result.new_source.decode())


def test_the_device_chosen_above_the_graph_becomes_gpu():
    result, migrated = _migrated(SOURCE)
    assert result.pipelines == [("pipe", [])]
    assert 'decoder_device = "cpu" if dali_cpu else "gpu"' in migrated and 'device="mixed"' not in migrated


def test_a_device_variable_used_for_more_than_the_graph_keeps_the_pipeline():
    source = SOURCE.replace('    pipe = Pipeline(', '    print("decoding on", decoder_device)\n    pipe = Pipeline(')
    result, migrated = _migrated(source)
    assert result.pipelines[0][1], "the pipeline is kept"
    assert "`decoder_device` holds \"mixed\" and is used for more than `device=`" in migrated
    assert 'decoder_device = "cpu" if dali_cpu else "mixed"' in migrated


def test_outputs_spread_into_a_helper_rewrite_its_parameters():
    _, migrated = _migrated(SOURCE)
    assert "print(summary(*next(pipe)))" in migrated
    assert "np.array(ndd.as_tensor(images.cpu()))" in migrated and "labels.as_array()" not in migrated


def test_a_helper_with_a_default_after_the_spread_outputs_is_not_rewritten():
    source = SOURCE.replace("def summary(images, labels):", "def summary(images, labels, scale=1.0):")
    result, migrated = _migrated(source)
    assert "images.as_cpu().as_tensor()" in migrated, "the helper is left as written"
    assert result.pipelines[0][1] or "TODO(dali-migrate): DM007" in migrated  # kept, or its call flagged
