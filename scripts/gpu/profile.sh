#!/bin/bash
# kiln fp16 per-layer profiles on the GPU machine: for each model, export (torchvision, opset 17),
# warm the timing cache, then `kiln bench --dump-profile` at BATCH with the CUDA graph on. Writes
# $OUT/profile/{MODEL}_b{BATCH}.{json,log} and a summary by op (profile_summary.py).
#
#   scripts/gpu/profile.sh BATCH MODEL...     (after device_session.sh set up the bundle)
set -uo pipefail
OUT=${OUT:-/tmp/kiln-out}
repo=$(cd "$(dirname "$0")/../.." && pwd)
source /tmp/kiln-bundle/env.sh
batch=$1
shift
models=/tmp/kiln-models
mkdir -p "$models" "$OUT/profile"
for m in "$@"; do
  [ -f "$models/$m.onnx" ] || python3 "$repo/scripts/models/export_torchvision.py" "$m" \
    --opset 17 --out "$models/$m.onnx" >> "$OUT/profile/export.log" 2>&1
  timeout "${KILN_PROFILE_WARM_TIMEOUT:-120}" kiln bench --device cuda --precision fp16 \
    --cuda-graph --batch "$batch" --no-transfers --warmup 0 --duration 0.1 \
    --timing-cache /tmp/kiln-timing.cache "$models/$m.onnx" > /dev/null 2>&1
  timeout 60 kiln bench --device cuda --precision fp16 --cuda-graph --batch "$batch" \
    --no-transfers --duration "${KILN_PROFILE_DURATION:-2}" --timing-cache /tmp/kiln-timing.cache \
    "$models/$m.onnx" --dump-profile "$OUT/profile/${m}_b$batch.json" \
    > "$OUT/profile/${m}_b$batch.log" 2>&1
  echo "== $m: exit $?"
  grep -iE "img/s|p50" "$OUT/profile/${m}_b$batch.log" | head -4
  python3 "$repo/scripts/gpu/profile_summary.py" "$OUT/profile/${m}_b$batch.json"
done
