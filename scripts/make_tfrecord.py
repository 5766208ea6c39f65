"""Writes fixtures/data/tfrecord/images.tfrecord and its index from fixtures/data/images.

Each record is a tf.train.Example with "image/encoded" (the JPEG bytes) and
"image/class/label" (1 for cats, 2 for dogs), encoded here by hand so that the fixtures need no
TensorFlow. The index has one "offset size" line per record, as DALI's tfrecord2idx writes it.
DALI does not check the records' CRCs; they are written as zeros.

    python scripts/make_tfrecord.py
"""

from __future__ import annotations

import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "fixtures" / "data" / "images"
OUT = ROOT / "fixtures" / "data" / "tfrecord"


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _example(encoded: bytes, label: int) -> bytes:
    features = {
        "image/encoded": _field(1, _field(1, encoded)),  # Feature.bytes_list.value
        "image/class/label": _field(3, _field(1, _varint(label))),  # Feature.int64_list.value, packed
    }
    entries = b"".join(_field(1, _field(1, key.encode()) + _field(2, value)) for key, value in features.items())
    return _field(1, entries)  # Example.features.feature


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    records, index = bytearray(), []
    for path in sorted(IMAGES.glob("*/*.jpg")):
        data = _example(path.read_bytes(), 1 if path.parent.name == "cats" else 2)
        start = len(records)
        records += struct.pack("<Q", len(data)) + b"\0" * 4 + data + b"\0" * 4
        index.append(f"{start} {len(records) - start}\n")
    (OUT / "images.tfrecord").write_bytes(bytes(records))
    (OUT / "images.idx").write_text("".join(index))


if __name__ == "__main__":
    main()
