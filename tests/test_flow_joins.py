"""Outputs bound where control flow joins: by an assignment expression (`if (out := pipe.run())
is not None:`), in a `try:` whose handler rebinds the name (`except StopIteration: out =
None`), in the cases of a `match` and through `or`. The walrus form migrates (same program output); past the `try:` the name may hold the
outputs still, so TensorList API on it is the audit's to judge (the pipeline was reported
migrated with `out[1].at(0)` left on an ndd Batch, which crashed)."""

from __future__ import annotations

import pytest

from conftest import IMAGES_PIPELINE, NDD_GENERATOR, printed_by
from dali_migrate.audit import audit
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEAD = IMAGES_PIPELINE + '''pipe = images_pipeline(IMAGES)
pipe.build()
'''


@pytest.mark.parametrize("body", [
    "if (out := pipe.run()) is not None:\n    print(np.array(out[1].at(0)), np.array(out[0].at(1)).sum())\n",
    "n = 0\nwhile (out := pipe.run()) and n < 2:\n    n += 1\n    print(np.array(out[1].at(0)))\n",
])
def test_outputs_bound_by_an_assignment_expression_migrate(tmp_path, body):
    original = HEAD + body
    result = migrate_source(original.encode(), "walrus.py", Config())
    assert result.pipelines == [("images_pipeline", [])]
    migrated = result.new_source.decode()
    assert ".at(" not in migrated and "out[1].tensors[0]" in migrated
    printed = printed_by(tmp_path, original=original, migrated=migrated)
    assert printed["migrated"] == printed["original"] != ""


@pytest.mark.parametrize("body", [
    "try:\n    out = pipe.run()\nexcept StopIteration:\n    out = None\nprint(np.array(out[1].at(0)))\n",
    "print([np.array((o := pipe.run())[1].at(0)) for _ in range(2)])\n",
    "match pipe.run():\n    case (images, labels):\n        print(np.array(labels.at(0)))\n",
    "out = pipe.run() or None\nprint(np.array(out[1].at(0)))\n",
])
def test_outputs_the_migration_does_not_follow_there_keep_the_pipeline(body):
    result = migrate_source((HEAD + body).encode(), "joins.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "images_pipeline" and any("`.at()`" in reason for reason in reasons), reasons


@pytest.mark.parametrize("code", [
    "try:\n    out = next(gen)\nexcept StopIteration:\n    out = None\nprint(out[1].at(0))\n",
    "try:\n    pass\nexcept ValueError:\n    out = next(gen)\nprint(out[1].at(0))\n",
    "out = None\ntry:\n    out = next(gen)\nfinally:\n    print('done')\nprint(out[1].at(0))\n",
    "try:\n    out = next(gen)\n    int('x')\nexcept ValueError:\n    print(out[1].at(0))\nelse:\n    out = None\n",
    "if (out := next(gen)) is not None:\n    print(out[1].at(0))\n",
    "match next(gen):\n    case (images, labels):\n        print(labels.at(0))\n",
    "match next(gen):\n    case [images, *rest]:\n        print(images.at(0))\n",
    "match next(gen):\n    case None:\n        pass\n    case outputs:\n        print(outputs[1].at(0))\n",
    "out = next(gen) or None\nprint(out[1].at(0))\n",
])
def test_the_audit_sees_outputs_past_a_try_and_through_a_walrus(code):
    migrated = (NDD_GENERATOR + code).encode()
    problems = audit(migrated, "utf-8", b"")
    assert [p.origins for p in problems] == [frozenset({"graph"})], problems
    assert "`.at()`" in problems[0].message
