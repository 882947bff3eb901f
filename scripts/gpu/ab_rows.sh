#!/bin/bash
# Two kiln builds side by side on the GPU: `kiln bench` of one model in fp16 with the CUDA graph,
# the builds alternating round by round (before, after, before, after...) at each batch, both on
# one timing cache warmed first, so both run the same kernels and only the runtime around them
# differs. Prints one line per run and the medians; logs under $OUT.
#
#   scripts/gpu/ab_rows.sh BEFORE.tgz MODEL BATCH...   (after device_session.sh set up the bundle)
#
# BEFORE.tgz is a bundle (../shared/device/bundle.sh) of the other build's kiln. KILN_AB_ROUNDS
# (3) rounds of KILN_AB_DURATION (2) seconds; KILN_AB_TRANSFERS=1 times copies too.
set -uo pipefail
OUT=${OUT:-/tmp/kiln-out}
repo=$(cd "$(dirname "$0")/../.." && pwd)
source /tmp/kiln-bundle/env.sh
mkdir -p /tmp/kiln-before "$OUT" && tar xzf "$1" -C /tmp/kiln-before
before=/tmp/kiln-before/kiln-bundle/bin/kiln
after=$(command -v kiln)
model=$2
shift 2
models=/tmp/kiln-models
mkdir -p "$models"
[ -f "$models/$model.onnx" ] || python3 "$repo/scripts/models/export_torchvision.py" "$model" \
  --out "$models/$model.onnx" >> "$OUT/export.log" 2>&1
cache=/tmp/kiln-ab-$model.cache
transfers=--no-transfers
[ "${KILN_AB_TRANSFERS:-0}" = 1 ] && transfers=
for b in "$@"; do
  "$after" bench "$models/$model.onnx" --device cuda --precision fp16 --cuda-graph --batch "$b" \
    $transfers --warmup 0 --duration 0.1 --timing-cache "$cache" > /dev/null 2>&1
  for r in $(seq "${KILN_AB_ROUNDS:-3}"); do
    for which in before after; do
      bin=$before
      [ "$which" = after ] && bin=$after
      json=$OUT/ab_${model}_b${b}_${which}_$r.json
      timeout 120 "$bin" bench "$models/$model.onnx" --device cuda --precision fp16 --cuda-graph \
        --batch "$b" $transfers --warmup 0.5 --duration "${KILN_AB_DURATION:-2}" \
        --timing-cache "$cache" --json "$json" > "$OUT/ab_${model}_b${b}_${which}_$r.log" 2>&1
      echo "$which r$r exit $?: $(grep "^$model" "$OUT/ab_${model}_b${b}_${which}_$r.log")"
    done
  done
done
