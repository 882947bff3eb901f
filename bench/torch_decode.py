#!/usr/bin/env python3
"""PyTorch's GPU JPEG path on the files `kiln bench --images DIR` reads: torchvision's batched
nvJPEG decode (torchvision.io.decode_jpeg on a list, device cuda) alone, then with a bilinear
resize to the model's input (image by image), timed per batch size, as the peer figure for kiln's decode-alone images/s.

  python3 bench/torch_decode.py DIR [--batch 64 256] [--duration 3]
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--batch", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        import torchvision
        from torchvision.io import decode_jpeg
    except ImportError as e:
        print(f"torch_decode: PyTorch or torchvision is missing ({e}); nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("torch_decode: no GPU; nothing measured")
        return 0
    files = sorted(glob.glob(os.path.join(a.dir, "*.jp*g")))
    if not files:
        print(f"torch_decode: no JPEG in {a.dir}", file=sys.stderr)
        return 2
    data = [torchvision.io.read_file(f) for f in files]
    results = []
    for b in a.batch:
        batch = [data[i % len(data)] for i in range(b)]

        def decode():
            return decode_jpeg(batch, device="cuda")

        def decode_resize():
            imgs = decode()
            out = torch.stack([F.interpolate(im.unsqueeze(0).float(), size=(a.size, a.size),
                                             mode="bilinear", antialias=False)[0] for im in imgs])
            return out.to(torch.uint8)

        for what, step in (("decode", decode), (f"decode + resize {a.size}", decode_resize)):
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            times = []
            end = time.perf_counter() + a.duration
            while time.perf_counter() < end:
                t = time.perf_counter()
                step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
            med = statistics.median(times)
            r = {"what": what, "batch": b, "runs": len(times), "median_ms": med * 1e3,
                 "images_per_s": b / med, "torch": torch.__version__,
                 "torchvision": torchvision.__version__}
            results.append(r)
            print(f"torchvision decode_jpeg(cuda), {what}, batch {b}: {r['images_per_s']:.0f} "
                  f"img/s ({r['median_ms']:.2f} ms per batch, {len(times)} runs)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
