#!/usr/bin/env python3
"""YOLOv7 and YOLOv7-tiny, written from the paper's deploy configurations, exported to ONNX in
four forms (no downloads: seeded random weights, or a state dict of this script's modules).

    /usr/bin/python3 scripts/models/yolov7.py {yolov7,yolov7-tiny} --form FORM --out PATH
        [--classes 80] [--size 640] [--seed 0] [--weights STATE_DICT.pt]
        [--conf 0.25] [--iou 0.45] [--max-det 100] [--opset 13]

FORM:
  raw      the three head convs, each [batch, 3, H/s, W/s, 5 + classes] (logits): "p3", "p4", "p5"
  decoded  one output "detections" [batch, N, 5 + classes]: sigmoid, xy·2·s + s·(grid − 0.5),
           wh² · 4 · anchor; the grids come from the input's size inside the graph, so one file
           serves 320, 480 and 640 (H and W are symbolic, multiples of 32)
  nms      end to end with ONNX NonMaxSuppression, class-wise through the class-offset trick
           (boxes shifted by class × 4096 before a single-class NMS); output "detections"
           [M, 7]: batch index, x0, y0, x1, y1, class, score
  trt      end to end with an EfficientNMS_TRT node (plugin_version "1", box_coding 0 on
           corners, score_activation 0), as the common "end2end" export writes it: outputs
           num_dets int32 [batch, 1], det_boxes [batch, K, 4], det_scores [batch, K],
           det_classes int32 [batch, K]

The facts of the deploy configurations (cfg/deploy/yolov7.yaml, yolov7-tiny.yaml):
  - Conv = conv + BatchNorm (folded at export) + activation: SiLU for YOLOv7 (Sigmoid·Mul in
    the graph), LeakyReLU 0.1 for YOLOv7-tiny;
  - YOLOv7: ELAN blocks, MP blocks (MaxPool k2 s2 beside a strided conv), SPPCSPC (MaxPool
    k5/9/13 s1 + Concat), RepConv re-parameterized into one 3×3 conv;
  - YOLOv7-tiny: no RepConv and no SPPCSPC, but separate MaxPools of 5, 9 and 13;
  - both: MP = MaxPool k2 s2, nearest ×2 Resize, strides 8, 16 and 32; boxes from centre-size
    to corners before NMS; score = objectness × class probability.

Random weights: BatchNorm's affine parameters are randomized and its statistics set from a
few random batches (as export_torchvision.py does), and the head's biases start at YOLO's
priors, so the outputs are well scaled. Boxes and scores of an untrained net mean nothing; a
trained state dict (--weights) gives real detections.
"""
import argparse
import inspect
import math
import os
import sys
import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore", message="It is recommended that constant folding")

ANCHORS = {
    "yolov7": [[12, 16, 19, 36, 40, 28], [36, 75, 76, 55, 72, 146], [142, 110, 192, 243, 459, 401]],
    "yolov7-tiny": [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                    [116, 90, 156, 198, 373, 326]],
}
STRIDES = (8, 16, 32)
MAX_WH = 4096  # the class offset of the nms form: larger than any box coordinate


class Conv(nn.Module):
    """conv (k, s, same padding) + BatchNorm + activation."""

    def __init__(self, c1, c2, k=1, s=1, act="silu"):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU() if act == "silu" else nn.LeakyReLU(0.1)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SiLUGraph(nn.Module):
    """SiLU written as x · sigmoid(x): the form YOLOv7's export has in its graph."""

    def forward(self, x):
        return x * torch.sigmoid(x)


class MaxPool(nn.Module):
    def __init__(self, k, s):
        super().__init__()
        self.m = nn.MaxPool2d(k, s, k // 2 if s == 1 else 0)

    def forward(self, x):
        return self.m(x)


class Net(nn.Module):
    """A list of layers, each fed by earlier outputs (the configuration's "from" indices)."""

    def __init__(self, layers):
        super().__init__()
        self.froms = [f for f, _ in layers]
        self.layers = nn.ModuleList([m for _, m in layers])

    def forward(self, x):
        outs = []
        for f, m in zip(self.froms, self.layers):
            if isinstance(f, list):
                x = m([outs[i] for i in f])
            else:
                x = m(x if not outs else outs[f])
            outs.append(x)
        return outs


class Concat(nn.Module):
    def forward(self, xs):
        return torch.cat(xs, 1)


class Upsample(nn.Module):
    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")


class SPPCSPC(nn.Module):
    def __init__(self, c1, c2, act):
        super().__init__()
        c = c2
        self.cv1 = Conv(c1, c, 1, 1, act)
        self.cv2 = Conv(c1, c, 1, 1, act)
        self.cv3 = Conv(c, c, 3, 1, act)
        self.cv4 = Conv(c, c, 1, 1, act)
        self.m = nn.ModuleList([MaxPool(k, 1) for k in (5, 9, 13)])
        self.cv5 = Conv(4 * c, c, 1, 1, act)
        self.cv6 = Conv(c, c, 3, 1, act)
        self.cv7 = Conv(2 * c, c2, 1, 1, act)

    def forward(self, x):
        x1 = self.cv4(self.cv3(self.cv1(x)))
        y1 = self.cv6(self.cv5(torch.cat([x1] + [m(x1) for m in self.m], 1)))
        return self.cv7(torch.cat((y1, self.cv2(x)), 1))


class Layers:
    """The configuration's list: each layer with its "from" (relative, absolute or a list) and
    its output channels."""

    def __init__(self, act):
        self.act = act
        self.layers = []
        self.ch = []

    def index(self, f):
        return f if f >= 0 else len(self.layers) + f

    def channels(self, f):
        return 3 if not self.layers else self.ch[self.index(f)]

    def add(self, f, m, c):
        self.layers.append((f, m))
        self.ch.append(c)

    def conv(self, f, c2, k=1, s=1):
        self.add(f, Conv(self.channels(f), c2, k, s, self.act), c2)

    def pool(self, f, k, s):
        self.add(f, MaxPool(k, s), self.channels(f))

    def up(self):
        self.add(-1, Upsample(), self.channels(-1))

    def cat(self, fs):
        idx = [self.index(f) for f in fs]
        self.add(idx, Concat(), sum(self.ch[i] for i in idx))


def tiny_layers():
    """cfg/deploy/yolov7-tiny.yaml, up to the three head outputs (layers 74, 75, 76)."""
    n = Layers("leaky")

    def elan(c, c_out):
        n.conv(-1, c)
        n.conv(-2, c)
        n.conv(-1, c, 3)
        n.conv(-1, c, 3)
        n.cat([-1, -2, -3, -4])
        n.conv(-1, c_out)

    n.conv(-1, 32, 3, 2)  # 0 P1/2
    n.conv(-1, 64, 3, 2)  # 1 P2/4
    elan(32, 64)  # 2-7
    n.pool(-1, 2, 2)  # 8 P3/8
    elan(64, 128)  # 9-14
    n.pool(-1, 2, 2)  # 15 P4/16
    elan(128, 256)  # 16-21
    n.pool(-1, 2, 2)  # 22 P5/32
    elan(256, 512)  # 23-28
    n.conv(-1, 256)  # 29
    n.conv(-2, 256)  # 30
    n.pool(-1, 5, 1)  # 31
    n.pool(-2, 9, 1)  # 32
    n.pool(-3, 13, 1)  # 33
    n.cat([-1, -2, -3, -4])  # 34
    n.conv(-1, 256)  # 35
    n.cat([-1, -7])  # 36
    n.conv(-1, 256)  # 37
    n.conv(-1, 128)  # 38
    n.up()  # 39
    n.conv(21, 128)  # 40
    n.cat([-1, -2])  # 41
    elan(64, 128)  # 42-47
    n.conv(-1, 64)  # 48
    n.up()  # 49
    n.conv(14, 64)  # 50
    n.cat([-1, -2])  # 51
    elan(32, 64)  # 52-57
    n.conv(-1, 128, 3, 2)  # 58
    n.cat([-1, 47])  # 59
    elan(64, 128)  # 60-65
    n.conv(-1, 256, 3, 2)  # 66
    n.cat([-1, 37])  # 67
    elan(128, 256)  # 68-73
    n.conv(57, 128, 3)  # 74
    n.conv(65, 256, 3)  # 75
    n.conv(73, 512, 3)  # 76
    assert len(n.layers) == 77
    return n, (74, 75, 76)


def full_layers():
    """cfg/deploy/yolov7.yaml, up to the three RepConv outputs (re-parameterized: one 3×3 conv
    each; layers 102, 103, 104)."""
    n = Layers("silu")

    def elan_backbone(c, c_out):  # two 1×1 branches, four 3×3, concat of four
        n.conv(-1, c)
        n.conv(-2, c)
        for _ in range(4):
            n.conv(-1, c, 3)
        n.cat([-1, -3, -5, -6])
        n.conv(-1, c_out)

    def elan_head(c, c_mid, c_out):  # two 1×1 branches, four 3×3 of c_mid, concat of six
        n.conv(-1, c)
        n.conv(-2, c)
        for _ in range(4):
            n.conv(-1, c_mid, 3)
        n.cat([-1, -2, -3, -4, -5, -6])
        n.conv(-1, c_out)

    def mp(c, route=None):  # MaxPool k2 s2 → 1×1, beside 1×1 → 3×3 s2; concat (+ a route)
        n.pool(-1, 2, 2)
        n.conv(-1, c)
        n.conv(-3, c)
        n.conv(-1, c, 3, 2)
        n.cat([-1, -3] + ([route] if route is not None else []))

    n.conv(-1, 32, 3)  # 0
    n.conv(-1, 64, 3, 2)  # 1 P1/2
    n.conv(-1, 64, 3)  # 2
    n.conv(-1, 128, 3, 2)  # 3 P2/4
    elan_backbone(64, 256)  # 4-11
    mp(128)  # 12-16 P3/8
    elan_backbone(128, 512)  # 17-24
    mp(256)  # 25-29 P4/16
    elan_backbone(256, 1024)  # 30-37
    mp(512)  # 38-42 P5/32
    elan_backbone(256, 1024)  # 43-50
    n.add(-1, SPPCSPC(1024, 512, "silu"), 512)  # 51
    n.conv(-1, 256)  # 52
    n.up()  # 53
    n.conv(37, 256)  # 54
    n.cat([-1, -2])  # 55
    elan_head(256, 128, 256)  # 56-63
    n.conv(-1, 128)  # 64
    n.up()  # 65
    n.conv(24, 128)  # 66
    n.cat([-1, -2])  # 67
    elan_head(128, 64, 128)  # 68-75
    mp(128, 63)  # 76-80
    elan_head(256, 128, 256)  # 81-88
    mp(256, 51)  # 89-93
    elan_head(512, 256, 512)  # 94-101
    n.conv(75, 256, 3)  # 102 RepConv
    n.conv(88, 512, 3)  # 103 RepConv
    n.conv(101, 1024, 3)  # 104 RepConv
    assert len(n.layers) == 105
    return n, (102, 103, 104)


class Yolo(nn.Module):
    def __init__(self, name, classes=80):
        super().__init__()
        layers, heads = full_layers() if name == "yolov7" else tiny_layers()
        self.net = Net(layers.layers)
        self.heads = heads
        self.classes = classes
        self.no = 5 + classes
        self.detect = nn.ModuleList([nn.Conv2d(layers.ch[h], 3 * self.no, 1) for h in heads])
        self.register_buffer("anchors", torch.tensor(ANCHORS[name], dtype=torch.float32).view(3, 3, 2))
        self.form = "raw"

    def raw(self, x):
        outs = self.net(x)
        ps = []
        for i, h in enumerate(self.heads):
            p = self.detect[i](outs[h])
            b, _, ny, nx = p.shape
            ps.append(p.view(b, 3, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous())
        return ps

    def decode(self, ps):
        rows = []
        for i, p in enumerate(ps):
            b, _, ny, nx, no = p.shape
            s = STRIDES[i]
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32),
                                    torch.arange(nx, dtype=torch.float32), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2)
            y = p.sigmoid()
            xy = y[..., 0:2] * (2.0 * s) + (grid - 0.5) * s
            wh = (y[..., 2:4] * 2.0) ** 2 * self.anchors[i].view(1, 3, 1, 1, 2)
            rows.append(torch.cat((xy, wh, y[..., 4:]), -1).view(b, -1, no))
        return torch.cat(rows, 1)

    def forward(self, x):
        ps = self.raw(x)
        if self.form == "raw":
            return tuple(ps)
        det = self.decode(ps)
        if self.form == "decoded":
            return det
        boxes = corners(det[..., 0:4])
        scores = det[..., 5:] * det[..., 4:5]
        if self.form == "trt":
            return EfficientNMS.apply(boxes, scores, self.iou, self.conf, self.max_det)
        return class_offset_nms(boxes, scores, self.iou, self.conf, self.max_det)


def corners(cxcywh):
    cxy, wh = cxcywh[..., 0:2], cxcywh[..., 2:4]
    return torch.cat((cxy - wh / 2, cxy + wh / 2), -1)


def class_offset_nms(boxes, scores, iou, conf, max_det):
    """Class-wise NMS by one single-class ONNX NonMaxSuppression over boxes shifted by
    class × MAX_WH; [M, 7] rows of batch, x0, y0, x1, y1, class, score."""
    score, cls = scores.max(-1, keepdim=True)
    shifted = boxes + cls.float() * MAX_WH
    keep = NonMaxSuppression.apply(shifted, score.transpose(1, 2).contiguous(), max_det, iou,
                                   conf)
    b, j = keep[:, 0], keep[:, 2]
    return torch.cat((b.unsqueeze(1).float(), boxes[b, j], cls[b, j].float(), score[b, j]), 1)


class NonMaxSuppression(torch.autograd.Function):
    """ONNX NonMaxSuppression (center_point_box 0); in PyTorch a stand-in of the right shape."""

    @staticmethod
    def forward(ctx, boxes, scores, max_out, iou, conf):
        n = min(max_out, boxes.shape[1])
        idx = torch.zeros(n * boxes.shape[0], 3, dtype=torch.int64)
        for b in range(boxes.shape[0]):
            idx[b * n:(b + 1) * n, 0] = b
            idx[b * n:(b + 1) * n, 2] = torch.arange(n)
        return idx

    @staticmethod
    def symbolic(g, boxes, scores, max_out, iou, conf):
        c = lambda v, t: g.op("Constant", value_t=torch.tensor([v], dtype=t))
        return g.op("NonMaxSuppression", boxes, scores, c(max_out, torch.int64),
                    c(iou, torch.float32), c(conf, torch.float32))


class EfficientNMS(torch.autograd.Function):
    """TensorRT's EfficientNMS_TRT plugin node; in PyTorch a stand-in of the right shapes."""

    @staticmethod
    def forward(ctx, boxes, scores, iou, conf, max_det):
        b = boxes.shape[0]
        return (torch.randint(0, max_det, (b, 1), dtype=torch.int32),
                torch.randn(b, max_det, 4), torch.randn(b, max_det),
                torch.randint(0, scores.shape[2], (b, max_det), dtype=torch.int32))

    @staticmethod
    def symbolic(g, boxes, scores, iou, conf, max_det):
        return g.op("TRT::EfficientNMS_TRT", boxes, scores, background_class_i=-1,
                    box_coding_i=0, iou_threshold_f=iou, max_output_boxes_i=max_det,
                    plugin_version_s="1", score_activation_i=0, score_threshold_f=conf,
                    outputs=4)


def randomize(model, seed, size):
    """Seeded weights with BatchNorm statistics from random batches and YOLO's head priors."""
    gen = torch.Generator().manual_seed(seed + 1)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for bn in bns:
            n = bn.num_features
            bn.weight.copy_(0.5 + torch.rand(n, generator=gen))
            bn.bias.copy_(0.2 * torch.randn(n, generator=gen))
            bn.reset_running_stats()
            bn.momentum = None
        for i, d in enumerate(model.detect):
            bias = d.bias.view(3, -1)
            s = STRIDES[i]
            bias[:, 4] = math.log(8 / (640 / s) ** 2)  # objectness: 8 objects per 640² image
            bias[:, 5:] = math.log(0.6 / (model.classes - 0.99))
        model.train()
        model.net(torch.randn(2, 3, size, size, generator=gen))
    model.eval()


def fold_batch_norm(model):
    for m in model.modules():
        if isinstance(m, Conv) and isinstance(m.bn, nn.BatchNorm2d):
            m.conv = torch.nn.utils.fusion.fuse_conv_bn_eval(m.conv, m.bn)
            m.bn = nn.Identity()


def export(model, form, out, size, opset):
    model.form = form
    names = {"raw": ["p3", "p4", "p5"], "decoded": ["detections"], "nms": ["detections"],
             "trt": ["num_dets", "det_boxes", "det_scores", "det_classes"]}[form]
    dyn = {"images": {0: "batch", 2: "height", 3: "width"}}
    if form == "raw":
        for i, n in enumerate(names):
            dyn[n] = {0: "batch", 2: f"height_{STRIDES[i]}", 3: f"width_{STRIDES[i]}"}
    elif form == "decoded":
        dyn["detections"] = {0: "batch", 1: "candidates"}
    elif form == "nms":
        dyn["detections"] = {0: "selected"}
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.zeros(1, 3, size, size), out, opset_version=opset,
                      input_names=["images"], output_names=names, dynamic_axes=dyn,
                      do_constant_folding=True, **extra)
    finish(out, form, model)


def finish(out, form, model):
    """The outputs' shapes where the exporter leaves them unknown (the plugin node's), and the
    input's normalization for kiln's 8-bit image inputs: pixels / 255 (mean 0, std 1)."""
    import onnx

    m = onnx.load(out)
    if form == "trt":
        k = model.max_det
        shapes = {"num_dets": ["batch", 1], "det_boxes": ["batch", k, 4],
                  "det_scores": ["batch", k], "det_classes": ["batch", k]}
        for o in m.graph.output:
            dims = o.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[o.name]:
                dims.add().CopyFrom(onnx.TensorShapeProto.Dimension(
                    **({"dim_param": d} if isinstance(d, str) else {"dim_value": d})))
    if form in ("nms", "decoded"):
        dims = m.graph.output[0].type.tensor_type.shape.dim
        dims[-1].Clear()
        dims[-1].dim_value = 7 if form == "nms" else model.no
    for key, value in (("kiln.mean", "0"), ("kiln.std", "1")):
        prop = m.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.save(m, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=["yolov7", "yolov7-tiny"])
    ap.add_argument("--form", default="decoded", choices=["raw", "decoded", "nms", "trt"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--classes", type=int, default=80)
    ap.add_argument("--size", type=int, default=640)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", default=None, help="a state dict of this script's Yolo module")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--max-det", type=int, default=100)
    ap.add_argument("--opset", type=int, default=13)
    args = ap.parse_args()
    if args.size % 32:
        raise SystemExit("--size: a multiple of 32")

    torch.set_num_threads(min(2, torch.get_num_threads()))
    torch.manual_seed(args.seed)
    model = Yolo(args.name, args.classes)
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
        model.eval()
    else:
        randomize(model, args.seed, min(args.size, 320))
    if args.name == "yolov7":  # SiLU as Sigmoid·Mul, as YOLOv7's export writes it
        for m in model.modules():
            if isinstance(m, Conv):
                m.act = SiLUGraph()
    fold_batch_norm(model)
    model.iou, model.conf, model.max_det = args.iou, args.conf, args.max_det
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    export(model, args.form, args.out, args.size, args.opset)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {params / 1e6:.2f}M parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
