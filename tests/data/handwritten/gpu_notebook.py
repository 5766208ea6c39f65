# Hand-written dynamic-mode version of fixtures/migrate/gpu_notebook.input.ipynb.
# %%
# Runs on a GPU: the decoder is "mixed".
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
from nvidia.dali import types

image_dir = "../data/images"

# %%
reader = ndd.readers.File(file_root=image_dir)
jpegs, labels = next(reader.next_epoch(batch_size=4))
images = ndd.decoders.image(jpegs, device="gpu", output_type=types.RGB)
images = ndd.resize(images, resize_x=32, resize_y=32)
print(images.cpu().tensors[0].shape, np.asarray(labels.tensors[0]))
