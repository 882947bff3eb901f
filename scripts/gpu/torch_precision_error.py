#!/usr/bin/env python3
"""How far PyTorch's own fp16, bf16 and tf32 results are from its fp32 result on the GPU, for the
same seeded random-weight torchvision models that scripts/models/export_torchvision.py
exports (same build(), same seed, so the same weights kiln runs).

    python3 scripts/gpu/torch_precision_error.py [--models resnet50 mobilenet_v2] [--batch 2]

Prints the relative L2 error ||y - y_fp32|| / ||y_fp32|| of the logits per model and mode:
the yardstick for kiln's fp16/bf16/tf32 errors (tests/backends/cuda/test_models_cuda.cc).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from export_torchvision import build  # noqa: E402


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=["resnet18", "resnet50", "mobilenet_v2"])
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="the export script's --seed")
    args = p.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in args.models:
        model = build(name, args.seed).eval().cuda()
        gen = torch.Generator().manual_seed(7)
        x = torch.randn(args.batch, 3, 224, 224, generator=gen).cuda()
        with torch.no_grad():
            ref = model.double()(x.double())
            y32 = model.float()(x)
            torch.backends.cudnn.allow_tf32 = True
            torch.backends.cuda.matmul.allow_tf32 = True
            ytf = model(x)
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            m16 = model.half().to(memory_format=torch.channels_last)
            y16 = m16(x.half().to(memory_format=torch.channels_last))
            mbf = model.bfloat16().to(memory_format=torch.channels_last)
            ybf = mbf(x.bfloat16().to(memory_format=torch.channels_last))
        print(f"{name}: relative L2 vs fp32: tf32 {rel(ytf, y32):.3g}, fp16 {rel(y16, y32):.3g}"
              f", bf16 {rel(ybf, y32):.3g} (fp32 vs float64: {rel(y32, ref):.3g})", flush=True)


if __name__ == "__main__":
    main()
