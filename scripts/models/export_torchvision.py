#!/usr/bin/env python3
"""Exports a torchvision classifier to ONNX with seeded random weights (no downloads).

    /usr/bin/python3 scripts/models/export_torchvision.py NAME [--out PATH] [--opset 13]
        [--pretrained no] [--batch-norm keep|fold] [--seed 0]

NAME is any torchvision classification model (resnet18, resnet50, mobilenet_v2,
efficientnet_b0, ...) or segmentation model (lraspp_mobilenet_v3_large,
deeplabv3_mobilenet_v3_large, ...: 21 classes, its "out" map). The graph has one input
"input" [batch,3,224,224] float32 with a symbolic batch axis and one output "logits".

Random weights alone leave BatchNorm as an identity (running mean 0, variance 1), so deep
nets blow up or collapse and the logits say little. The script therefore randomizes the
BatchNorm affine parameters and then sets the running statistics from a few seeded random
batches, as training would; the exported logits are well scaled and have a clear argmax,
which the model tests compare. BatchNormalization nodes are kept by default (the form most
ONNX files in the wild have, and what kiln's folding pass consumes); --batch-norm fold lets
the exporter fold them into the convolutions.
"""
import argparse
import inspect
import os
import sys
import warnings

import torch
import torchvision

# The exporter warns about constant folding under TrainingMode.PRESERVE; the model is in
# eval mode, so BatchNorm is exported in inference form and nothing is mis-folded.
warnings.filterwarnings("ignore", message="It is recommended that constant folding")


class SegmentationOut(torch.nn.Module):
    """A segmentation model's "out" map alone (torchvision returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def build(name, seed, calib_batches=2):
    torch.manual_seed(seed)
    ctor = getattr(torchvision.models, name, None)
    segmentation = ctor is None
    if segmentation:
        ctor = getattr(torchvision.models.segmentation, name, None)
    if ctor is None or not callable(ctor):
        raise SystemExit(f"unknown torchvision model '{name}'")
    # weights=None: random init; never touch the network.
    model = ctor(weights=None, weights_backbone=None) if segmentation else ctor(weights=None)
    if segmentation:
        model = SegmentationOut(model)
    gen = torch.Generator().manual_seed(seed + 1)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        # Weights left at zero by initialization (ViT's classification head) would make every
        # output the same: give them small random values, as training would.
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not m.weight.any():
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) / m.in_features ** 0.5)
        # ConvNeXt's layer scale starts at 1e-6, which leaves every residual branch below
        # fp16's normal range; trained nets have scales of order 0.1 to 1.
        for m in model.modules():
            scale = getattr(m, "layer_scale", None)
            if isinstance(scale, torch.nn.Parameter):
                scale.copy_(0.2 + 0.6 * torch.rand(scale.shape, generator=gen))
        for bn in bns:
            n = bn.num_features
            bn.weight.copy_(0.5 + torch.rand(n, generator=gen))
            bn.bias.copy_(0.2 * torch.randn(n, generator=gen))
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
        model.train()
        # InceptionV3's auxiliary head (train mode only) needs 299×299 images.
        size = 299 if name == "inception_v3" else 224
        for _ in range(calib_batches if bns else 0):
            model(torch.randn(4, 3, size, size, generator=gen))
    model.eval()
    return model


def _zero(g, self):
    """aten::zero (Tensor.zero_, which Swin V2 applies to a slice of its qkv bias) as zeros of
    self's shape, for the PyTorch versions whose exporter has no symbolic for it (1.13)."""
    shape = g.op("Shape", self)
    return g.op("ConstantOfShape", shape, value_t=torch.tensor([0.0], dtype=torch.float32))


def export_onnx(model, out, opset, keep_batch_norm=True, size=(224, 224)):
    """Writes `model` as ONNX: input "input" [batch,3,H,W], output "logits", batch symbolic."""
    opset9 = getattr(torch.onnx, "symbolic_opset9", None)
    if opset9 is not None and not hasattr(opset9, "zero"):
        torch.onnx.register_custom_op_symbolic("aten::zero", _zero, 9)
    mode = torch.onnx.TrainingMode.PRESERVE if keep_batch_norm else torch.onnx.TrainingMode.EVAL
    # Newer PyTorch (2.9+) defaults to its dynamo exporter; keep the TorchScript one, which
    # writes the same plain graph as older versions.
    extra = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        extra["dynamo"] = False
    torch.onnx.export(model, torch.zeros(1, 3, *size), out, opset_version=opset,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=mode, do_constant_folding=True, **extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--out", default=None, help="default: models/cache/<name>.onnx")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--pretrained", default="no", choices=["no"],
                    help="pretrained weights would need a download; only 'no' is supported")
    ap.add_argument("--batch-norm", default="keep", choices=["keep", "fold"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.opset > 17:
        raise SystemExit("--opset: at most 17")

    torch.set_num_threads(min(2, torch.get_num_threads()))
    out = args.out or os.path.join("models", "cache", f"{args.name}.onnx")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    model = build(args.name, args.seed)
    export_onnx(model, out, args.opset, keep_batch_norm=args.batch_norm == "keep")
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
