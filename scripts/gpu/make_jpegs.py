#!/usr/bin/env python3
"""Writes synthetic photo-like JPEGs for `kiln bench --images`: smooth colour fields, edges and
fine texture, 500x375 at quality 90 by default, which come out near 70 KB each (the size of a
typical ImageNet validation JPEG of that shape).

  scripts/gpu/make_jpegs.py OUT_DIR [--count 256] [--width 500] [--height 375] [--quality 90]
"""
import argparse
import os

import numpy as np
from PIL import Image, ImageFilter


def photo_like(rng, w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for _ in range(6):  # smooth colour fields
        fx, fy = rng.uniform(0.002, 0.03, 2)
        phase = rng.uniform(0, 6.3)
        img += rng.uniform(10, 40, 3) * np.sin(fx * x + fy * y + phase)[..., None]
    for _ in range(12):  # shapes with hard edges
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(15, 120)
        mask = (x - cx) ** 2 + (y - cy) ** 2 < r * r
        img[mask] += rng.uniform(-60, 60, 3)
    img += 128
    noise = rng.normal(0, 1, (h, w, 3)).astype(np.float32)
    tex = np.array(Image.fromarray(np.uint8(np.clip(noise * 40 + 128, 0, 255))).filter(
        ImageFilter.GaussianBlur(0.8)), np.float32) - 128
    img += tex * 0.75
    return Image.fromarray(np.uint8(np.clip(img, 0, 255)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--count", type=int, default=256)
    p.add_argument("--width", type=int, default=500)
    p.add_argument("--height", type=int, default=375)
    p.add_argument("--quality", type=int, default=90)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    sizes = []
    for i in range(a.count):
        path = os.path.join(a.out, f"img{i:05d}.jpg")
        photo_like(rng, a.width, a.height).save(path, quality=a.quality)
        sizes.append(os.path.getsize(path))
    print(f"{a.count} JPEGs {a.width}x{a.height} q{a.quality} in {a.out}: "
          f"mean {sum(sizes) / len(sizes) / 1024:.1f} KB")


if __name__ == "__main__":
    main()
