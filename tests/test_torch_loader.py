"""The class written in place of DALIGenericIterator against DALI's own iterator: the same
batches, epoch after epoch, for shard layouts, padding and every last-batch policy."""

import glob
import itertools
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")
from nvidia.dali import fn, pipeline_def, types  # noqa: E402
from nvidia.dali.types import SampleInfo  # noqa: E402
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


def dali_iterator_over_shards(args, batch_size, policy, auto_reset):
    """DALI's iterator given one pipeline per shard (one per GPU, as multi-GPU examples write it)."""
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def labels(shard_id):
        _, label = fn.readers.file(**{**args, "shard_id": shard_id}, name="Reader")
        return label

    pipes = [labels(shard_id) for shard_id in range(args["num_shards"])]
    return DALIGenericIterator(pipes, ["label"], reader_name="Reader", last_batch_policy=POLICIES[policy],
                               auto_reset=auto_reset)


def migrated_loader_over_shards(args, batch_size, policy, auto_reset):
    def endless(reader):
        for _ in itertools.count():
            for _, labels in reader.next_epoch(batch_size=batch_size):
                yield (labels,)

    shards = range(args["num_shards"])
    batches = [endless(ndd.readers.File(**{**args, "shard_id": shard_id})) for shard_id in shards]
    metas = [ndd.readers.File(**{**args, "shard_id": shard_id}).get_metadata() for shard_id in shards]
    return DALITorchLoader(batches, ["label"], batch_size, metas, last_batch_policy=policy, auto_reset=auto_reset)


def all_shards_by_for_loops(loader, epochs, reset):
    seen = []
    for _ in range(epochs):
        seen.append((len(loader), [[d["label"].ravel().tolist() for d in data] for data in loader]))
        if reset:
            loader.reset()
    return seen


SHARDED = [layout for layout in LAYOUTS if layout[2] > 1]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("layout", SHARDED, ids=lambda layout: "-".join(map(str, layout)))
def test_a_list_of_pipelines_steps_together_as_dali_iterator(layout, policy):
    """One pipeline per shard: each step a list of one dict per pipeline, the last batch of each
    shard trimmed or dropped by its own size, shards moving on after each epoch."""
    files, batch_size, shards, _, stick, pad = layout
    args = reader_args(files, shards, 0, stick, pad)
    for auto_reset in (True, False):
        expected = all_shards_by_for_loops(dali_iterator_over_shards(args, batch_size, policy, auto_reset), 4,
                                           not auto_reset)
        actual = all_shards_by_for_loops(migrated_loader_over_shards(args, batch_size, policy, auto_reset), 4,
                                         not auto_reset)
        assert actual == expected, (auto_reset, expected)
        assert {len(step) for _, epoch in expected for step in epoch} == {shards}


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


class EpochSource:
    """Per-sample source whose epochs end with StopIteration: `stop` samples, counted by
    iteration or by sample, so that an epoch may end inside a batch."""

    def __init__(self, stop, by_sample):
        self.stop, self.by_sample = stop, by_sample

    def __call__(self, info):
        if (info.idx_in_epoch if self.by_sample else info.iteration * 4) >= self.stop:
            raise StopIteration
        return np.array([info.idx_in_epoch, info.epoch_idx], dtype=np.int32)


def dali_source_iterator(source, auto_reset):
    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def samples():
        return fn.external_source(source=source, batch=False, dtype=types.INT32)

    return DALIGenericIterator(samples(), ["x"], auto_reset=auto_reset)


def source_epochs(source):
    """What the migrated generator of such a pipeline yields: None where the source ended an epoch."""
    epoch_idx = 0
    while True:
        iteration = 0
        while True:
            try:
                x = ndd.batch([source(SampleInfo(iteration * 4 + index, index, iteration, epoch_idx))
                               for index in range(4)], dtype=types.INT32)
            except StopIteration:
                break
            yield (x,)
            iteration += 1
        yield None
        epoch_idx += 1


def source_loader(source, auto_reset):
    return DALITorchLoader(source_epochs(source), ["x"], 4, auto_reset=auto_reset)


def steps_with_breaks_and_resets(loader, leave_epochs=True):
    """Whole epochs, an epoch left after one step, a reset() before and after an end, next() past
    an end: what DALI's iterator without `reader_name` does with each."""
    def rows(limit=None):
        return [d[0]["x"].tolist() for d in itertools.islice(loader, limit)]

    seen = [len(loader), rows(), rows()]
    if not leave_epochs:
        return seen + [rows()]
    seen.append(rows(1))
    loader.reset()  # in the middle of an epoch: ignored
    seen.append(rows())
    try:
        seen.append(next(loader)[0]["x"].tolist())
    except StopIteration:
        seen.append("stop")
    loader.reset()
    seen += [rows(), rows()]
    return seen


# A source that ends inside a batch: DALI drops the incomplete batch, as the loader does. DALI
# reads ahead to such an end, and a new loop or a reset() in the middle of that epoch then starts
# the next epoch after the batches it holds; the loader goes on with the epoch instead.
@pytest.mark.parametrize("stop,by_sample", [(12, False), (10, True)])
@pytest.mark.parametrize("auto_reset", [False, True])
def test_epochs_the_sources_end_are_dali_iterators_without_reader_name(stop, by_sample, auto_reset):
    def steps(loader):
        return steps_with_breaks_and_resets(loader, leave_epochs=not by_sample)

    expected = steps(dali_source_iterator(EpochSource(stop, by_sample), auto_reset))
    assert steps(source_loader(EpochSource(stop, by_sample), auto_reset)) == expected
    assert [len(epoch) for epoch in expected[1:3]] == [stop // 4] * 2


SIZED = [  # files, batch size, size=, last_batch_padded
    (11, 4, 11, False), (10, 3, 10, False), (11, 4, 6, False), (8, 4, 8, False), (11, 3, 5, True),
    (9, 2, 12, False), (7, 3, 3, False),
]


def dali_sized_iterator(files, batch_size, size, padded, policy, auto_reset):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def labels():
        _, label = fn.readers.file(files=FILES[:files], labels=list(range(files)))
        return label

    return DALIGenericIterator(labels(), ["label"], size=size, last_batch_padded=padded,
                               last_batch_policy=POLICIES[policy], auto_reset=auto_reset)


def migrated_sized_loader(files, batch_size, size, padded, policy, auto_reset):
    reader = ndd.readers.File(files=FILES[:files], labels=list(range(files)))
    batches = ((labels,) for _, labels in itertools.chain.from_iterable(
        reader.next_epoch(batch_size=batch_size) for _ in itertools.count()))
    return DALITorchLoader(batches, ["label"], batch_size, last_batch_policy=policy, auto_reset=auto_reset,
                           size=size, last_batch_padded=padded)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("layout", SIZED, ids=lambda layout: "-".join(map(str, layout)))
def test_size_counts_epochs_as_dali_iterator_did(layout, policy):
    """DALI's iterator given `size=` (its older form, in many training scripts) counts that many
    samples per epoch, whatever the reader's epochs are."""
    import warnings

    files, batch_size, size, padded = layout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DALI deprecates `size=`
        for auto_reset in (True, False):
            expected = epochs_by_for_loops(dali_sized_iterator(*layout, policy, auto_reset), 5, not auto_reset)
            actual = epochs_by_for_loops(migrated_sized_loader(*layout, policy, auto_reset), 5, not auto_reset)
            assert actual == expected, (auto_reset, expected)
        expected = steps_by_next_calls(dali_sized_iterator(*layout, policy, False), 4)
        assert steps_by_next_calls(migrated_sized_loader(*layout, policy, False), 4) == expected


def steps_by_next_calls(loader, epochs):
    """`len(loader)` calls of next(), then reset(); where an epoch that began with samples
    carried over ends early, the StopIteration is part of what is compared."""
    seen = []
    for _ in range(epochs):
        for _ in range(len(loader)):
            try:
                seen.append(next(loader)[0]["label"].ravel().tolist())
            except StopIteration:
                seen.append("end")
        loader.reset()
    return seen
