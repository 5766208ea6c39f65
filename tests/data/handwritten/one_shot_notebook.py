# Hand-written dynamic-mode version of fixtures/migrate/one_shot_notebook.input.ipynb.
# %%
import os

import numpy as np
import nvidia.dali.experimental.dynamic as ndd
from nvidia.dali import types

IMAGES = "../data/images"
images = sorted(os.listdir(os.path.join(IMAGES, "cats")))  # the file names, used below
size = 24

# %%
# one shuffled, flipped batch
rng = ndd.random.RNG(seed=7)
reader = ndd.readers.File(file_root=IMAGES, random_shuffle=True, seed=11)
jpegs, labels = next(reader.next_epoch(batch_size=3))
decoded = ndd.decoders.image(jpegs, output_type=types.RGB)
mirror = ndd.random.coin_flip(probability=0.5, batch_size=3, rng=rng)
small = ndd.resize(decoded, resize_x=size, resize_y=size)
batch = ndd.flip(small, horizontal=mirror)
shapes = [sample.shape for sample in batch]
print("flipped:", shapes, set(np.asarray(ndd.as_tensor(mirror)).ravel()) <= {0, 1})
print("labels:", np.asarray(ndd.as_tensor(labels)).ravel().tolist())

# %%
reader = ndd.readers.File(file_root=IMAGES)
jpegs, _ = next(reader.next_epoch(batch_size=3))
gray = ndd.decoders.image(jpegs, output_type=types.GRAY)
print("gray:", gray.tensors[0].shape, "files:", len(images))
