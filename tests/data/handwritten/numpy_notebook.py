# Hand-written dynamic-mode version of fixtures/migrate/numpy_notebook.input.ipynb.
# %%
import os

import numpy as np
import nvidia.dali.experimental.dynamic as ndd

batch_size = 4
data_dir = os.path.join("..", "data", "arrays")

# %%
def print_batch(arrays):
    for i, array in enumerate(arrays):
        print(i, array.shape, array.dtype, np.round(array.sum(), 3))

# %%
reader = ndd.readers.Numpy(file_root=data_dir, file_filter="*.npy")
(data,) = next(reader.next_epoch(batch_size=batch_size))
print_batch([np.asarray(sample) for sample in data])

# %%
reader = ndd.readers.Numpy(
    file_root=data_dir, file_filter="sample_[0-3].npy", roi_start=[0, 1], roi_end=[1, 3]
)
(data,) = next(reader.next_epoch(batch_size=batch_size))
print_batch([np.asarray(sample) for sample in data])
print("as one array:", np.asarray(ndd.as_tensor(data)).shape)
