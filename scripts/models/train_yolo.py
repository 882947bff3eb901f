#!/usr/bin/env python3
"""Trains YOLOv7-tiny (scripts/models/yolov7.py) on a detection set of detection_set.py.

    /usr/bin/python3 scripts/models/train_yolo.py --data DIR --out STATE.pt
        [--model yolov7-tiny] [--size 512] [--epochs 30] [--batch 64] [--lr 0.002]
        [--device cuda] [--seed 0] [--limit N]

The images are letterboxed once to size × size (grey 114, as kiln's letterbox) and held in
memory as uint8; each step flips half of a batch left-right. The loss is YOLO's: each known
box is given to the anchors of every level whose width and height ratios to it are within 4,
in its own cell and the two neighbouring cells nearest its centre; box loss 1 − CIoU, objectness
BCE against the predicted box's IoU, class BCE, weighted per level (4, 1, 0.4). AdamW with a
linear warm-up and a cosine decay. Seeded; the state dict it writes loads into yolov7.py's Yolo
(`--weights`), which exports it in any form.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yolov7  # noqa: E402


def letterbox(img, size):
    w, h = img.size
    s = min(size / w, size / h)
    nw, nh = max(1, round(w * s)), max(1, round(h * s))
    canvas = Image.new("RGB", (size, size), (114, 114, 114))
    px, py = (size - nw) // 2, (size - nh) // 2
    canvas.paste(img.resize((nw, nh), Image.BILINEAR), (px, py))
    return np.asarray(canvas), s, px, py


def load_split(root, name, size, limit):
    with open(os.path.join(root, name + ".json")) as f:
        meta = json.load(f)
    images = meta["images"][:limit] if limit else meta["images"]
    pixels = np.zeros((len(images), size, size, 3), np.uint8)
    targets = []  # rows (image, class, cx, cy, w, h) in pixels of the letterboxed image
    for i, im in enumerate(images):
        arr, s, px, py = letterbox(Image.open(os.path.join(root, im["file"])).convert("RGB"), size)
        pixels[i] = arr
        for x0, y0, x1, y1, c in im["boxes"]:
            targets.append([i, c, (x0 + x1) / 2 * s + px, (y0 + y1) / 2 * s + py, (x1 - x0) * s,
                            (y1 - y0) * s])
    return torch.from_numpy(pixels), torch.tensor(targets, dtype=torch.float32), len(meta["classes"])


def ciou(a, b, eps=1e-7):
    """CIoU of boxes (cx, cy, w, h), elementwise."""
    a0, a1 = a[:, :2] - a[:, 2:] / 2, a[:, :2] + a[:, 2:] / 2
    b0, b1 = b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2
    inter = (torch.min(a1, b1) - torch.max(a0, b0)).clamp(0).prod(1)
    union = a[:, 2:].prod(1) + b[:, 2:].prod(1) - inter + eps
    iou = inter / union
    c = (torch.max(a1, b1) - torch.min(a0, b0)).pow(2).sum(1) + eps
    rho = (a[:, :2] - b[:, :2]).pow(2).sum(1)
    v = (4 / math.pi ** 2) * (torch.atan(b[:, 2] / (b[:, 3] + eps)) -
                              torch.atan(a[:, 2] / (a[:, 3] + eps))).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + 1 + eps)
    return iou - rho / c - v * alpha


def yolo_loss(ps, targets, anchors, classes, size):
    """ps: the raw heads [B, 3, H, W, 5 + C]; targets rows (image, class, cx, cy, w, h)."""
    dev = ps[0].device
    bce = torch.nn.BCEWithLogitsLoss()
    lbox, lobj, lcls = (torch.zeros((), device=dev) for _ in range(3))
    offsets = torch.tensor([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]], device=dev) * 0.5
    for i, p in enumerate(ps):
        stride = yolov7.STRIDES[i]
        ny, nx = p.shape[2:4]
        tobj = torch.zeros(p.shape[:4], device=dev)
        if len(targets):
            t = targets.clone()
            t[:, 2:] /= stride  # grid units
            anc = anchors[i] / stride  # [3, 2]
            ratio = t[None, :, 4:6] / anc[:, None]  # [3, n, 2]
            ok = torch.max(ratio, 1 / ratio).max(2).values < 4.0
            a_idx, t_idx = ok.nonzero(as_tuple=True)
            t = t[t_idx]
            gxy = t[:, 2:4]
            gxi = torch.tensor([nx, ny], device=dev) - gxy
            j, k = ((gxy % 1 < 0.5) & (gxy > 1)).T
            l, m = ((gxi % 1 < 0.5) & (gxi > 1)).T
            use = torch.stack((torch.ones_like(j), j, k, l, m))
            t = t.repeat(5, 1, 1)[use]
            a_idx = a_idx.repeat(5, 1)[use]
            off = (torch.zeros_like(gxy)[None] + offsets[:, None])[use]
            gij = (t[:, 2:4] - off).long()
            gi = gij[:, 0].clamp(0, nx - 1)
            gj = gij[:, 1].clamp(0, ny - 1)
            b = t[:, 0].long()
            ps_sel = p[b, a_idx, gj, gi]
            pxy = ps_sel[:, :2].sigmoid() * 2 - 0.5
            pwh = (ps_sel[:, 2:4].sigmoid() * 2) ** 2 * anc[a_idx]
            tbox = torch.cat((t[:, 2:4] - torch.stack((gi, gj), 1), t[:, 4:6]), 1)
            iou = ciou(torch.cat((pxy, pwh), 1), tbox)
            lbox = lbox + (1 - iou).mean()
            tobj[b, a_idx, gj, gi] = iou.detach().clamp(0).to(tobj.dtype)
            tcls = torch.zeros_like(ps_sel[:, 5:])
            tcls[torch.arange(len(t)), t[:, 1].long()] = 1.0
            lcls = lcls + bce(ps_sel[:, 5:], tcls)
        lobj = lobj + bce(p[..., 4], tobj) * (4.0, 1.0, 0.4)[i]
    scale = size / 640
    return 0.05 * lbox + 1.0 * scale ** 2 * lobj + 0.5 * classes / 80 * lcls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="yolov7-tiny", choices=["yolov7", "yolov7-tiny"])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    args = ap.parse_args()
    if args.size % 32:
        raise SystemExit("--size: a multiple of 32")
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    t0 = time.time()
    pixels, targets, classes = load_split(args.data, "train", args.size, args.limit)
    print(f"loaded {len(pixels)} images, {len(targets)} boxes in {time.time() - t0:.1f} s",
          flush=True)
    dev = torch.device(args.device)
    model = yolov7.Yolo(args.model, classes).to(dev)
    for m in model.modules():  # YOLO's initialization of BatchNorm
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eps, m.momentum = 1e-3, 0.03
    with torch.no_grad():
        for i, d in enumerate(model.detect):
            bias = d.bias.view(3, -1)
            bias[:, 4] += math.log(8 / (640 / yolov7.STRIDES[i]) ** 2)
            bias[:, 5:] += math.log(0.6 / (classes - 0.99))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    steps_per_epoch = max(1, len(pixels) // args.batch)
    total = steps_per_epoch * args.epochs
    warmup = min(300, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else
        0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, total - warmup))))
    anchors = model.anchors.to(dev)
    pixels_dev = pixels.to(dev)
    targets_dev = targets.to(dev)
    gen = torch.Generator().manual_seed(args.seed)
    use_amp = dev.type == "cuda"
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    model.train()
    step = 0
    for epoch in range(args.epochs):
        order = torch.randperm(len(pixels), generator=gen)
        running = 0.0
        for s in range(steps_per_epoch):
            idx = order[s * args.batch:(s + 1) * args.batch].to(dev)
            x = pixels_dev[idx].permute(0, 3, 1, 2).float() / 255.0
            sel = torch.isin(targets_dev[:, 0].long(), idx)
            t = targets_dev[sel].clone()
            remap = torch.full((len(pixels),), -1, dtype=torch.long, device=dev)
            remap[idx] = torch.arange(len(idx), device=dev)
            t[:, 0] = remap[t[:, 0].long()].float()
            flip = torch.rand(len(idx), generator=gen).to(dev) < 0.5
            x[flip] = x[flip].flip(3)
            fl = flip[t[:, 0].long()]
            t[fl, 2] = args.size - t[fl, 2]
            if use_amp:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    ps = model.raw(x)
            else:
                ps = model.raw(x)
            loss = yolo_loss([p.float() for p in ps], t, anchors, classes, args.size)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            running += loss.item()
            step += 1
        print(f"epoch {epoch + 1}/{args.epochs}: loss {running / steps_per_epoch:.4f}, "
              f"{time.time() - t0:.0f} s", flush=True)
    model.eval()
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, args.out)
    print(f"wrote {args.out} ({args.model}, {classes} classes, {args.size} px) in "
          f"{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
