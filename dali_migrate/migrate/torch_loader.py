"""The class that stands in for ``DALIGenericIterator`` in migrated code (DM010).

Its source is written into the migrated module, so that the migrated code needs nothing but
DALI and PyTorch. It is also imported from here by the tests, which compare it with DALI's own
iterator, epoch after epoch, over shard layouts and last-batch policies.

Why a class and not a rewritten loop: loaders are handed to training functions, iterated once
per epoch, asked for ``len()`` and ``reset()``. And the iterator's epochs are not the reader's:
``DALIGenericIterator`` counts samples across all shards, carries samples read ahead into the
next epoch (FILL), trims (PARTIAL) or drops (DROP) the last batch, all on top of the stream of
batches that ``pipe.run()`` gave (measured on DALI 2.4). The migrated pipeline yields that same
stream, and this class cuts it into the same epochs.
"""

from __future__ import annotations

CLASS_NAME = "DALITorchLoader"

SOURCE = '''\
class DALITorchLoader:
    """Epochs of a migrated DALI pipeline as PyTorch tensors, batch for batch what
    `DALIGenericIterator(pipe, output_map, reader_name=...)` gave: `[{name: tensor}]` per step,
    the same steps per epoch and the same last-batch policy ("fill", "partial" or "drop").
    With `size=` (DALI's iterator given `size=` instead of `reader_name=`), an epoch is that
    many samples, counted as DALI counted them. Without either, the pipeline's sources end each
    epoch, as DALI's iterator without `reader_name` did: `batches` yields None where they raised
    StopIteration. Given a list of pipelines (one per GPU) and a list of their readers' metadata,
    it steps them together, as DALI's iterator given a list of pipelines: a list of dicts per step.
    Written by dali-migrate; one copy can serve every module that needs it."""

    def __init__(self, batches, output_map, batch_size, reader_meta=None, last_batch_policy="fill",
                 auto_reset=False, size=None, last_batch_padded=False):
        self.batches = batches
        self.pipelines = list(batches) if isinstance(batches, (list, tuple)) else [batches]
        self.output_map = list(output_map)
        self.batch_size = batch_size
        # "fill", "partial", "drop", or DALI's LastBatchPolicy.FILL, .PARTIAL, .DROP
        last_batch_policy = str(getattr(last_batch_policy, "name", last_batch_policy)).lower()
        self.last_batch_policy = last_batch_policy
        self.auto_reset = auto_reset
        self.counter = 0
        self.epoch_over = False
        self.fixed_size = size is not None and size > 0  # DALI's `size=`: epochs of that many samples
        self.shard_ids = [None]  # the shard each pipeline reads, where a reader's metadata says
        if len(self.pipelines) > 1 and (self.fixed_size or reader_meta is None):
            raise ValueError("several pipelines are stepped together by their readers' metadata only")
        if self.fixed_size:
            self.size, self.padded = int(size), bool(last_batch_padded)
            return
        if reader_meta is None:
            self.size = -1  # epochs end where the sources say, of any length
            return
        metas = reader_meta if isinstance(reader_meta, (list, tuple)) else [reader_meta]
        reader_meta = metas[0]  # the pipelines' readers differ only in their shard
        total, shards = reader_meta["epoch_size"], reader_meta["number_of_shards"]
        self.padded = bool(reader_meta["pad_last_batch"])
        self.stick_to_shard = bool(reader_meta["stick_to_shard"])
        self.shard_ids = [meta["shard_id"] for meta in metas]
        # every shard is counted: all ranks of a job must agree on the number of steps
        self.first_shard_sizes = [(i + 1) * total // shards - i * total // shards for i in range(shards)]
        self.shard_sizes = list(self.first_shard_sizes)
        self.read_ahead = [0] * shards  # "fill" without padding: samples read of the next epoch
        if last_batch_policy == "drop":
            self.size = total // shards
        elif self.padded:
            self.size = reader_meta["epoch_size_padded"] // shards
        else:
            self.size = self._whole_batches(-(-total // shards))

    @property
    def _size(self):  # DALI's iterators had it, and training scripts read it
        return self.size

    def _whole_batches(self, samples):
        return -(-samples // self.batch_size) * self.batch_size

    def __len__(self):
        if self.size < 0:
            return 0  # as DALI's iterator without a reader or a size
        if self.last_batch_policy == "drop":
            return self.size // self.batch_size
        return -(-self.size // self.batch_size)

    def __iter__(self):
        # a new `for` loop starts the next epoch once this one is over
        if self.counter != 0 or self.epoch_over:
            self.reset()
        return self

    def __next__(self):
        if self.size < 0:
            return self._next_from_sources()
        if self.counter >= self.size:
            self._end_epoch()
        outputs = [next(batches) for batches in self.pipelines]
        self.counter += self.batch_size
        if self.last_batch_policy == "drop" and self._past_a_shard_end(self.counter):
            self._end_epoch()  # the incomplete batch was read, as the pipelines did, and dropped
        return self._step([self._named(each, shard_id) for each, shard_id in zip(outputs, self.shard_ids)])

    def _named(self, outputs, shard_id):
        tensors = [self._tensor(output) for output in outputs]
        if self.last_batch_policy == "partial":
            epoch_end = self.size if self.fixed_size else self.first_shard_sizes[shard_id]
            left = self.batch_size - (self.counter - epoch_end)
            if left < self.batch_size:  # padding, or samples of the next epoch
                tensors = [tensor[:left] for tensor in tensors]
        return dict(zip(self.output_map, tensors))

    def _next_from_sources(self):
        outputs = None if self.epoch_over else next(self.batches)
        if outputs is None:
            self.epoch_over = True
            self._end_epoch()
        return self._step([self._named(outputs, None)])

    def _tensor(self, output):
        return output.torch()

    def _step(self, named):
        return named  # one dict per pipeline, as DALI's PyTorch iterator gave

    def _past_a_shard_end(self, counter):
        if self.fixed_size:
            return counter > self.size
        return any(ahead + counter > size for ahead, size in zip(self.read_ahead, self.shard_sizes))

    def _end_epoch(self):
        if self.auto_reset:
            self.reset()
        raise StopIteration

    def reset(self):
        """Starts the next epoch; ignored before the end of an epoch, as DALI did."""
        if self.size < 0:
            self.epoch_over = False  # the sources' next epoch follows their None
            return
        one_more = self.counter + self.batch_size
        if self.last_batch_policy == "drop" and self.size > self.counter and self._past_a_shard_end(one_more):
            for batches in self.pipelines:
                next(batches)  # the incomplete last batch, which the pipelines still produced
            self.counter = one_more
        if self.counter < self.size:
            return
        carries = self.last_batch_policy == "fill" and not self.padded
        if self.fixed_size:  # what was read past the end counts towards the next epoch
            self.counter = self.counter % self.size if carries else 0
            return
        if carries:
            self._carry_read_ahead()
        else:
            self.counter = 0
        if not self.stick_to_shard:
            self.shard_ids = [(shard_id + 1) % len(self.shard_sizes) for shard_id in self.shard_ids]
        if carries:
            self._size_next_fill_epoch()

    def _carry_read_ahead(self):
        read = self.counter - min(self.read_ahead)
        self.read_ahead = [ahead + read - size for ahead, size in zip(self.read_ahead, self.shard_sizes)]
        self.counter = min(self.read_ahead)

    def _size_next_fill_epoch(self):
        if not self.stick_to_shard:
            self.shard_sizes = self.shard_sizes[-1:] + self.shard_sizes[:-1]
        still_to_read = [size - ahead for size, ahead in zip(self.shard_sizes, self.read_ahead)]
        self.size = self._whole_batches(max(still_to_read))
        if self.size == 0:  # this epoch was read ahead entirely: go on to the one after
            self.read_ahead = [0] * len(self.shard_sizes)
            self.counter = 0
            self.shard_sizes = self.shard_sizes[-1:] + self.shard_sizes[:-1]
            self.size = self._whole_batches(max(self.shard_sizes))
'''


JAX_CLASS_NAME = "DALIJaxLoader"

JAX_SOURCE = '''\
class DALIJaxLoader(DALITorchLoader):
    """Epochs of a migrated DALI pipeline as JAX arrays, batch for batch what DALI's JAX
    `DALIGenericIterator(pipe, output_map, reader_name=...)` gave: `{name: array}` per step,
    the same steps per epoch and the same last-batch policy ("fill" or "drop").
    Written by dali-migrate."""

    def _tensor(self, output):
        import jax.dlpack  # here, so that PyTorch users of this module need no JAX

        from nvidia.dali.experimental import dynamic as ndd

        return jax.dlpack.from_dlpack(ndd.as_tensor(output))

    def _step(self, named):
        return named[0]
'''

MODULE_DOCSTRING = '''"""The PyTorch loader that migrated DALI pipelines use in place of DALI's
`DALIGenericIterator`. Written once by dali-migrate; every migrated module imports it from here."""
'''


def module_source(jax: bool = False) -> str:
    """The module the runner writes, once per project (see loader_module.py); ``jax``: with
    the JAX loader too."""
    return f"{MODULE_DOCSTRING}\n\n{SOURCE}" + (f"\n\n{JAX_SOURCE}" if jax else "")


def import_statement(module: str, names: dict[str, str]) -> str:
    """``names``: the classes the module needs (CLASS_NAME, JAX_CLASS_NAME) -> its local name."""
    imported = ", ".join(name if local == name else f"{name} as {local}" for name, local in sorted(names.items()))
    return f"from {module} import {imported}\n"


def source(name: str = CLASS_NAME, jax_name: str | None = None) -> str:
    """The class's source, renamed where the module already uses ``CLASS_NAME``; with
    ``jax_name``, the JAX loader follows it."""
    torch_class = SOURCE.replace(f"class {CLASS_NAME}:", f"class {name}:", 1)
    if jax_name is None:
        return torch_class
    jax_class = JAX_SOURCE.replace(f"class {JAX_CLASS_NAME}({CLASS_NAME}):", f"class {jax_name}({name}):", 1)
    return f"{torch_class}\n\n{jax_class}"
