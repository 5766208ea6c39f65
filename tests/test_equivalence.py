"""Every CPU-runnable migrated fixture runs and gives the same data as its original."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from dali_migrate.verify import VerifyOptions, verify_files

pytest.importorskip("nvidia.dali")

ARRAYS = sorted(str(path) for path in (FIXTURES / "data" / "arrays").resolve().glob("*.npy"))

# fixture -> the --arg values its first call site needs (names local to the caller)
RUNNABLE = {
    "train_classifier": {},
    "manual_prefetch": {},
    "augment_random": {},
    "sharded_eval": {},
    "with_pipeline": {},
    "notebook_cells": {},
    "epoch_loop": {"shard_id": 1, "num_shards": 3},
    "explore_notebook": {},
    "shuffled_epochs": {},
    "external_data": {},
    "legacy_subclass": {},
    "legacy_helper_methods": {},
    "legacy_base_class": {},
    "paired_readers": {},
    "numpy_augment": {},
    "torch_training": {"shard_id": 1, "num_shards": 2},
    "per_sample_conditionals": {},
    "random_conditions": {},
    "build_loop": {"training": True, "batch_size": 4},
    "resume_training": {},
    "external_iterator": {},
    "graph_helpers": {},
    "trust_imports": {},
    "display_helpers": {},
    "named_outputs": {},
    "guarded_imports": {"data_dir": str(FIXTURES / "data" / "images")},
    "graph_setup": {},
    "shapes_as_batches": {},
    "trust_methods": {"root": str(FIXTURES / "data" / "images")},
    "train_script": {"data_dir": str(FIXTURES / "data" / "images"), "shard_id": 1, "num_shards": 2, "gpu": False},
    "gallery_notebook": {},
    "numpy_notebook": {},
    "one_shot_notebook": {},
    "dense_checks": {},
    "source_epochs": {"root": str(FIXTURES / "data" / "images"), "gpu": False},
    "source_objects": {},
    "source_locals": {"data_dir": str(FIXTURES / "data" / "arrays")},
    "optional_dali": {"root": str(FIXTURES / "data" / "images")},
    "parameter_sources": {},
    "external_input_aliases": {},
    "torch_copies": {},
    "flow_bindings": {},
    "math_functions": {},
    "trust_outputs": {},
    "pipeline_helpers": {"root": str(FIXTURES / "data" / "images")},
    "trust_names": {},
    "scoped_pipelines": {"data_dir": str(FIXTURES / "data" / "images")},
    "main_globals": {"data_dir": str(FIXTURES / "data" / "images"), "crop": 16},
    "lightning_datamodule": {"root": str(FIXTURES / "data" / "images"), "size": 16},
    "multicrop_views": {},
    "swav_crops": {},
    "speech_features": {},
    "ssd_detection": {"shard_id": 0, "num_shards": 1},
    "affine_transforms": {},
    "tfrecord_features": {},
    "inline_iterator": {},
    "jax_loaders": {"file_root": str(FIXTURES / "data" / "images")},
    "pipeline_arguments": {},
    "current_pipeline": {},
    "segmentation_wrapper": {"batch_size": 2, "imgs": ARRAYS, "lbls": ARRAYS},
    "speech_jasper": {"batch_size": 2, "train_pipeline": False},
    "legacy_iterator_size": {"batch_size": 3, "shard_id": 0, "num_shards": 1},
    "pipelines_per_gpu": {"batch_size": 2, "shard_id": 1, "num_shards": 3},
    "shared_graph_tail": {},
    "sample_tensors": {},
    "constant_batches": {},
    "handed_loader": {"data_dir": str(FIXTURES / "data" / "images"), "crop": 16, "batch_size": 4},
    "returned_pipelines": {"data_dir": str(FIXTURES / "data" / "images"), "crop": 16, "batch_size": 4,
                           "num_threads": 1},
}
# fixtures that import PyTorch (installed by .ci/run from the machine's local wheel)
NEEDS_TORCH = {"inline_iterator", "nemo_audio_dataset", "iter_setup_feed", "torch_training", "lightning_datamodule", "held_in_self", "train_script", "source_epochs", "self_sources", "torch_copies",
               "segmentation_wrapper", "speech_jasper", "raised_source_epochs", "legacy_iterator_size", "datapipe_on_self", "nested_loader",
               "handed_loader", "returned_pipelines", "guarded_imports", "pipelines_per_gpu"}


# fixtures that import JAX (.ci/run installs its CPU build)
NEEDS_JAX = {"jax_loaders"}


def _skip_without_frameworks(stem: str) -> None:
    if stem in NEEDS_TORCH:
        pytest.importorskip("torch")
    if stem in NEEDS_JAX:
        pytest.importorskip("jax")


def _fixture(stem: str, kind: str):
    folder = FIXTURES / "migrate"
    return next(folder.glob(f"{stem}.{kind}.py"), None) or folder / f"{stem}.{kind}.ipynb"
# Whole programs whose printed output must not change. train_classifier prints a sample
# object itself, whose repr names its type (TensorCPU before, Tensor after).
# Programs whose pipelines the audit keeps (wholly or in part): they must still run as before.
KEPT_BY_THE_AUDIT = {"trust_graphs", "source_objects_kept", "parameter_sources_kept", "operator_objects_kept"}
# Programs compared as whole programs only: the harness cannot build their pipelines itself (a
# seed computed at the call, `seed=12 + device_id`; a pipeline made inside `__init__`).
PROGRAM_ONLY = {"nemo_audio_dataset", "datapipe_on_self", "legacy_nvidia_style", "held_pipelines", "held_in_self", "self_sources", "iter_setup_feed",
                "graph_attributes", "pipeline_functions_passed", "raised_source_epochs", "manual_source_epochs",
                "pipeline_settings", "spread_arguments", "nested_loader", "pipeline_containers",
                "function_graph_devices"}
# train_script's losses follow its random augmentation, which draws from a new ndd RNG stream:
# only the harness, which aligns the streams, compares it
# random_conditions prints what its random operators drew, from ndd's stream once migrated: the
# harness above compares it bit for bit with the draws aligned.
SAME_OUTPUT = sorted(set(RUNNABLE) - {"train_classifier", "train_script", "random_conditions"}
                     | KEPT_BY_THE_AUDIT | PROGRAM_ONLY)


@pytest.mark.parametrize("stem", sorted(RUNNABLE))
def test_migrated_fixture_is_bit_exact(stem):
    _skip_without_frameworks(stem)
    original, migrated = _fixture(stem, "input"), _fixture(stem, "expected")
    report = verify_files(original, migrated, VerifyOptions(args=RUNNABLE[stem], iterations=4, rtol=0, atol=0))
    assert report.error == ""
    assert report.pipelines
    for pipeline in report.pipelines:
        assert pipeline.original.ok, pipeline.original.error
        assert pipeline.migrated.ok, pipeline.migrated.error
        assert pipeline.comparison.mismatches == []
        assert pipeline.rng_aligned
    assert report.exit_code == 0


@pytest.mark.parametrize("stem", SAME_OUTPUT)
def test_migrated_program_prints_what_the_original_printed(stem):
    """The call sites too: loops over epoch_size, build/run, TensorList accessors, and the
    PyTorch training loops fed by DALIGenericIterator, step by step."""
    _skip_without_frameworks(stem)
    import subprocess
    import sys

    from dali_migrate.notebook import notebook_script

    def run(path):
        # notebooks run as their code cells, from their folder, as Jupyter runs them
        command = [sys.executable, "-c", notebook_script(path.read_bytes())] if path.suffix == ".ipynb" else [sys.executable, str(path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=path.parent)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    original = run(_fixture(stem, "input"))
    assert original.strip()
    assert run(_fixture(stem, "expected")) == original


def test_in_memory_migration_is_verified_without_a_second_file():
    report = verify_files(FIXTURES / "migrate" / "train_classifier.input.py", None, VerifyOptions(iterations=3))
    assert report.exit_code == 0
    assert [p.name for p in report.pipelines] == ["train_pipeline"]
    assert not list((FIXTURES / "migrate").glob(".*.dali-migrate-verify.py"))


def test_pytest_fixture_asserts_in_one_line(dali_equivalence):
    dali_equivalence(FIXTURES / "migrate" / "sharded_eval.input.py", iterations=2)


def test_pytest_fixture_names_the_difference(dali_equivalence, tmp_path):
    broken = FIXTURES / "migrate" / ".planted_fixture.py"
    broken.write_text((FIXTURES / "migrate" / "sharded_eval.expected.py").read_text().replace("resize_shorter=20", "resize_shorter=22"))
    try:
        with pytest.raises(AssertionError, match="values at iteration 0, output 0"):
            dali_equivalence(FIXTURES / "migrate" / "sharded_eval.input.py", broken, iterations=1)
    finally:
        broken.unlink()


def _gpu_available() -> bool:
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _gpu_available(), reason="needs an NVIDIA GPU")
def test_gpu_run_is_bit_exact_where_a_gpu_exists():
    report = verify_files(FIXTURES / "migrate" / "train_classifier.input.py", None,
                          VerifyOptions(iterations=3, device="gpu"))
    assert report.exit_code == 0, [(p.original.error, p.migrated.error) for p in report.pipelines]


def test_device_id_from_a_variable_runs_in_an_eval_context_on_cpu(tmp_path):
    """``device_id`` becomes a parameter and ``ndd.EvalContext``; with no GPU it is None."""
    source = tmp_path / "ranked.py"
    source.write_text(
        "from nvidia.dali import fn, pipeline_def\n\n"
        f"DATA = {str((FIXTURES / 'data' / 'images').resolve())!r}\n"
        "DEVICE = None  # the local rank on a GPU machine\n\n\n"
        "@pipeline_def(batch_size=3, num_threads=1, seed=4)\n"
        "def ranked(root):\n"
        "    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)\n"
        "    flip = fn.random.coin_flip()\n"
        "    return fn.flip(fn.decoders.image(jpegs), horizontal=flip), labels\n\n\n"
        "pipe = ranked(DATA, device_id=DEVICE)\n"
    )
    from dali_migrate.config import Config
    from dali_migrate.engine import migrate_source

    migrated = migrate_source(source.read_bytes(), "ranked.py", Config()).new_source.decode()
    assert "    context = ndd.EvalContext(device_id=device_id)\n" in migrated
    assert "            with context:\n" in migrated and "            yield outputs\n" in migrated
    report = verify_files(source, None, VerifyOptions(iterations=4, rtol=0, atol=0))
    assert report.exit_code == 0, [(p.original.error, p.migrated.error, p.comparison) for p in report.pipelines]
    assert report.pipelines[0].rng_aligned


def test_a_parallel_source_whose_workers_are_spawned_is_verified(tmp_path):
    """Spawned workers unpickle the source by its module's name: the harness's module must be
    importable there too (DALI's parallel external source examples use ``"spawn"``)."""
    source = tmp_path / "spawned.py"
    source.write_text(
        "import numpy as np\nfrom nvidia.dali import fn, pipeline_def, types\n\n\n"
        "class Squares:\n    def __call__(self, sample_info):\n"
        "        if sample_info.iteration >= 3:\n            raise StopIteration\n"
        "        return np.array([sample_info.idx_in_epoch ** 2], dtype=np.int32)\n\n\n"
        "@pipeline_def(batch_size=2, num_threads=1, device_id=None, py_num_workers=2, py_start_method='spawn')\n"
        "def spawned(source):\n"
        "    data = fn.external_source(source=source, batch=False, parallel=True, dtype=types.INT32)\n"
        "    return data\n\n\n"
        "if __name__ == '__main__':\n    pipe = spawned(Squares())\n    pipe.build()\n    print(pipe.run())\n"
    )
    report = verify_files(source, None, VerifyOptions(iterations=3, rtol=0, atol=0))
    assert [p.name for p in report.pipelines] == ["spawned"]
    pipeline = report.pipelines[0]
    assert pipeline.original.ok, pipeline.original.error
    assert report.exit_code == 0
    assert len(pipeline.original.iterations) == 3
