#!/usr/bin/env python3
"""Writes what the GPU accuracy tests read of Fashion-MNIST's training split, small enough to
carry to the GPU machine: its first 512 images (calibration) and its last 10000 (validation),
as train-calib-val-{images-idx3,labels-idx1}-ubyte.gz (tests/models/fashion_data.h).

    scripts/gpu/fashion_calib_val.py [--data /usr/share/datasets/fashion-mnist] --out DIR
"""
import argparse
import gzip
import os
import struct

HEAD, TAIL = 512, 10000


def subset(src, dst, item_bytes):
    with gzip.open(src, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = list(struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank]))
    body = data[4 + 4 * rank:]
    if dims[0] != 60000 or len(body) != 60000 * item_bytes:
        raise SystemExit(f"{src}: not the 60000 images of the training split")
    kept = body[:HEAD * item_bytes] + body[-TAIL * item_bytes:]
    dims[0] = HEAD + TAIL
    with gzip.open(dst, "wb", compresslevel=9) as f:
        f.write(data[:4] + struct.pack(">" + "I" * rank, *dims) + kept)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    subset(f"{a.data}/train-images-idx3-ubyte.gz", f"{a.out}/train-calib-val-images-idx3-ubyte.gz", 784)
    subset(f"{a.data}/train-labels-idx1-ubyte.gz", f"{a.out}/train-calib-val-labels-idx1-ubyte.gz", 1)


if __name__ == "__main__":
    main()
