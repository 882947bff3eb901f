#!/usr/bin/env python3
"""Trains a net with the traits of the TensorFlow conversions that lose accuracy in fp16, and
writes it as those converters do (models/fashion_tf_style.onnx).

    /usr/bin/python3 scripts/models/train_tf_style_net.py [--out models/fashion_tf_style.onnx]
        [--epochs 4] [--seed 0] [--threads 2] [--data /usr/share/datasets/fashion-mnist]
        [--scene plain|photo] [--act relu6|relu] [--save-state FILE.pt] [--from-state FILE.pt]

The traits, as a converted TensorFlow/Keras model has them:
- the input is NHWC "image" [N, 28, 28, 3] of raw 0-255 pixels (the grey Fashion-MNIST image in
  each channel), transposed to NCHW inside the graph;
- the normalization (x / 127.5 - 1, Keras' MobileNet preprocessing) is folded into the first
  conv's weights and bias, and every BatchNorm into its conv: the first conv computes small
  values as the difference of large products;
- "SAME" padding of the stride-2 layers as an explicit asymmetric Pad;
- MobileNetV2-style inverted residual blocks whose 3x3 depthwise convs are dilated (2 and 4,
  as in DeepLab's atrous backbone), ReLU6 as Clip;
- the classifier as ReduceMean then MatMul + Add, and a second, dense output: per-class maps at
  the input's resolution (1x1 conv, bilinear Resize x4, back to NHWC), as a segmentation head.

Outputs: "logits" [N, 10] and "maps" [N, 28, 28, 10]. Trained on the first 50000 training
images (the last 10000 are the validation split of kiln's accuracy tests), no augmentation.
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fashion_mnist import read_idx  # noqa: E402

LABELS = "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"


def same_pad(x, k, stride, dilation=1, value=0.0):
    """TensorFlow's SAME padding: the extra pixel goes after (bottom/right)."""
    extent = dilation * (k - 1) + 1
    h = int(x.shape[2])  # a constant in the export, as a converter writes it
    total = max((-(-h // stride) - 1) * stride + extent - h, 0)
    if total == 0:
        return x
    return F.pad(x, (total // 2, total - total // 2, total // 2, total - total // 2), value=value)


class ConvBN(nn.Module):
    """Conv + BatchNorm (+ ReLU6); `fold` gives the deploy conv (BN folded in)."""

    def __init__(self, cin, cout, k, stride=1, dilation=1, groups=1, act=True):
        super().__init__()
        self.k, self.stride, self.dilation, self.act = k, stride, dilation, act
        self.conv = nn.Conv2d(cin, cout, k, stride, 0, dilation, groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = self.bn(self.conv(same_pad(x, self.k, self.stride, self.dilation)))
        return ACT(x) if self.act else x

    def folded(self):
        s = self.bn.weight / torch.sqrt(self.bn.running_var + self.bn.eps)
        w = self.conv.weight * s[:, None, None, None]
        b = self.bn.bias - self.bn.running_mean * s
        return w.detach(), b.detach()


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, dilation, expand=3):
        super().__init__()
        mid = cin * expand
        self.residual = stride == 1 and cin == cout
        self.layers = nn.ModuleList([
            ConvBN(cin, mid, 1),
            ConvBN(mid, mid, 3, stride, dilation, groups=mid),
            ConvBN(mid, cout, 1, act=False)])

    def forward(self, x):
        y = x
        for layer in self.layers:
            y = layer(y)
        return x + y if self.residual else y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = ConvBN(3, 32, 3, stride=2)
        self.blocks = nn.ModuleList([
            InvertedResidual(32, 32, 1, 2),
            InvertedResidual(32, 64, 2, 1),
            InvertedResidual(64, 64, 1, 2),
            InvertedResidual(64, 64, 1, 4)])
        self.head = ConvBN(64, 128, 1)
        self.fc = nn.Linear(128, 10)
        self.maps = nn.Conv2d(128, 10, 1)

    def features(self, x):
        x = self.stem(x / 127.5 - 1.0)
        for b in self.blocks:
            x = b(x)
        return self.head(x)

    def forward(self, x):  # NCHW raw pixels; training only
        return self.fc(self.features(x).mean(dim=(2, 3)))


class Deployed(nn.Module):
    """The trained net as a converter writes it: NHWC raw pixels in, BN and normalization
    folded, MatMul + Add, two outputs."""

    def __init__(self, net):
        super().__init__()
        w, b = net.stem.folded()
        # x / 127.5 - 1 folded: w' = w / 127.5, b' = b - sum(w).
        self.stem = (w / 127.5, b - w.sum(dim=(1, 2, 3)))
        self.net = net

    def conv(self, x, layer, w, b, pad_value=0.0):
        x = same_pad(x, layer.k, layer.stride, layer.dilation, pad_value)
        y = F.conv2d(x, w, b, layer.stride, 0, layer.dilation, layer.conv.groups)
        return ACT(y) if layer.act else y

    def forward(self, image):
        x = image.permute(0, 3, 1, 2)
        # The raw pixel that the normalization maps to 0 pads the image, as 0 padded the
        # normalized one in training.
        x = self.conv(x, self.net.stem, *self.stem, pad_value=127.5)
        for block in self.net.blocks:
            y = x
            for layer in block.layers:
                y = self.conv(y, layer, *layer.folded())
            x = x + y if block.residual else y
        x = self.conv(x, self.net.head, *self.net.head.folded())
        logits = torch.matmul(x.mean(dim=(2, 3)), self.net.fc.weight.detach().t()) + \
            self.net.fc.bias.detach()
        maps = F.interpolate(self.net.maps(x), scale_factor=4.0, mode="bilinear",
                             align_corners=False)
        return logits, maps.permute(0, 2, 3, 1)


ACT = lambda x: F.hardtanh(x, 0.0, 6.0)  # noqa: E731 (--act)


def render(images, scene):
    """The grey images as the net sees them, raw 0-255: as stored (plain: black background), or
    as a product photo (a white background, the garment darker and in less contrast), whose
    large, nearly constant brightness the folded normalization and BatchNorms cancel."""
    x = images.astype(np.float32)
    return x if scene == "plain" else 255.0 - 0.6 * x


def load(data_dir, prefix, scene="plain"):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = np.repeat(render(images, scene)[:, None, :, :], 3, axis=1)  # raw 0-255, NCHW
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def evaluate(model, x, y, batch=1000):
    model.eval()
    with torch.no_grad():
        return sum((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
                   for i in range(0, len(x), batch)) / len(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models/fashion_tf_style.onnx")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scene", choices=["plain", "photo"], default="plain",
                    help="the images as stored, or rendered as product photos (see render)")
    ap.add_argument("--act", choices=["relu6", "relu"], default="relu6",
                    help="the activation: bounded (ReLU6, as Clip) or not (ReLU)")
    ap.add_argument("--save-state", help="keep the trained weights (a .pt file)")
    ap.add_argument("--from-state", help="skip training: export saved weights")
    args = ap.parse_args()
    global ACT
    if args.act == "relu":
        ACT = F.relu
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    x_train, y_train = load(args.data, "train", args.scene)
    x_train, y_train = x_train[:50000], y_train[:50000]
    x_test, y_test = load(args.data, "t10k", args.scene)
    net = Net()
    steps = (len(x_train) + args.batch - 1) // args.batch
    opt = torch.optim.Adam(net.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=steps)
    gen = torch.Generator().manual_seed(args.seed)
    if args.from_state:
        net.load_state_dict(torch.load(args.from_state))
    for epoch in range(0 if args.from_state else args.epochs):
        net.train()
        t0 = time.time()
        perm = torch.randperm(len(x_train), generator=gen)
        for i in range(0, len(x_train), args.batch):
            idx = perm[i:i + args.batch]
            loss = F.cross_entropy(net(x_train[idx]), y_train[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {epoch + 1}/{args.epochs}: test accuracy {evaluate(net, x_test, y_test):.4f}"
              f" ({time.time() - t0:.0f} s)", flush=True)

    if args.save_state:
        torch.save(net.state_dict(), args.save_state)
    net.eval()
    deployed = Deployed(net).eval()
    with torch.no_grad():
        probe = x_test[:64]
        ref = net(probe)
        got, _ = deployed(probe.permute(0, 2, 3, 1))
        err = (got - ref).norm() / ref.norm()
    if err > 1e-4:
        raise SystemExit(f"the folded net is {err:.2e} from the trained one")
    acc = evaluate(net, x_test, y_test)
    torch.onnx.export(deployed, torch.zeros(1, 28, 28, 3), args.out, opset_version=13,
                      input_names=["image"], output_names=["logits", "maps"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"},
                                    "maps": {0: "batch"}},
                      do_constant_folding=True)
    m = onnx.load(args.out)
    del m.metadata_props[:]
    for k, v in {"kiln.labels": LABELS, "kiln.test_accuracy": f"{acc:.4f}",
                 "kiln.input": "NHWC raw 0-255 pixels"}.items():
        m.metadata_props.add(key=k, value=v)
    m.doc_string = ("Fashion-MNIST net in the form of a TensorFlow conversion (NHWC raw pixels, "
                    "normalization folded into the first conv, dilated depthwise convs), trained "
                    f"by scripts/models/train_tf_style_net.py (seed {args.seed}, {args.epochs} "
                    "epochs, the last 10000 training images held out)")
    onnx.checker.check_model(m)
    onnx.save(m, args.out)
    print(f"wrote {args.out}: test accuracy {acc:.4f}, folded net within {err:.1e}, "
          f"{os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
