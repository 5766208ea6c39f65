"""The class written in place of DALIGenericIterator against DALI's own iterator: the same
batches, epoch after epoch, for shard layouts, padding and every last-batch policy."""

import glob
import itertools
import os

import pytest

torch = pytest.importorskip("torch")
ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")
from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy  # noqa: E402

from dali_migrate.migrate import torch_loader  # noqa: E402

IMAGES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "data", "images")
FILES = sorted(glob.glob(os.path.join(IMAGES, "*", "*")))
POLICIES = {"fill": LastBatchPolicy.FILL, "partial": LastBatchPolicy.PARTIAL, "drop": LastBatchPolicy.DROP}

namespace: dict = {}
exec(torch_loader.source(), namespace)
DALITorchLoader = namespace[torch_loader.CLASS_NAME]


def reader_args(files, shards, shard, stick, pad):
    return dict(files=FILES[:files], labels=list(range(files)), num_shards=shards, shard_id=shard,
                stick_to_shard=stick, pad_last_batch=pad)


def dali_iterator(args, batch_size, policy, auto_reset):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def labels():
        _, label = fn.readers.file(**args, name="Reader")
        return label

    return DALIGenericIterator(labels(), ["label"], reader_name="Reader", last_batch_policy=POLICIES[policy],
                               auto_reset=auto_reset)


def migrated_loader(args, batch_size, policy, auto_reset):
    reader = ndd.readers.File(**args)
    batches = ((labels,) for _, labels in itertools.chain.from_iterable(
        reader.next_epoch(batch_size=batch_size) for _ in itertools.count()))
    meta = ndd.readers.File(**args).get_metadata()
    return DALITorchLoader(batches, ["label"], batch_size, meta, last_batch_policy=policy, auto_reset=auto_reset)


def epochs_by_for_loops(loader, epochs, reset):
    seen = []
    for _ in range(epochs):
        seen.append((len(loader), [data[0]["label"].ravel().tolist() for data in loader]))
        if reset:
            loader.reset()
    return seen


def epochs_by_next_calls(loader, epochs):
    """`len(loader)` steps with next(), then reset(): DROP must still read its incomplete batch."""
    seen = []
    for _ in range(epochs):
        seen.append([next(loader)[0]["label"].ravel().tolist() for _ in range(len(loader))])
        loader.reset()
    return seen


LAYOUTS = [  # files, batch size, shards, shard id, stick_to_shard, pad_last_batch
    (11, 4, 1, 0, False, False), (10, 4, 1, 0, False, False), (9, 4, 1, 0, False, False),
    (8, 4, 1, 0, False, False), (11, 4, 1, 0, False, True), (11, 2, 3, 1, False, False),
    (11, 2, 3, 2, True, False), (11, 3, 3, 0, False, True), (10, 2, 3, 1, True, True),
    (7, 3, 2, 1, False, False),
]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: "-".join(map(str, layout)))
def test_same_epochs_as_dali_iterator(layout, policy):
    files, batch_size, shards, shard, stick, pad = layout
    args = reader_args(files, shards, shard, stick, pad)
    for auto_reset in (True, False):
        expected = epochs_by_for_loops(dali_iterator(args, batch_size, policy, auto_reset), 5, not auto_reset)
        actual = epochs_by_for_loops(migrated_loader(args, batch_size, policy, auto_reset), 5, not auto_reset)
        assert actual == expected, (auto_reset, expected)
    expected = epochs_by_next_calls(dali_iterator(args, batch_size, policy, False), 4)
    assert epochs_by_next_calls(migrated_loader(args, batch_size, policy, False), 4) == expected


def test_without_reset_a_finished_epoch_stays_finished_until_a_new_loop():
    args = reader_args(11, 1, 0, False, False)
    for make in (dali_iterator, migrated_loader):
        loader = make(args, 4, "partial", False)
        first = [d[0]["label"].ravel().tolist() for d in loader]
        with pytest.raises(StopIteration):
            next(loader)
        second = [d[0]["label"].ravel().tolist() for d in loader]  # __iter__ starts the next epoch
        assert (len(first), len(second)) == (3, 3)
        assert second[0] == [1, 2, 3, 4]
