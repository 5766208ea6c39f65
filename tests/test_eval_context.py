"""Migrated pipelines each run in an ndd.EvalContext of their device, entered only while an
iteration is computed: two generators interleaved (train and validation) neither leave their
context current for the caller nor close it out of order, and neither changes the process-wide
thread count (a 2-thread and a 1-thread pipeline in turn hung DALI 2.4 on CPU)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

PIPELINES = """\
from nvidia.dali import fn, pipeline_def

DATA = {root!r}


@pipeline_def(batch_size=2, num_threads=2, seed=3)
def train(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
    flip = fn.random.coin_flip()
    return fn.flip(fn.decoders.image(jpegs), horizontal=flip), labels


@pipeline_def(batch_size=3, num_threads=1)
def validate(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


DEVICE = None  # the local rank on a GPU machine
train_pipe = train(DATA, device_id=DEVICE)
val_pipe = validate(DATA, device_id=DEVICE)
"""

PROBE = """\
import gc
import os
import sys

import numpy as np
from nvidia.dali.experimental.dynamic import _eval_context

import pipelines

train, val = pipelines.train_pipe, pipelines.val_pipe
for step in range(5):  # decodes alternate between a 2-thread and a 1-thread context
    images, labels = next(train)
    assert all(context is _eval_context.EvalContext.default() for context in _eval_context._tls.stack)
    vimages, vlabels = next(val)
    assert all(context is _eval_context.EvalContext.default() for context in _eval_context._tls.stack)
    print(step, np.asarray(labels.tensors[0]), np.asarray(vimages.tensors[0]).shape)
train.close()  # out of order: the training generator first
val.close()
del train, val, images, labels, vimages, vlabels
gc.collect()  # an EvalContext left out of order complains here, as "Exception ignored"
print("closed")
sys.stdout.flush()
sys.stderr.flush()
# DALI 2.4's native teardown at interpreter exit sometimes aborts ("terminate called without an
# active exception") when a shuffling reader has run, with or without any thread setting or
# EvalContext; that race is not what this probe is about
os._exit(0)
"""


def test_interleaved_generators_keep_their_contexts_to_themselves(tmp_path):
    source = PIPELINES.format(root=str(FIXTURES / "data" / "images"))
    migrated = migrate_source(source.encode(), "pipelines.py", Config()).new_source.decode()
    assert "set_num_threads" not in migrated
    assert migrated.count("context = ndd.EvalContext(device_id=device_id)") == 2
    (tmp_path / "pipelines.py").write_text(migrated)
    (tmp_path / "probe.py").write_text(PROBE)
    run = subprocess.run([sys.executable, "probe.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.endswith("closed\n")
    assert "AssertionError" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr


def test_the_old_shape_fails_the_probe(tmp_path):
    """The negative control: a generator that holds its EvalContext across ``yield``."""
    held = textwrap.dedent("""\
        import nvidia.dali.experimental.dynamic as ndd


        def train(root):
            with ndd.EvalContext(device_id=None):
                reader = ndd.readers.File(file_root=root)
                while True:
                    for jpegs, labels in reader.next_epoch(batch_size=2):
                        yield ndd.decoders.image(jpegs), labels


        train_pipe, val_pipe = train(ROOT), train(ROOT)
        """).replace("ROOT", repr(str(FIXTURES / "data" / "images")))
    (tmp_path / "pipelines.py").write_text(held)
    (tmp_path / "probe.py").write_text(PROBE)
    run = subprocess.run([sys.executable, "probe.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0 or "AssertionError" in run.stderr
