x = foo(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, ccccccccccccccccccccccccccccccccccc=1, dddddddddddddddddddddddd=[1, 2])


def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards, dali_cpu=False, is_training=True, *, batch_size, num_threads=None, device_id=None, seed=None):
    pass


def short_params(data_dir, crop, size, shard_id, *, batch_size, num_threads=None, seed=None):
    pass


class A:
    def g(self):
        y = ndd.readers.File(file_root=traindir, shard_id=args.local_rank, num_shards=world_size).get_metadata()
        return ndd.crop_mirror_normalize(images.gpu() if not dali_cpu else images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop), mean=[0.485 * 255, 0.456 * 255, 0.406 * 255], std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=mirror)


def f():
    def g():
        for images, labels in EvalLoader(val_pipe(DATA_DIR, 12, batch_size=3, yield_reader_meta=True)):
            pass
        for step, (images, labels) in enumerate(DALITorchLoader(pipe, ["data", "label"], batch_size=batch_size, reader_meta=pipe_meta)):
            print(step)
        return ndd.transpose(to_float(images), perm=[2, 0, 1]) if layout == "CHW" else to_float(images)
        return list(ndd.as_tensor(images).shape), np.asarray(ndd.as_tensor(labels)).ravel().tolist()
        small, label = [ndd.batch(list(output)) for output in zip(*[image_and_label(SampleInfo(iteration * batch_size + index, index, iteration, 0)) for index in range(batch_size)])]
        x = {"Features": pipe_features_meta["epoch_size_padded"], "Images": pipe_images_meta["epoch_size_padded"]}
        images, tag = (ndd.batch(list(outputs)) for outputs in zip(*per_sample_if_results_xxxxxxxxxxxxxxxxxxxxxxx))
        if bool(np.asarray(brightness > 100)) and not bool(np.asarray(labels[0] > 0)) and xxxxxxxxxxx:
            pass
        train_loader = DALITorchLoader(pipe, ["data", "label"], batch_size=args.batch_size, reader_meta=pipe_reader_meta, last_batch_policy="partial", auto_reset=True)
        red, green_blue = [ndd.batch(list(outputs)) for outputs in zip(*[split_channels(np.asarray(sample)) for sample in images])]
        print(step, images.shape[0], np.array(np.asarray(labels.tensors[0])), labels.batch_size, labels.tensors[1])
        mirror = ndd.random.coin_flip(probability=0.5, batch_size=batch_size, rng=rngxxxxxxxxxxxxxxx)
        print("angles in range:", all(-15.0 <= float(np.asarray(angles.tensors[i])) <= 15.0 for i in range(angles.batch_size)))
        ok = all(-15.0 <= float(np.asarray(angles_of_the_batch.tensors[i])) <= 15.0 for i in range(n))
        print(f"  sample {i}: label={np.array(labels.tensors[i]).item()} shape={tuple(np.array(shapes.tensors[i]))} " f"ratio={float(np.array(ratio.tensors[i])):.4f} mean={img.mean():.3f}")
        log(step, ["first part of a long message about the batch " "and the second part of that message", labels.batch_size])
        img_noised = img + ndd.random.normal(img, stddev=ndd.random.uniform(range=(0.0, 0.33), batch_size=batch_size, rng=rng), rng=rng)
        scaled = images * 255.0 + ndd.random.uniform(range=(0.0, 1.0), batch_size=batch_size, rng=rng)
        shifted = images + offset + ndd.random.uniform(range=(0.0, 1.0), batch_size=batch_size, rng=rngxx)
        condition_1 = ndd.random.uniform(range=[0.0, 1.0], batch_size=batch_size, rng=rngxxxxx) < 0.25
        condition_2 = ndd.random.uniform(range=[0.0, 1.0], batch_size=batch_size, rng=rng, x=111111111111) < 0.25
        feats = np.asarray(ndd.as_tensor(feats)) if (len(set(feats.shape)) <= 1) else np.stack([np.array(features.tensors[index]) for index in range(features.batch_size)])
        crops = ndd.resize(images, resize_x=crop_width, resize_y=crop_height) if training else ndd.resize(images, size=crop)
        mean = ndd.batch([np.float32([0.485, 0.456, 0.406, 0.1, 0.2]).reshape([1, 1, 5])] * batch_size, layout="HWC")
        matrix = ndd.batch([np.array([1.0, 0.0, 0.0, 1.0], dtype=np.float32).reshape([2, 2])] * batch_size)
        mean = ndd.batch([np.array([0.485, 0.456, 0.406, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], dtype=np.float32).reshape([1, 1, 11])] * batch_size, layout="HWC")
