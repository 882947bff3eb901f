#!/usr/bin/env python3
"""Trains kiln's Fashion-MNIST models: residual CNNs exported to ONNX.

    /usr/bin/python3 scripts/models/train_fashion_mnist.py [--arch small|resnet18]
        [--out models/fashion_mnist.onnx] [--epochs 8] [--seed 0] [--threads 2]
        [--data /usr/share/datasets/fashion-mnist] [--device cpu|cuda]
        [--save-state FILE.pt] [--from-state FILE.pt]

--arch small (the default) is kiln's demo model (models/fashion_mnist.onnx); --arch resnet18
is the deeper net of the 8-bit accuracy table (models/fashion_resnet18.onnx): ResNet-18's
layout (a stem conv, four stages of two basic blocks, 1x1 projections where the shape
changes, global average pooling, one linear layer: 18 weighted layers on the main path) at
widths 16/32/64/128 for 28x28 inputs, about 60 MFLOP per image.

--save-state keeps the trained weights; --from-state skips training and evaluates and
exports saved weights. Together they let the training run elsewhere (a GPU machine, with
another torch) while the ONNX is always written by the same exporter.

The data comes from Debian's dataset-fashion-mnist (IDX files, gzip). The network is kept
small (about 9.5 MFLOP per image) because kiln's demo and model tests run the whole test set
on the single-threaded reference kernels. No augmentation; Adam with a one-cycle schedule.

The ONNX keeps its BatchNormalization nodes (exported with TrainingMode.PRESERVE from an
eval-mode model) so that kiln's BatchNorm kernel and its folding pass have something to do.
Metadata: kiln.mean, kiln.std, kiln.labels, kiln.test_accuracy.
"""
import argparse
import gzip
import os
import sys
import warnings
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

# The exporter warns about constant folding under TrainingMode.PRESERVE; the model is in
# eval mode, so BatchNorm is exported in inference form and nothing is mis-folded.
warnings.filterwarnings("ignore", message="It is recommended that constant folding")

MEAN = 0.2860
STD = 0.3530
LABELS = "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"


def read_idx(path):
    """Reads an IDX file (optionally gzipped) into a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x[:, None, :, :].copy()), torch.from_numpy(labels.astype(np.int64))


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout))


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN, plus the input, then ReLU (ResNet's basic block)."""

    def __init__(self, channels):
        super().__init__()
        self.a = conv_bn(channels, channels)
        self.b = conv_bn(channels, channels)

    def forward(self, x):
        return F.relu(x + self.b(F.relu(self.a(x))))


class FashionNet(nn.Module):
    """28x28x1 → 10 logits.

    stem   conv3x3 1→24 + BN + ReLU        28x28
    pool   maxpool 2                        14x14
    block  residual block of 24             14x14
    pool   maxpool 2                         7x7
    conv   conv3x3 24→48 + BN + ReLU         7x7
    block  residual block of 48              7x7
    pool   maxpool 2 (floor)                 3x3
    head   flatten 432 → Linear 10
    """

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 24)
        self.block1 = ResidualBlock(24)
        self.conv2 = conv_bn(24, 48)
        self.block2 = ResidualBlock(48)
        self.fc = nn.Linear(48 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 2)
        x = F.max_pool2d(self.block1(x), 2)
        x = self.block2(F.relu(self.conv2(x)))
        x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    """ResNet's basic block, with a strided 1x1 projection where the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                               nn.BatchNorm2d(cout))
        self.b = conv_bn(cout, cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        skip = x if self.proj is None else self.proj(x)
        return F.relu(skip + self.b(F.relu(self.a(x))))


class FashionResNet18(nn.Module):
    """28x28x1 → 10 logits, ResNet-18's layout at widths 16/32/64/128.

    stem    conv3x3 1→16 + BN + ReLU          28x28
    stage1  2 basic blocks of 16               28x28
    stage2  2 basic blocks of 32, stride 2     14x14
    stage3  2 basic blocks of 64, stride 2      7x7
    stage4  2 basic blocks of 128, stride 2     4x4
    head    global average pool → Linear 10
    """

    def __init__(self, widths=(16, 32, 64, 128)):
        super().__init__()
        self.stem = conv_bn(1, widths[0])
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            blocks += [BasicBlock(cin, w, stride), BasicBlock(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


ARCHS = {"small": (FashionNet, "models/fashion_mnist.onnx"),
         "resnet18": (FashionResNet18, "models/fashion_resnet18.onnx")}


def count_flops(model):
    """FLOPs per image of convs and the linear layer (multiply-add = 2 FLOPs)."""
    flops = 0

    def hook(mod, inp, out):
        nonlocal flops
        if isinstance(mod, nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1] * mod.in_channels // mod.groups
            flops += 2 * out.numel() * k
        elif isinstance(mod, nn.Linear):
            flops += 2 * out.numel() * mod.in_features

    hooks = [m.register_forward_hook(hook) for m in model.modules()
             if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model.eval()
        model(torch.zeros(1, 1, 28, 28))
    for h in hooks:
        h.remove()
    return flops


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def train(model, args, x_train, y_train, x_test, y_test):
    dev = torch.device(args.device)
    model.to(dev)
    x_train, y_train = x_train.to(dev), y_train.to(dev)
    steps_per_epoch = (len(x_train) + args.batch - 1) // args.batch
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(x_train), generator=gen).to(dev)
        total_loss = 0.0
        for i in range(0, len(x_train), args.batch):
            idx = perm[i:i + args.batch]
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.item() * len(idx)
        acc = evaluate(model, x_test.to(dev), y_test.to(dev))
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total_loss / len(x_train):.4f}, "
              f"test accuracy {acc:.4f} ({time.time() - t0:.0f} s)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="small", choices=sorted(ARCHS))
    ap.add_argument("--out", default=None,
                    help="the ONNX file (default: the arch's file under models/); 'none': no export")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=None, help="default: 8 (small), 15 (resnet18)")
    ap.add_argument("--holdout", type=int, default=None,
                    help="the last N training images are not trained on; kiln's tests choose the "
                         "calibration method on them (default: 0 for small, 10000 for resnet18)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--save-state", default=None)
    ap.add_argument("--from-state", default=None)
    args = ap.parse_args()
    net, default_out = ARCHS[args.arch]
    args.out = args.out or default_out
    deep = args.arch == "resnet18"
    args.epochs = args.epochs or (15 if deep else 8)
    args.holdout = (10000 if deep else 0) if args.holdout is None else args.holdout

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)

    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    if args.holdout:
        x_train, y_train = x_train[:-args.holdout], y_train[:-args.holdout]
    print(f"train {tuple(x_train.shape)}, test {tuple(x_test.shape)}")

    model = net()
    flops = count_flops(model)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params} parameters, {flops / 1e6:.2f} MFLOP per image")

    if args.from_state:
        model.load_state_dict(torch.load(args.from_state, map_location="cpu"))
    else:
        train(model, args, x_train, y_train, x_test, y_test)
    model = model.to("cpu")
    if args.save_state:
        torch.save(model.state_dict(), args.save_state)

    model.eval()
    acc = evaluate(model, x_test, y_test)
    if args.out == "none":
        print(f"test accuracy {acc:.4f} (no export: --out none)")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), args.out, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
    m = onnx.load(args.out)
    meta = {"kiln.mean": f"{MEAN:.4f}", "kiln.std": f"{STD:.4f}", "kiln.labels": LABELS,
            "kiln.test_accuracy": f"{acc:.4f}", "kiln.flops_per_image": str(flops)}
    del m.metadata_props[:]
    for k, v in meta.items():
        m.metadata_props.add(key=k, value=v)
    m.doc_string = (f"Fashion-MNIST residual CNN ({args.arch}) trained by "
                    f"scripts/models/train_fashion_mnist.py (seed {args.seed}, {args.epochs} epochs, "
                    f"the last {args.holdout} training images held out)")
    onnx.checker.check_model(m)
    onnx.save(m, args.out)
    print(f"wrote {args.out}: test accuracy {acc:.4f}, {flops / 1e6:.2f} MFLOP per image, "
          f"{os.path.getsize(args.out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
