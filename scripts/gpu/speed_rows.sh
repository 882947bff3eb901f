#!/bin/bash
# The zoo's speed rows on the GPU machine: kiln fp16 against PyTorch (CUDA graph and
# torch.compile reduce-overhead, channels_last) at one batch, one run per model, rounds
# alternating (bench/peer_gpu.py), plus kiln's per-layer profile of each, summed by op
# (profile_summary.py). KILN_PEER_ROUNDS=0: kiln alone, its timing cache warmed first, then the
# profile. Logs under $OUT.
#
#   scripts/gpu/speed_rows.sh [BATCH] MODEL...      (after device_session.sh set up the bundle)
set -uo pipefail
OUT=${OUT:-/tmp/kiln-out}
repo=$(cd "$(dirname "$0")/../.." && pwd)
source /tmp/kiln-bundle/env.sh
batch=$1
shift
models=/tmp/kiln-models
rounds=${KILN_PEER_ROUNDS:-3}
mkdir -p "$models" "$OUT"
for m in "$@"; do
  [ -f "$models/$m.onnx" ] || python3 "$repo/scripts/models/export_torchvision.py" "$m" \
    --opset 17 --out "$models/$m.onnx" >> "$OUT/export.log" 2>&1
  if [ "$rounds" -gt 0 ]; then
    timeout "${KILN_PEER_TIMEOUT:-150}" python3 "$repo/bench/peer_gpu.py" --model "$m" \
      --onnx "$models/$m.onnx" --kiln "$(command -v kiln)" --batch "$batch" --precision fp16 \
      --torch-mode cuda_graph --compile --rounds "$rounds" --warmup 0.5 \
      --duration 1 --kiln-args="--timing-cache /tmp/kiln-timing.cache" --markdown \
      --out "$OUT/peer_${m}_b$batch.json" > "$OUT/peer_${m}_b$batch.log" 2>&1
    echo "$m: peer exit $?"; grep -E "^\|" "$OUT/peer_${m}_b$batch.log" | tail -4
  else  # the first build times every layer's candidates (a cold timing cache)
    timeout "${KILN_PEER_TIMEOUT:-150}" kiln bench --device cuda --precision fp16 --cuda-graph \
      --batch "$batch" --no-transfers --warmup 0 --duration 0.1 \
      --timing-cache /tmp/kiln-timing.cache "$models/$m.onnx" > /dev/null 2>&1
  fi
  timeout 60 kiln bench --device cuda --precision fp16 --cuda-graph --batch "$batch" \
    --no-transfers --duration "${KILN_PROFILE_DURATION:-2}" --timing-cache /tmp/kiln-timing.cache \
    "$models/$m.onnx" --dump-profile "$OUT/profile_${m}_b$batch.json" \
    > "$OUT/profile_${m}_b$batch.log" 2>&1
  echo "== $m: profile exit $?"
  head -2 "$OUT/profile_${m}_b$batch.log"
  python3 "$repo/scripts/gpu/profile_summary.py" "$OUT/profile_${m}_b$batch.json"
done
