#!/usr/bin/env python3
"""A detection set with known boxes, made from real photos and Fashion-MNIST items.

    /usr/bin/python3 scripts/models/detection_set.py --photos DIR --fashion DIR --out DIR
        [--train 8000] [--val 2000] [--seed 0] [--train-items train]

Each image is a random crop of a photo (JPEG or PNG files under --photos, e.g. skimage's and
darknet's sample images: `apt-get download python3-skimage darknet` and `dpkg -x`), resized to
640×480, 480×640, 640×640 or 512×384, with 1 to 8 Fashion-MNIST items pasted on it: each item
scaled to 32–240 px (its aspect ratio jittered by up to ±25%), tinted with a random colour, and
blended by its own intensity, so that it looks like an object, not a tile. An item's box is the
extent of its visible pixels (blend weight above 0.1); a new item whose box would overlap an
earlier one at IoU above 0.3 is placed again. The training images take items from
Fashion-MNIST's training file, the validation images from its test file; the photos are the same
(random crops and scales differ). 10 classes, Fashion-MNIST's.

Written to OUT/{train,val}/NNNNNN.jpg (quality 90) and OUT/{train,val}.json:
  {"classes": [...10 names...], "images": [{"file": "train/000000.jpg", "width": W,
   "height": H, "boxes": [[x0, y0, x1, y1, class], ...]}, ...]}
Seeded: the same arguments and files give the same set.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
from PIL import Image

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
           "bag", "ankle-boot"]
SIZES = [(640, 480), (480, 640), (640, 640), (512, 384)]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_photos(root):
    photos = []
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.lower().endswith((".jpg", ".jpeg", ".png")):
                continue
            try:
                img = Image.open(os.path.join(dirpath, name)).convert("RGB")
            except OSError:
                continue
            if min(img.size) >= 256:
                photos.append(img)
    if not photos:
        raise SystemExit(f"--photos {root}: no JPEG or PNG of at least 256 px")
    return photos


def background(photo, rng, width, height):
    """A random crop of `photo` (a quarter to all of it, at the output's aspect ratio)."""
    pw, ph = photo.size
    aspect = width / height
    scale = rng.uniform(0.5, 1.0)
    cw = min(pw, int(round(min(pw, ph * aspect) * scale)))
    ch = min(ph, int(round(cw / aspect)))
    x = int(rng.integers(0, pw - cw + 1))
    y = int(rng.integers(0, ph - ch + 1))
    crop = photo.crop((x, y, x + cw, y + ch)).resize((width, height), Image.BILINEAR)
    if rng.random() < 0.5:
        crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
    return np.asarray(crop, dtype=np.float32)


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def paste(canvas, item, rng, boxes):
    """Blends `item` (28×28 uint8) onto `canvas` somewhere its box overlaps no earlier box at
    IoU above 0.3; returns its box [x0, y0, x1, y1], or None when no place was found."""
    height, width, _ = canvas.shape
    for _ in range(20):
        side = rng.uniform(32, 240)
        stretch = rng.uniform(0.75, 1.25)
        w = max(8, int(round(side * stretch)))
        h = max(8, int(round(side / stretch)))
        if w >= width or h >= height:
            continue
        x = int(rng.integers(0, width - w + 1))
        y = int(rng.integers(0, height - h + 1))
        alpha = np.asarray(Image.fromarray(item).resize((w, h), Image.BILINEAR), np.float32)
        alpha = np.clip(alpha / 255.0 * 1.6, 0.0, 1.0)
        ys, xs = np.nonzero(alpha > 0.1)
        if len(xs) == 0:
            return None
        box = [x + int(xs.min()), y + int(ys.min()), x + int(xs.max()) + 1, y + int(ys.max()) + 1]
        if any(iou(box, b) > 0.3 for b in boxes):
            continue
        colour = rng.uniform(40, 255, size=3).astype(np.float32)
        shade = alpha[..., None]
        region = canvas[y:y + h, x:x + w]
        region[:] = region * (1 - shade) + colour * (0.35 + 0.65 * shade) * shade
        return box
    return None


def make_split(name, count, items, labels, photos, rng, out):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    images = []
    for i in range(count):
        width, height = SIZES[int(rng.integers(0, len(SIZES)))]
        canvas = background(photos[int(rng.integers(0, len(photos)))], rng, width, height)
        boxes = []
        for _ in range(int(rng.integers(1, 9))):
            k = int(rng.integers(0, len(items)))
            box = paste(canvas, items[k], rng, [b[:4] for b in boxes])
            if box is not None:
                boxes.append(box + [int(labels[k])])
        file = f"{name}/{i:06d}.jpg"
        Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8)).save(
            os.path.join(out, file), quality=90)
        images.append({"file": file, "width": width, "height": height, "boxes": boxes})
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"classes": CLASSES, "images": images}, f)
    objects = sum(len(im["boxes"]) for im in images)
    print(f"{name}: {count} images, {objects} objects")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--photos", required=True)
    ap.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", required=True)
    ap.add_argument("--train", type=int, default=8000)
    ap.add_argument("--val", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-items", default="train",
                    help="PREFIX: the training items from --fashion's PREFIX-images-idx3-ubyte.gz "
                         "and PREFIX-labels-idx1-ubyte.gz (a subset such as fashion_calib_val.py's "
                         "train-calib-val)")
    args = ap.parse_args()
    photos = load_photos(args.photos)
    rng = np.random.default_rng(args.seed)
    f = lambda n: os.path.join(args.fashion, n)
    make_split("train", args.train, read_idx(f(args.train_items + "-images-idx3-ubyte.gz")),
               read_idx(f(args.train_items + "-labels-idx1-ubyte.gz")), photos, rng, args.out)
    make_split("val", args.val, read_idx(f("t10k-images-idx3-ubyte.gz")),
               read_idx(f("t10k-labels-idx1-ubyte.gz")), photos, rng, args.out)
    print(f"{len(photos)} photos; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
