# Hand-written dynamic-mode version of fixtures/migrate/gallery_notebook.input.ipynb, in the
# style of DALI's dynamic_mode example notebooks; one "# %%" per notebook code cell.
# %%
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import nvidia.dali.types as types

image_dir = "../data/images"
batch_size = 4

# %%
def show_images(image_batch, labels, title):
    print(title)
    for i in range(image_batch.batch_size):
        image = np.asarray(image_batch.select(i))
        label = np.asarray(labels.select(i))
        print(f"  {i}: shape {image.shape}, mean {image.mean():.2f}, label {int(label[0])}")

# %%
reader = ndd.readers.File(file_root=image_dir)
jpegs, labels = next(reader.next_epoch(batch_size=batch_size))
images = ndd.decoders.image(jpegs, device="cpu", output_type=types.RGB)
rotated = ndd.rotate(images, angle=30.0, fill_value=0)
flipped = ndd.flip(images, horizontal=1)
resized = ndd.resize(images, resize_x=24, resize_y=24)
adjusted = ndd.brightness_contrast(images, brightness=1.2, contrast=0.8)

# %%
show_images(images, labels, "decoded")
show_images(rotated, labels, "rotated by 30 degrees")
show_images(flipped, labels, "flipped horizontally")
show_images(resized, labels, "resized to 24x24")
show_images(adjusted, labels, "brightness 1.2, contrast 0.8")
