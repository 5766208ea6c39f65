"""Property test of the audit: programs that hand pipeline outputs on through aliases made by
methods, samples picked then converted, rebindings to NumPy, tuples looped over and helper
functions. After migration each program prints what the original printed: it was migrated
correctly, or the audit kept its pipeline (with a TODO) and it still runs in pipeline mode."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

pytest.importorskip("nvidia.dali")

HEADER = f"""\
import numpy as np
from nvidia.dali import fn, pipeline_def

IMAGES = {str((FIXTURES / "data" / "images").resolve())!r}


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def small(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8), labels


def show(batch):
    print("show", len(batch), batch.at(0).shape)


def first(batch):
    return batch.at(0)


def main():
    pipe = small(IMAGES)
    pipe.build()
    out = pipe.run()
"""

USES = [
    "imgs = out[0].as_cpu()\n    show(imgs)",                      # an alias made by a method
    "print('sample', np.array(out[1][0]))",                            # a sample picked, then converted
    "x = out[1]\n    x = x.as_array()\n    print('rebound', x[0])",   # rebound to NumPy
    "a, b = pipe.run()\n    for o in (a, b):\n        print('o', o.at(0).shape)",  # through a tuple
    "print('direct', out[1].at(0), len(out[0]))",
    "print('returned', first(out[1]))",
    "labels = out[1]\n    print('alias', labels.at(1))",
]


def _run(source: str, folder) -> str:
    path = folder / "program.py"
    path.write_text(source + "\n\nif __name__ == '__main__':\n    main()\n")
    done = subprocess.run([sys.executable, "-u", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 or "terminate called without" in done.stderr, done.stderr[-1500:]
    return done.stdout


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(uses=st.lists(st.sampled_from(USES), min_size=1, max_size=3, unique=True))
def test_outputs_handed_on_are_migrated_right_or_kept(tmp_path_factory, uses):
    source = HEADER + "".join(f"    {use}\n" for use in uses)
    result = migrate_source(source.encode(), "program.py", Config())
    assert result.error is None
    folder = tmp_path_factory.mktemp("program")
    original = _run(source, folder)
    migrated_source = (result.new_source or source.encode()).decode()
    assert _run(migrated_source, folder) == original, migrated_source
    kept = [reasons for _, reasons in result.pipelines if reasons]
    assert bool(kept) == ("@pipeline_def" in migrated_source)
    assert bool(kept) == any(d.fix == "todo" for d in result.diagnostics)
