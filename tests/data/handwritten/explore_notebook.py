# Hand-written dynamic-mode version of fixtures/migrate/explore_notebook.input.ipynb.
# %%
# %matplotlib inline
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
from nvidia.dali import types

IMAGES = "../data/images"  # relative to this notebook

# %%
# !ls ../data/images

# %%
reader = ndd.readers.File(file_root=IMAGES)
rng = ndd.random.RNG(seed=12)


def augment(jpegs):
    images = ndd.decoders.image(jpegs, output_type=types.RGB)
    images = ndd.resize(images, size=[20, 20])
    mirror = ndd.random.coin_flip(probability=0.5, batch_size=jpegs.batch_size, rng=rng)
    return ndd.crop_mirror_normalize(images, mirror=mirror, dtype=ndd.float32)


def batches():  # one stream across epochs, as pipe.run() gave
    while True:
        for jpegs, labels in reader.next_epoch(batch_size=4):
            yield augment(jpegs), labels


# %%
stream = batches()
images, labels = next(stream)
print(images.tensors[0].shape, np.asarray(ndd.as_tensor(labels)).ravel())

# %%
steps = reader.get_metadata()["epoch_size_padded"] // 4
for step in range(steps):
    images, labels = next(stream)
    print(step, images.batch_size, np.asarray(ndd.as_tensor(labels)).ravel().tolist())
