#!/bin/bash
# kiln fp16 against PyTorch's fp16 CUDA graph (channels_last) at one batch, over many CNNs:
# the zoo's "no CNN slower than PyTorch's CUDA graph" row. Each model: 2 alternating rounds
# (bench/peer_gpu.py), kiln timing at most --max-tactics candidates per layer (KILN_SWEEP_TACTICS,
# 3) so that a cold timing cache fits the call. Logs and JSON under $OUT; a table at the end,
# then kiln's per-layer profile of every model slower than PyTorch's CUDA graph.
# On 2026-12-02 a model took 25-60 s (export excluded): budget KILN_SWEEP_TIMEOUT (75 s) each
# for the rounds, after kiln's timing cache is warmed for the model (KILN_SWEEP_WARM_TIMEOUT).
#
#   scripts/gpu/cnn_sweep.sh BATCH MODEL...   (after the bundle is unpacked: device_session.sh)
set -uo pipefail
OUT=${OUT:-/tmp/kiln-out}
repo=$(cd "$(dirname "$0")/../.." && pwd)
source /tmp/kiln-bundle/env.sh
export PYTHONUNBUFFERED=1
batch=$1
shift
models=/tmp/kiln-models
mkdir -p "$models" "$OUT/sweep"
# Exports first, several at once (each is mostly one CPU thread).
printf '%s\n' "$@" | OMP_NUM_THREADS=2 xargs -P "${KILN_SWEEP_EXPORTS:-8}" -I{} sh -c \
  "[ -f '$models/{}.onnx' ] || python3 '$repo/scripts/models/export_torchvision.py' {} \
     --opset 17 --out '$models/{}.onnx' > '$OUT/sweep/export_{}.log' 2>&1"
for m in "$@"; do
  # kiln's first build of a model times its layers' candidates (a cold timing cache): done here
  # under its own limit, so that the timed rounds below fit theirs.
  timeout "${KILN_SWEEP_WARM_TIMEOUT:-120}" kiln bench --device cuda --precision fp16 \
    --cuda-graph --batch "$batch" --no-transfers --warmup 0 --duration 0.1 \
    --timing-cache /tmp/kiln-timing.cache --max-tactics "${KILN_SWEEP_TACTICS:-3}" \
    "$models/$m.onnx" > "$OUT/sweep/warm_${m}_b$batch.log" 2>&1
  timeout "${KILN_SWEEP_TIMEOUT:-75}" python3 "$repo/bench/peer_gpu.py" --model "$m" \
    --onnx "$models/$m.onnx" --kiln "$(command -v kiln)" --batch "$batch" --precision fp16 \
    --torch-mode cuda_graph --rounds 2 --warmup 0.3 --duration 0.5 \
    --kiln-args="--timing-cache /tmp/kiln-timing.cache --max-tactics ${KILN_SWEEP_TACTICS:-3}" \
    --out "$OUT/sweep/${m}_b$batch.json" > "$OUT/sweep/${m}_b$batch.log" 2>&1
  echo "$m: exit $?"
done
python3 - "$OUT/sweep" "$batch" > "$OUT/sweep/table.md" <<'PY'
import glob, json, os, sys
d, b = sys.argv[1], sys.argv[2]
print(f"| model | kiln img/s | PyTorch CUDA graph img/s | kiln / CUDA graph |")
print("|---|---:|---:|---:|")
for f in sorted(glob.glob(os.path.join(d, f"*_b{b}.json"))):
    m = os.path.basename(f)[: -len(f"_b{b}.json")]
    rows = json.load(open(f)).get("results", [])
    r = rows[0] if rows else {}
    k, t = (r.get("kiln") or {}).get("throughput"), (r.get("torch") or {}).get("throughput")
    if k and t:
        print(f"| {m} | {k:,.0f} | {t:,.0f} | {k / t:.2f}x |")
    else:
        print(f"| {m} | {k or '–'} | {t or '–'} | incomplete (see {m}_b{b}.log) |")
PY
cat "$OUT/sweep/table.md"
# The slower ones' profiles: where kiln spends its time.
grep -E "^\| .* \| 0\.[0-9]+x \|$" "$OUT/sweep/table.md" | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
  while read -r m; do
    timeout 60 kiln bench --device cuda --precision fp16 --cuda-graph --batch "$batch" \
      --no-transfers --duration 1 --timing-cache /tmp/kiln-timing.cache "$models/$m.onnx" \
      --dump-profile "$OUT/sweep/profile_${m}_b$batch.json" > "$OUT/sweep/profile_${m}_b$batch.log" 2>&1
    echo "== $m"; head -20 "$OUT/sweep/profile_${m}_b$batch.log"
  done
