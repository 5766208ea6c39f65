"""Outputs handed on in ways that bind no name: spread into a call (`show(**{"batch": labels})`,
`show(*batches)`), put into a container (`history.append(pipe.run())`, `cache[key] = out`) or
handed with a function to a call that runs it later (`Thread(target=show, args=(labels,))`),
or made a lambda's default (`lambda batch=labels: ...`).
The migration follows none of them, and the audit did not either: each was reported migrated
with `.at()` left on an ndd Batch, which crashed (in a thread, with exit code 0)."""

from __future__ import annotations

import pytest

from conftest import IMAGES_PIPELINE, NDD_GENERATOR, printed_by
from dali_migrate.audit import audit
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEAD = IMAGES_PIPELINE + '''def show(batch):
    print(np.array(batch.at(0)))


pipe = images_pipeline(IMAGES)
pipe.build()
'''


@pytest.mark.parametrize("body", [
    "images, labels = pipe.run()\nshow(**{'batch': labels})\n",
    "history = []\nhistory.append(pipe.run())\nprint(np.array(history[-1][1].at(0)))\n",
    "cache = {}\ncache['last'] = pipe.run()\nprint(np.array(cache['last'][1].at(0)))\n",
    "import threading\nimages, labels = pipe.run()\nworker = threading.Thread(target=show, args=(labels,))\n"
    "worker.start()\nworker.join()\n",
    "from concurrent.futures import ThreadPoolExecutor\nimages, labels = pipe.run()\n"
    "with ThreadPoolExecutor(1) as pool:\n    pool.submit(show, labels).result()\n",
    "import functools\nimages, labels = pipe.run()\nlater = functools.partial(show, labels)\nlater()\n",
    # a lambda's default is computed where it is written
    "images, labels = pipe.run()\nfirst = lambda batch=labels: np.array(batch.at(0))\nprint(first())\n",
])
def test_outputs_handed_on_without_a_name_keep_the_pipeline(body):
    result = migrate_source((HEAD + body).encode(), "handed.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "images_pipeline" and any("`.at()`" in reason for reason in reasons), reasons


@pytest.mark.parametrize("code", [
    "def show(batch):\n    return batch.at(0)\nimages, labels = next(gen)\nshow(**{'batch': labels})\n",
    "def show(*batches):\n    return [b.at(0) for b in batches]\nshow(*next(gen))\n",
    "def show(*batches):\n    return [b.at(0) for b in batches]\nimages, labels = next(gen)\nshow(images, labels)\n",
    "def show(**batches):\n    return batches['labels'].at(0)\nimages, labels = next(gen)\nshow(labels=labels)\n",
    "def show(batch):\n    return batch.at(0)\noptions = {'batch': next(gen)[1]}\nshow(**options)\n",
    "history = []\nhistory.append(next(gen))\nprint(history[0][1].at(0))\n",
    "cache = {}\ncache['last'] = next(gen)\nprint(cache['last'][1].at(0))\n",
    "cache = {'train': {}}\ncache['train']['last'] = next(gen)\nprint(cache['train']['last'][1].at(0))\n",
    "import queue\nq = queue.Queue()\nq.put(next(gen)[1])\nprint(q.get().at(0))\n",
    "history = []\ndef step():\n    history.append(next(gen))\nstep()\nprint(history[0][1].at(0))\n",
    "def show(batch):\n    return batch.at(0)\nimport threading\nimages, labels = next(gen)\n"
    "threading.Thread(target=show, args=(labels,)).start()\n",
    "images, labels = next(gen)\nfirst = lambda batch=labels: batch.at(0)\nprint(first())\n",
])
def test_the_audit_follows_outputs_into_spreads_containers_and_callbacks(code):
    source = (NDD_GENERATOR + code).encode()
    problems = audit(source, "utf-8", source)  # its functions are as they were
    assert len(problems) == 1 and "graph" in problems[0].origins, problems
    assert "`.at()`" in problems[0].message


@pytest.mark.parametrize("code", [
    "import numpy as np\ndef show(batch):\n    return batch.at(0)\nshow(**{'batch': np.zeros(2)})\n",
    "history = []\nhistory.append(1)\nprint(history[0].at(0))\n",
    "def show(batch):\n    return batch.at(0)\nimport threading\nthreading.Thread(target=show, args=(3,)).start()\n",
    "def show(batch):\n    return batch.tensors[0]\nimages, labels = next(gen)\nshow(**{'batch': labels})\n",
])
def test_what_holds_no_outputs_or_uses_them_right_is_not_reported(code):
    source = (NDD_GENERATOR + code).encode()
    assert audit(source, "utf-8", source) == []


@pytest.mark.parametrize("code", [
    "stream = iter(lambda: next(gen), None)\nprint(next(stream)[1].at(0))\n",
    "def grab():\n    return next(gen)\nfor outputs in iter(grab, None):\n    print(len(outputs[0]))\n",
])
def test_the_audit_follows_outputs_through_iter_of_a_function(code):
    """``iter(lambda: pipe.run(), None)``: the migration rewrote the lambda, left a helper's
    ``len(out)`` and reported the pipeline migrated; it crashed."""
    source = (NDD_GENERATOR + code).encode()
    problems = audit(source, "utf-8", source)
    assert len(problems) == 1 and "graph" in problems[0].origins, problems


def show_outputs_helper(loop: str) -> str:
    return HEAD.replace("def show(batch):\n    print(np.array(batch.at(0)))\n",
                        f"def show(step, outs):\n    {loop}\n"
                        "        print(step, [np.array(out.at(i)).sum() for i in range(len(out))])\n")


@pytest.mark.parametrize("loop", ["for out in outs:", "for index, out in enumerate(outs):"])
def test_a_helper_looping_over_an_outputs_tuple_migrates(tmp_path, loop):
    original = show_outputs_helper(loop) + "for step in range(3):\n    show(step, pipe.run())\n"
    result = migrate_source(original.encode(), "loops.py", Config())
    assert result.pipelines == [("images_pipeline", [])]
    migrated = result.new_source.decode()
    assert "out.tensors[i]" in migrated and "range(out.batch_size)" in migrated
    printed = printed_by(tmp_path, original=original, migrated=migrated)
    assert printed["migrated"] == printed["original"] != ""


@pytest.mark.parametrize("loop", ["for out in outs:\n        remember(out)", "for out, again in zip(outs, outs):",
                                  "for out in outs[:1]:"])
def test_a_helper_using_its_loop_variable_otherwise_keeps_the_pipeline(loop):
    original = "def remember(x):\n    pass\n" + show_outputs_helper(loop) + "show(0, pipe.run())\n"
    [(name, reasons)] = migrate_source(original.encode(), "loops.py", Config()).pipelines
    assert any("`len()`" in reason for reason in reasons), reasons
