#!/usr/bin/env bash
# Prepares what kiln's whole-model tests (tests/models) read: the models, seeded inputs and
# ONNX Runtime's outputs for them. Idempotent: only what is missing or older than its
# sources is redone, so a second run takes a second.
#
#   scripts/models/prepare_test_models.sh            # into models/cache (git-ignored)
#   KILN_MODEL_CACHE=/some/dir scripts/models/prepare_test_models.sh
#
# Layout of the cache (the test reads the same paths):
#   <cache>/<model>.onnx                                the model
#   <cache>/cases/<model>/b<N>/input.npy                input "input", batch N
#   <cache>/cases/<model>/b<N>/ref/logits.npy           ONNX Runtime's output
# Models: resnet18, resnet50, mobilenet_v2, efficientnet_b0, lraspp_mobilenet_v3_large
# (torchvision, seeded random weights; EfficientNet's squeeze-and-excitation blocks keep
# standalone Mul nodes after fusion; the LR-ASPP segmentation net adds HardSigmoid, and
# bilinear Resize with sizes computed from the input's shape), fashion_mnist
# (models/fashion_mnist.onnx, fed real test images) and yolov7_tiny_{raw,decoded,nms,trt}
# (scripts/models/yolov7.py; cases/yolov7_tiny/b<N>/images.npy and ref_<form>/<output>.npy).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${KILN_MODEL_CACHE:-$ROOT/models/cache}
PYTHON=${PYTHON:-/usr/bin/python3}
FASHION_DATA=${FASHION_DATA:-/usr/share/datasets/fashion-mnist}
BATCHES=(1 4)
mkdir -p "$CACHE/cases"

log() { echo "prepare_test_models: $*"; }

# ONNX Runtime for Node.js; the plain install would try to download CUDA files.
if [ ! -d scripts/ort/node_modules/onnxruntime-node ]; then
  log "installing onnxruntime-node"
  # `npm ci` installs exactly what package-lock.json pins; from npm's cache where it has them.
  (cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefer-offline --no-audit --no-fund)
fi

for name in resnet18 resnet50 mobilenet_v2 efficientnet_b0 lraspp_mobilenet_v3_large; do
  if [ ! -s "$CACHE/$name.onnx" ]; then
    log "exporting $name"
    "$PYTHON" scripts/models/export_torchvision.py "$name" --out "$CACHE/$name.onnx.tmp"
    mv "$CACHE/$name.onnx.tmp" "$CACHE/$name.onnx"
  fi
done

if [ ! -s models/fashion_mnist.onnx ]; then
  echo "prepare_test_models: models/fashion_mnist.onnx is missing" \
       "(train it: $PYTHON scripts/models/train_fashion_mnist.py)" >&2
  exit 1
fi
if [ ! -s "$CACHE/fashion_mnist.onnx" ] || ! cmp -s models/fashion_mnist.onnx "$CACHE/fashion_mnist.onnx"; then
  cp models/fashion_mnist.onnx "$CACHE/fashion_mnist.onnx"
  rm -rf "$CACHE/cases/fashion_mnist"
fi

# Inputs: seeded standard-normal images for the ImageNet models (the scale of normalized
# photos); for Fashion-MNIST, real test images normalized as in training, and at batch 4
# one seeded random image among them.
"$PYTHON" - "$CACHE" "$FASHION_DATA" "${BATCHES[@]}" <<'EOF'
import gzip, os, sys
import numpy as np

cache, data_dir, batches = sys.argv[1], sys.argv[2], [int(b) for b in sys.argv[3:]]

def save(path, x):
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path + ".tmp.npy", np.ascontiguousarray(x, dtype=np.float32))
    os.replace(path + ".tmp.npy", path)

for i, name in enumerate(["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0",
                          "lraspp_mobilenet_v3_large"]):
    for b in batches:
        rng = np.random.RandomState(1000 * i + b)
        save(f"{cache}/cases/{name}/b{b}/input.npy", rng.standard_normal((b, 3, 224, 224)))

with gzip.open(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"), "rb") as f:
    raw = f.read()
images = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28)
x = (images.astype(np.float32) / 255.0 - 0.2860) / 0.3530
for b in batches:
    batch = x[:b].copy()
    if b > 1:
        batch[b - 1] = np.random.RandomState(7).standard_normal((1, 28, 28))
    save(f"{cache}/cases/fashion_mnist/b{b}/input.npy", batch)
EOF

for name in resnet18 resnet50 mobilenet_v2 efficientnet_b0 lraspp_mobilenet_v3_large fashion_mnist; do
  for b in "${BATCHES[@]}"; do
    dir=$CACHE/cases/$name/b$b
    ref=$dir/ref/logits.npy
    if [ ! -s "$ref" ] || [ "$CACHE/$name.onnx" -nt "$ref" ] || [ "$dir/input.npy" -nt "$ref" ]; then
      log "ONNX Runtime: $name batch $b"
      rm -rf "$dir/ref.tmp"
      node scripts/ort/ort_run.mjs "$CACHE/$name.onnx" --input "input=$dir/input.npy" \
        --output-dir "$dir/ref.tmp" >/dev/null
      rm -rf "$dir/ref"
      mv "$dir/ref.tmp" "$dir/ref"
    fi
  done
done
# YOLOv7-tiny (scripts/models/yolov7.py, seeded random weights) in its four export forms, fed
# non-square 256×320 images of pixels in [0, 1) at batches 1 and 2. The end-to-end forms use
# mAP's thresholds (confidence 0.001, IoU 0.65): random weights score no box above 0.25.
# ONNX Runtime runs all but the EfficientNMS_TRT form (a TensorRT plugin node).
for form in raw decoded nms trt; do
  name=yolov7_tiny_$form
  if [ ! -s "$CACHE/$name.onnx" ] || [ scripts/models/yolov7.py -nt "$CACHE/$name.onnx" ]; then
    log "exporting $name"
    "$PYTHON" scripts/models/yolov7.py yolov7-tiny --form "$form" --size 320 --conf 0.001 \
      --iou 0.65 --max-det 100 --out "$CACHE/$name.onnx.tmp" >/dev/null
    mv "$CACHE/$name.onnx.tmp" "$CACHE/$name.onnx"
  fi
done
"$PYTHON" - "$CACHE" <<'PY'
import os, sys
import numpy as np

cache = sys.argv[1]
for b in (1, 2):
    path = f"{cache}/cases/yolov7_tiny/b{b}/images.npy"
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        x = np.random.RandomState(70 + b).random_sample((b, 3, 256, 320)).astype(np.float32)
        np.save(path + ".tmp.npy", x)
        os.replace(path + ".tmp.npy", path)
PY
for form in raw decoded nms; do
  for b in 1 2; do
    dir=$CACHE/cases/yolov7_tiny/b$b
    ref=$dir/ref_$form
    if [ ! -d "$ref" ] || [ "$CACHE/yolov7_tiny_$form.onnx" -nt "$ref" ]; then
      log "ONNX Runtime: yolov7_tiny_$form batch $b"
      rm -rf "$ref.tmp"
      node scripts/ort/ort_run.mjs "$CACHE/yolov7_tiny_$form.onnx" \
        --input "images=$dir/images.npy" --output-dir "$ref.tmp" >/dev/null
      rm -rf "$ref"
      mv "$ref.tmp" "$ref"
    fi
  done
done
log "ready in $CACHE"
