"""Planted differences are caught and named by the harness."""

from __future__ import annotations

import io
import shutil

import pytest

from conftest import FIXTURES
from dali_migrate.verify import VerifyOptions, verify_files
from dali_migrate.verify.report import write_verify_report

pytest.importorskip("nvidia.dali")

EXPECTED = FIXTURES / "migrate" / "train_classifier.expected.py"
ORIGINAL = FIXTURES / "migrate" / "train_classifier.input.py"


def _planted(tmp_path, old: str, new: str):
    text = EXPECTED.read_text()
    assert old in text, old
    target = FIXTURES / "migrate" / f".planted_{tmp_path.name}.py"
    target.write_text(text.replace(old, new))
    return target


@pytest.fixture
def planted(tmp_path):
    made = []

    def make(old, new):
        path = _planted(tmp_path, old, new)
        made.append(path)
        return path

    yield make
    for path in made:
        path.unlink()


def _whats(report):
    (pipeline,) = report.pipelines
    assert pipeline.original.ok and pipeline.migrated.ok, (pipeline.original.error, pipeline.migrated.error)
    return {(m.what, m.output) for m in pipeline.comparison.mismatches}


def test_changed_resize_size_is_a_shape_mismatch(planted):
    report = verify_files(ORIGINAL, planted("resize_x=crop, resize_y=crop", "resize_x=crop, resize_y=crop + 1"), VerifyOptions())
    assert ("shape", 0) in _whats(report)
    assert report.exit_code == 1


def test_swapped_outputs_are_caught(planted):
    report = verify_files(ORIGINAL, planted("yield images.evaluate(), labels.evaluate(),", "yield labels.evaluate(), images.evaluate(),"), VerifyOptions())
    whats = _whats(report)
    assert ("shape", 0) in whats and ("shape", 1) in whats


def test_wrong_dtype_is_caught(planted):
    report = verify_files(ORIGINAL, planted("dtype=ndd.float32", "dtype=ndd.float16"), VerifyOptions())
    assert ("dtype", 0) in _whats(report)


def test_dropped_sample_is_caught(planted):
    path = planted("yield images.evaluate(), labels.evaluate(),",
                   "yield ndd.batch(list(images)[1:]).evaluate(), labels.evaluate(),")
    assert ("samples", 0) in _whats(verify_files(ORIGINAL, path, VerifyOptions()))


def test_misaligned_rng_is_caught(planted):
    path = planted("rng = ndd.random.RNG(seed=seed)", "rng = ndd.random.RNG(seed=seed + 1)")
    whats = _whats(verify_files(ORIGINAL, path, VerifyOptions(iterations=4)))
    assert ("values", 0) in whats


def test_swapped_random_call_order_is_caught(tmp_path):
    """Negative control: the stream is consumed in call order, so order matters."""
    source = FIXTURES / "migrate" / "augment_random.expected.py"
    text = source.read_text()
    swapped = text.replace("rng = ndd.random.RNG(seed=seed)\n", "rng = ndd.random.RNG(seed=seed)\n    ndd.random.uniform(batch_size=1, rng=rng)\n")
    assert swapped != text
    target = source.with_name(".planted_order.py")
    target.write_text(swapped)
    try:
        report = verify_files(FIXTURES / "migrate" / "augment_random.input.py", target, VerifyOptions())
    finally:
        target.unlink()
    assert report.exit_code == 1


def test_missing_data_is_reported_as_could_not_run(tmp_path):
    copy = tmp_path / "train.py"
    shutil.copy(ORIGINAL, copy)
    report = verify_files(copy, None, VerifyOptions())
    (pipeline,) = report.pipelines
    assert pipeline.status == "could not run"
    assert pipeline.original.kind == "missing-data"
    assert report.exit_code == 2


def test_unseeded_random_pipeline_built_by_the_module_is_compared_statistically(tmp_path):
    """No seed to inject: exact equality cannot be expected, and the report says so."""
    from dali_migrate.verify import VerifyOptions, verify_files

    source = tmp_path / "notebook_like.py"
    source.write_text(
        "from nvidia.dali import Pipeline, fn\n"
        "pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)\n"
        "with pipe:\n"
        "    pipe.set_outputs(fn.random.uniform(range=[0.0, 1.0], shape=[64]))\n"
    )
    report = verify_files(source, None, VerifyOptions(iterations=3))
    (pipeline,) = report.pipelines
    assert not pipeline.rng_aligned
    assert pipeline.comparison is not None and report.exit_code == 0


def test_data_that_ends_early_on_one_side_is_caught():
    """A source that runs out ends both sides' runs; ending at another batch is a difference."""
    original = FIXTURES / "migrate" / "external_iterator.input.py"
    migrated = FIXTURES / "migrate" / "external_iterator.expected.py"
    only = ("external_pipe",)
    equal = verify_files(original, migrated, VerifyOptions(pipelines=only, iterations=5))
    (pipeline,) = equal.pipelines
    assert pipeline.original.ok and len(pipeline.original.iterations) == 3  # the source has 3 batches
    assert equal.exit_code == 0
    text = migrated.read_text()
    assert "if self.i >= 3:" in text
    early = FIXTURES / "migrate" / ".planted_external_iterator.py"
    early.write_text(text.replace("if self.i >= 3:", "if self.i >= 2:"))
    try:
        report = verify_files(original, early, VerifyOptions(pipelines=only, iterations=5))
    finally:
        early.unlink()
    assert ("outputs", -1) in _whats(report)
    assert report.exit_code == 1



IMAGES = FIXTURES / "data" / "images"


def test_a_call_site_argument_local_to_its_caller_is_named_with_the_arg_to_give(tmp_path):
    """`num_threads=args.workers` inside `main()`: the harness cannot compute it at the module's
    level, and says which argument to give with --arg."""
    source = tmp_path / "cli_script.py"
    source.write_text(
        "from nvidia.dali import fn, pipeline_def\n\n\n"
        "@pipeline_def(batch_size=2, device_id=None)\n"
        "def labels(root):\n"
        "    jpegs, labels = fn.readers.file(file_root=root)\n"
        "    return labels\n\n\n"
        "def main(args):\n"
        "    pipe = labels(args.root, num_threads=args.workers)\n"
        "    pipe.build()\n"
    )
    failed = verify_files(source, None, VerifyOptions(iterations=1, args={"root": str(IMAGES)}))
    (pipeline,) = failed.pipelines
    assert "`args.workers` for `num_threads`" in pipeline.original.error
    assert "--arg num_threads=VALUE" in pipeline.original.error
    shown = io.StringIO()
    write_verify_report(failed, shown, None)
    assert "labels: could not run\n" in shown.getvalue()  # no comparison was made to describe
    given = verify_files(source, None, VerifyOptions(iterations=1, args={"root": str(IMAGES), "num_threads": 1}))
    assert given.exit_code == 0, [(p.original.error, p.migrated.error) for p in given.pipelines]


@pytest.mark.parametrize("given", [{"args": {"batch_size": 2, "rank": 0}}, {"batch_size": 2, "args": {"rank": 0}}])
def test_batch_size_and_seed_local_to_the_caller_are_the_harness_own(tmp_path, given):
    """`batch_size=batch_size` inside `main()`: the harness passes its own value, given as --arg
    or --batch-size, and does not evaluate the caller's name."""
    source = tmp_path / "local_sizes.py"
    source.write_text(
        "import nvidia.dali.ops as ops\n"
        "from nvidia.dali.pipeline import Pipeline\n\n\n"
        "class Labels(Pipeline):\n"
        "    def __init__(self, batch_size, num_threads, device_id, root, rank=0):\n"
        "        super().__init__(batch_size, num_threads, device_id, seed=12 + rank)\n"
        "        self.input = ops.readers.File(file_root=root)\n\n"
        "    def define_graph(self):\n"
        "        jpegs, labels = self.input()\n"
        "        return labels\n\n\n"
        "def main(root, batch_size, rank):\n"
        "    pipe = Labels(batch_size=batch_size, num_threads=1, device_id=None, root=root, rank=rank)\n"
        "    pipe.build()\n"
    )
    options = {"iterations": 1, **given, "args": {"root": str(IMAGES), **given.get("args", {})}}
    report = verify_files(source, None, VerifyOptions(**options))
    assert report.exit_code == 0, [(p.original.error, p.migrated.error) for p in report.pipelines]
    assert report.pipelines[0].batch_size == 2


def test_an_arg_goes_only_to_the_pipelines_that_take_it(tmp_path):
    source = tmp_path / "two_pipelines.py"
    source.write_text(
        "from nvidia.dali import fn, pipeline_def\n\n"
        f"ROOT = {str(IMAGES)!r}\n\n\n"
        "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
        "def labels(root):\n"
        "    jpegs, labels = fn.readers.file(file_root=root)\n"
        "    return labels\n\n\n"
        "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
        "def fixed_labels():\n"
        "    jpegs, labels = fn.readers.file(file_root=ROOT)\n"
        "    return labels\n\n\n"
        "pipe = labels(ROOT)\n"
        "other = fixed_labels()\n"
    )
    report = verify_files(source, None, VerifyOptions(iterations=1, args={"root": str(IMAGES)}))
    assert report.exit_code == 0, [(p.name, p.original.error, p.migrated.error) for p in report.pipelines]
    assert sorted(p.name for p in report.pipelines) == ["fixed_labels", "labels"]
