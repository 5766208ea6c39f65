"""The migrated generator takes `batch_size=`, `seed=`, ... and reads those names for its reader,
RNG and context. A graph that binds one of them (`seed = random.randint(...)`) has its own
variable renamed (`seed_`); where that cannot be done safely, or where the graph reads the
module's variable of that name, it would get another value once migrated: such a pipeline is
kept, unless the names provably hold the same value (the pipeline's default is that very
variable and no call passes another)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import printed_by, unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source
from dali_migrate.runner import run_migrate

GRAPH = '''import numpy as np
from nvidia.dali import fn, pipeline_def, types

seed = 1234
batch_size = 4


def numbers():
    while True:
        yield [np.array([k], dtype=np.int32) for k in range(2)]


@pipeline_def({decorator})
def shifted():
{body}
'''
CASES = {  # decorator, body, call -> kept with this reason (None: migrated)
    "binds batch_size": ("batch_size=2, num_threads=1, device_id=None",
                         "    data = fn.external_source(source=numbers, dtype=types.INT32)\n    batch_size = 10\n"
                         "    return data + batch_size", "shifted()", None),
    "binds it, and so does a comprehension": (
        "batch_size=2, num_threads=1, device_id=None",
        "    data = fn.external_source(source=numbers, dtype=types.INT32)\n    batch_size = 10\n"
        "    sizes = [batch_size for batch_size in range(3)]\n    return data + batch_size + len(sizes)",
        "shifted()", "the graph binds `batch_size`"),
    "reads the module's seed": ("batch_size=2, num_threads=1, device_id=None, seed=7",
                                "    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                                "    return data + seed", "shifted()", "the graph reads `seed` from outside it"),
    "the default is that name": ("batch_size=batch_size, num_threads=1, device_id=None",
                                 "    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                                 "    return data + batch_size", "shifted()", None),
    "every call passes that name": ("num_threads=1, device_id=None",
                                     "    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                                     "    return data + batch_size", "shifted(batch_size=batch_size)", None),
    "a call passes another value": ("batch_size=batch_size, num_threads=1, device_id=None",
                                    "    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                                    "    return data + batch_size", "shifted(batch_size=2)",
                                    "the graph reads `batch_size` from outside it"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_names_the_generator_takes(case):
    decorator, body, call, reason = CASES[case]
    source = GRAPH.format(decorator=decorator, body=body) + f"\npipe = {call}\npipe.build()\nprint(pipe.run())\n"
    result = migrate_source(source.encode(), "names.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    if reason is None:
        assert reasons == [] and "def shifted(*, batch_size" in result.new_source.decode()
    else:
        assert any(r.startswith(reason) for r in reasons), reasons


def test_an_importer_that_passes_the_name_the_graph_reads_keeps_the_pipeline(tmp_path: Path):
    defining = GRAPH.format(decorator="batch_size=batch_size, num_threads=1, device_id=None",
                            body="    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                                 "    return data + batch_size")
    (tmp_path / "graphs.py").write_text(defining)
    (tmp_path / "train.py").write_text("from graphs import shifted\n\npipe = shifted(batch_size=2)\npipe.build()\n"
                                       "print(pipe.run())\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    results = run_migrate([tmp_path / "graphs.py", tmp_path / "train.py"], Config(), write=True)
    assert all(r.error is None for r in results)
    assert "pipe.build()" in (tmp_path / "train.py").read_text()
    kept = unwrapped_todos((tmp_path / "graphs.py").read_text())
    assert "@pipeline_def" in kept
    assert "a call passes `batch_size=`, and the graph reads its module's `batch_size`" in kept


def test_a_call_that_passes_a_local_of_that_name_keeps_the_pipeline():
    source = GRAPH.format(decorator="num_threads=1, device_id=None",
                          body="    data = fn.external_source(source=numbers, dtype=types.INT32)\n"
                               "    return data + batch_size")
    source += ("\n\ndef first(batch_size):\n    pipe = shifted(batch_size=batch_size)\n    pipe.build()\n"
               "    return pipe.run()\n\n\nprint(first(2))\n")
    result = migrate_source(source.encode(), "names.py", Config())
    [(name, reasons)] = result.pipelines
    assert reasons == ["the graph reads its module's `batch_size`, and this call passes `batch_size=` from a "
                       "function that binds its own: the migrated generator's parameter would hold that"], reasons


def test_a_graph_binding_a_generator_name_is_renamed_and_gives_the_same_data(tmp_path: Path):
    body = ("    data = fn.external_source(source=numbers, dtype=types.INT32)\n    batch_size = 10\n"
            "    return data + batch_size")
    run = "\npipe = shifted()\npipe.build()\nfor _ in range(2):\n    print(pipe.run()[0].as_array().ravel().tolist())\n"
    source = GRAPH.format(decorator="batch_size=2, num_threads=1, device_id=None", body=body) + run
    result = migrate_source(source.encode(), "names.py", Config())
    migrated = result.new_source.decode()
    assert "batch_size_ = 10" in migrated and "data + batch_size_" in migrated
    printed = printed_by(tmp_path, original=source, migrated=migrated)
    assert printed["original"] == printed["migrated"] == "[10, 11]\n[10, 11]\n"


def test_a_with_graph_reading_its_functions_seed_keeps_the_pipeline():
    """`def make(seed): ... with pipe: fn.random.uniform(seed=seed)`: the generator's own
    `seed=None` parameter would hide the function's `seed` (the draws stopped repeating for
    equal seeds, reported migrated)."""
    source = '''from nvidia.dali import fn
from nvidia.dali.pipeline import Pipeline


def make(seed):
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        x = fn.random.uniform(range=[0.0, 1.0], seed=seed)
        pipe.set_outputs(x)
    return pipe


pipe = make(1)
pipe.build()
print(pipe.run())
'''
    result = migrate_source(source.encode(), "make.py", Config())
    [(_, reasons)] = result.pipelines
    assert reasons and reasons[0].startswith("the graph reads `seed` from outside it")
