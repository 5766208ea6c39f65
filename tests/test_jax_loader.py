"""The JAX loader written in place of DALI's JAX DALIGenericIterator, against that iterator:
the same arrays per step, epoch after epoch, for shard layouts, padding and both policies it
takes (FILL and DROP), and a migrated file that runs as its original did."""

import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")
ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")
from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: E402
from nvidia.dali.plugin.jax import DALIGenericIterator  # noqa: E402

from dali_migrate.migrate import torch_loader  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..")
FILES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "data", "images", "*", "*")))
POLICIES = {"fill": LastBatchPolicy.FILL, "drop": LastBatchPolicy.DROP}

namespace: dict = {}
exec(torch_loader.source(jax_name=torch_loader.JAX_CLASS_NAME), namespace)
DALIJaxLoader = namespace[torch_loader.JAX_CLASS_NAME]


def reader_args(files, shards, shard, stick, pad):
    return dict(files=FILES[:files], labels=list(range(files)), num_shards=shards, shard_id=shard,
                stick_to_shard=stick, pad_last_batch=pad)


def dali_iterator(args, batch_size, policy):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def labels_and_images():
        jpegs, label = fn.readers.file(**args, name="Reader")
        return label, fn.resize(fn.decoders.image(jpegs), size=[4, 4])

    return DALIGenericIterator(labels_and_images(), ["label", "image"], reader_name="Reader",
                               last_batch_policy=POLICIES[policy], auto_reset=True)


def migrated_loader(args, batch_size, policy):
    def batches():
        reader = ndd.readers.File(**args)
        while True:
            for jpegs, labels in reader.next_epoch(batch_size=batch_size):
                yield labels, ndd.resize(ndd.decoders.image(jpegs), size=[4, 4])

    meta = ndd.readers.File(**args).get_metadata()
    return DALIJaxLoader(batches(), ["label", "image"], batch_size, meta, last_batch_policy=policy,
                         auto_reset=True)


def epochs(loader, count):
    """Every step of ``count`` epochs, all kept until the end (an array must not change when
    later steps run)."""
    steps = [(len(loader), list(loader)) for _ in range(count)]
    return [(length, [{name: (type(array).__name__, array.dtype, np.asarray(array).tolist())
                       for name, array in step.items()} for step in epoch]) for length, epoch in steps]


LAYOUTS = [  # files, batch size, shards, shard id, stick_to_shard, pad_last_batch
    (11, 4, 1, 0, False, False), (8, 4, 1, 0, False, False), (11, 4, 1, 0, False, True),
    (11, 2, 3, 1, False, False), (11, 3, 3, 0, False, True), (7, 3, 2, 1, False, False),
]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: "-".join(map(str, layout)))
def test_same_arrays_and_epochs_as_dalis_jax_iterator(layout, policy):
    files, batch_size, shards, shard, stick, pad = layout
    args = reader_args(files, shards, shard, stick, pad)
    expected = epochs(dali_iterator(args, batch_size, policy), 4)
    assert epochs(migrated_loader(args, batch_size, policy), 4) == expected


SCRIPT = """
    import numpy as np
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.jax import DALIGenericIterator

    FILE_ROOT = {root!r}


    @pipeline_def
    def image_pipeline(file_root, size):
        jpegs, labels = fn.readers.file(file_root=file_root, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, size=(size, size))
        return fn.one_hot(labels, num_classes=2), images


    def get_iterator(file_root, batch_size):
        pipe = image_pipeline(file_root=file_root, size=8, batch_size=batch_size, num_threads=1,
                              device_id=None, seed=3)
        return DALIGenericIterator([pipe], ["labels", "images"], reader_name="Reader")


    if __name__ == "__main__":
        loader = get_iterator(FILE_ROOT, 3)
        for epoch in range(3):
            for step in loader:
                print(epoch, len(loader), type(step).__name__, sorted(step), step["images"].shape,
                      int(np.asarray(step["images"]).sum()), np.asarray(step["labels"]).tolist())
            loader.reset()
"""


def test_a_migrated_jax_script_prints_what_its_original_printed(tmp_path):
    script = tmp_path / "train_jax.py"
    script.write_text(textwrap.dedent(SCRIPT.format(root=os.path.join(ROOT, "fixtures", "data", "images"))))
    before = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    migrate = subprocess.run([sys.executable, "-m", "dali_migrate", str(script)], capture_output=True, text=True)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    assert "created: the loader (PyTorch, JAX)" in migrate.stdout + migrate.stderr
    migrated = script.read_text()
    assert "from dali_torch_loader import DALIJaxLoader\n" in migrated and "plugin.jax" not in migrated
    assert "class DALIJaxLoader(DALITorchLoader):" in (tmp_path / "dali_torch_loader.py").read_text()
    after = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    assert after == before and after.count("\n") == 11  # 4 + 4 + 3 steps (FILL)


def test_a_loader_module_written_for_pytorch_alone_stops_a_jax_file_and_changes_nothing(tmp_path):
    (tmp_path / "dali_torch_loader.py").write_text(torch_loader.module_source())
    script = tmp_path / "train_jax.py"
    script.write_text(textwrap.dedent(SCRIPT.format(root="images")))
    before = script.read_bytes()
    migrate = subprocess.run([sys.executable, "-m", "dali_migrate", str(script)], capture_output=True, text=True)
    assert migrate.returncode == 2
    assert "has no DALIJaxLoader (it was written for PyTorch alone)" in migrate.stdout + migrate.stderr
    assert script.read_bytes() == before
    assert (tmp_path / "dali_torch_loader.py").read_text() == torch_loader.module_source()


def test_a_policy_jaxs_iterator_refuses_keeps_the_pipeline():
    from dali_migrate.config import Config
    from dali_migrate.engine import migrate_source

    source = textwrap.dedent(SCRIPT.format(root="images")).replace(
        'reader_name="Reader")', 'reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)').replace(
        "import numpy as np\n", "import numpy as np\nfrom nvidia.dali.plugin.base_iterator import LastBatchPolicy\n")
    assert "LastBatchPolicy.PARTIAL" in source and "import LastBatchPolicy" in source
    result = migrate_source(source.encode(), "partial.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "image_pipeline" and "refuses the PARTIAL policy" in reasons[0], reasons
