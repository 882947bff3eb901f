#!/bin/bash
# Runs kiln's GPU tests and benchmarks on a GPU machine, writing logs under $OUT.
#
#   scripts/gpu/device_session.sh [tests] [zoo] [bench] [throughput] [b256] [stem] [images] [ladder] [peer]
#                                 [profile] [precision] [multigpu] [eightbit] [serve]
#
# Logs (*.log) stay in $OUT; the JSON results and per-layer profiles are packed into
# $OUT/results.tgz. KILN_GTEST_FILTER narrows the GPU tests, KILN_TEST_SHARDS spreads them.
#
# Expects .device/bundle.tgz: a kiln-bundle/ folder with bin/ (kiln and kiln_gpu_tests, as
# wrappers that find the non-CUDA libraries they link), share/ (the Fashion-MNIST t10k IDX
# files, and train-calib-val-* from scripts/gpu/fashion_calib_val.py for the accuracy tests) and
# env.sh (puts bin/ on PATH); and the repository around it. The torchvision models are
# exported on the machine itself (its PyTorch) into /tmp/kiln-models.
set -uo pipefail
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT" /tmp/kiln-json
repo=$(cd "$(dirname "$0")/../.." && pwd)
tar xzf "$repo/.device/bundle.tgz" -C /tmp && source /tmp/kiln-bundle/env.sh
share=/tmp/kiln-bundle/share
export PYTHONUNBUFFERED=1
models=/tmp/kiln-models
mkdir -p "$models"
what=" $* "

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv \
  > "$OUT/nvidia-smi.txt" 2>&1

export_models() {
  for m in ${KILN_EXPORT:-resnet50 resnet18 mobilenet_v2}; do  # KILN_EXPORT narrows them
    [ -f "$models/$m.onnx" ] && continue
    python3 "$repo/scripts/models/export_torchvision.py" "$m" --out "$models/$m.onnx" \
      >> "$OUT/export.log" 2>&1 || echo "export of $m failed (see export.log)"
  done
}
export_models

# The GPU tests in KILN_TEST_SHARDS processes at once (gtest's sharding; 3 by default) on the
# one GPU: every test runs once; the logs are gpu_tests.N.log, and gpu_tests.log all of them.
if [[ $what == *" tests "* ]]; then
  shards=${KILN_TEST_SHARDS:-3}
  pids=()
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i KILN_MODEL_DIR=$models \
      KILN_FASHION_MODEL=$repo/models/fashion_mnist.onnx KILN_FASHION_MNIST_DIR=$share \
      timeout "${KILN_TEST_TIMEOUT:-400}" kiln_gpu_tests --gtest_filter="${KILN_GTEST_FILTER:-*}" \
      > "$OUT/gpu_tests.$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < shards; ++i)); do
    wait "${pids[$i]}"
    echo "kiln_gpu_tests shard $i of $shards exit $?"
  done
  cat "$OUT"/gpu_tests.[0-9]*.log > "$OUT/gpu_tests.log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|tests ran" "$OUT/gpu_tests.log" | tail -40
fi

# The model zoo (tests/zoo) in fp32, tf32, fp16 and bf16 (KILN_ZOO_PRECISIONS) against ONNX
# Runtime, exported here with PyTorch, which also gives its own tf32/fp16/bf16 error as the
# yardstick. The cache sits in the repository copy, so a later call on the same warm machine
# resumes where this one stopped (KILN_ZOO_TIMEOUT bounds one call). KILN_ZOO_MODELS narrows it ("--tier ci", or names).
if [[ $what == *" zoo "* ]]; then
  zcache=$repo/models/cache/zoo-gpu
  mkdir -p "$zcache"
  KILN_ZOO_THREADS=2 timeout "${KILN_ZOO_TIMEOUT:-500}" python3 "$repo/tests/zoo/zoo.py" check \
    ${KILN_ZOO_MODELS:---tier all} --device cuda --precisions "${KILN_ZOO_PRECISIONS:-fp32,tf32,fp16,bf16}" \
    --runner "$(command -v kiln_zoo_run)" --runner-arg=--no-tactics --jobs "${KILN_ZOO_JOBS:-8}" \
    --run-jobs "${KILN_ZOO_RUN_JOBS:-3}" \
    --cache "$zcache" --results "$zcache/results.jsonl" --skip-done >> "$OUT/zoo.log" 2>&1
  echo "zoo exit $?"
  cp "$zcache/results.jsonl" "$OUT/zoo_cuda.jsonl" 2>/dev/null
  grep -c "^ok" "$OUT/zoo.log"; grep -A2 "^FAIL" "$OUT/zoo.log" | head -60
fi

if [[ $what == *" bench "* ]]; then
  b() { echo "== kiln bench $*" >> "$OUT/bench.log"; timeout 120 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$@" >> "$OUT/bench.log" 2>&1 || echo "FAILED: $*" >> "$OUT/bench.log"; }
  r50=$models/resnet50.onnx
  for bs in 1 16 256; do
    b "$r50" --precision fp16 --cuda-graph --batch $bs --no-transfers --duration 2 --json "/tmp/kiln-json/r50_fp16_b${bs}_compute.json"
    b "$r50" --precision fp16 --cuda-graph --batch $bs --duration 2 --json "/tmp/kiln-json/r50_fp16_b${bs}_copies.json"
  done
  b "$r50" --precision fp32 --cuda-graph --batch 256 --no-transfers --duration 2 --json "/tmp/kiln-json/r50_fp32_b256_compute.json"
  b "$r50" --precision tf32 --cuda-graph --batch 256 --no-transfers --duration 2 --json "/tmp/kiln-json/r50_tf32_b256_compute.json"
  b "$r50" --precision fp16 --batch 256 --no-transfers --duration 1 --dump-profile "/tmp/kiln-json/r50_fp16_b256_profile.json"
  b "$r50" --precision fp16 --batch 1 --no-transfers --duration 1 --dump-profile "/tmp/kiln-json/r50_fp16_b1_profile.json"
  grep -E "^resnet50|device memory|FAILED|error" "$OUT/bench.log"
fi

# The throughput rungs of ResNet-50 fp16 (bench/results/throughput.md): compute only, then with
# copies through a Pipeline, float32 and uint8 input, pinned and pageable, ordered and unordered
# compute; GPU samples through NVML on one of them.
if [[ $what == *" throughput "* ]]; then
  t() { echo "== kiln bench $*" >> "$OUT/throughput.log"; timeout 100 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" --precision fp16 --cuda-graph --duration 2 "$@" >> "$OUT/throughput.log" 2>&1 || echo "FAILED: $*" >> "$OUT/throughput.log"; }
  t --batch 256 --no-transfers
  t --batch 256 --input-format uint8-nhwc --no-transfers
  t --batch 256 --pinned --streams 4
  t --batch 256 --pinned --streams 4 --unordered-compute
  t --batch 256 --pinned --streams 3
  t --batch 256 --pinned --streams 6
  t --batch 256 --streams 4
  t --batch 256 --input-format uint8-nhwc --pinned --streams 4 --monitor --monitor-csv "$OUT/monitor_u8_b256.csv"
  t --batch 256 --input-format uint8-nhwc --pinned --streams 2
  t --batch 256 --input-format uint8-nhwc --streams 4
  t --batch 16 --no-transfers
  t --batch 16
  t --batch 16 --streams 4
  t --batch 16 --streams 4 --unordered-compute
  t --batch 16 --streams 4 --gpus 0,0
  grep -E "^resnet50|per request|hidden|GPU|memory used|utilization|clock|power|FAILED|error" "$OUT/throughput.log"
fi

# ResNet-50 fp16 b256, compute only (one context, float32 and uint8 input) against 4 streams with
# copies from pinned host memory (float32 and uint8; the compute order timed at warm-up, and
# forced each way), alternating, B256_ROUNDS rounds, NVML samples on each. B256_CONFIGS="args;args"
# replaces the configurations.
if [[ $what == *" b256 "* ]]; then
  configs=("--no-transfers" "--input-format uint8-nhwc --no-transfers" "--pinned --streams 4"
    "--pinned --streams 4 --ordered-compute" "--pinned --streams 4 --unordered-compute"
    "--input-format uint8-nhwc --pinned --streams 4"
    "--input-format uint8-nhwc --pinned --streams 4 --unordered-compute")
  [ -n "${B256_CONFIGS:-}" ] && IFS=';' read -r -a configs <<< "$B256_CONFIGS"  # "args;args;..."
  # B256_WARMUP and B256_DURATION: seconds of each row's untimed and timed runs (1 and 2).
  for r in $(seq "${B256_ROUNDS:-3}"); do
    for args in "${configs[@]}"; do
      echo "== round $r: kiln bench --batch 256 $args" >> "$OUT/b256.log"
      timeout 60 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" \
        --precision fp16 --cuda-graph --warmup "${B256_WARMUP:-1}" --duration "${B256_DURATION:-2}" \
        --batch 256 $args --monitor >> "$OUT/b256.log" 2>&1 || echo "FAILED: $args" >> "$OUT/b256.log"
    done
  done
  grep -E "^==|^resnet50|compute order|clock|power|FAILED|error" "$OUT/b256.log"
fi

# Scaling over the GPUs of one host (bench/results/multi_gpu.md): ResNet-50 fp16, b256 and b16,
# float32 and uint8 input from pinned host memory, 4 streams a GPU, on 1, 2, 4 and all GPUs,
# NVML on each; and the topology. MULTI_GPU_ROUNDS rounds (default 2), each list in turn.
if [[ $what == *" multigpu "* ]]; then
  n=$(nvidia-smi -L | grep -c "^GPU")
  nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
  lists=("0")
  for k in 2 4 8; do
    [ "$k" -le "$n" ] && lists+=("$(seq -s, 0 $((k - 1)))")
  done
  [ "$n" -gt 1 ] && [[ " ${lists[*]} " != *" $(seq -s, 0 $((n - 1))) "* ]] && lists+=("$(seq -s, 0 $((n - 1)))")
  for r in $(seq "${MULTI_GPU_ROUNDS:-2}"); do
    for b in 256 16; do
      for fmt in float32-nchw uint8-nhwc; do
        for gl in "${lists[@]}"; do
          k=$(($(tr -cd , <<< "$gl" | wc -c) + 1))
          echo "== round $r: batch $b, $fmt, --gpus $gl" >> "$OUT/multigpu.log"
          timeout 90 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" \
            --precision fp16 --cuda-graph --duration 3 --batch $b --input-format $fmt --pinned \
            --streams $((4 * k)) --gpus "$gl" --monitor >> "$OUT/multigpu.log" 2>&1 || echo "FAILED: $b $fmt $gl" >> "$OUT/multigpu.log"
        done
      done
    done
  done
  cat "$OUT/topo.txt"
  grep -E "^==|^resnet50|^GPU [0-9]+:|compute order|utilization|memory used|FAILED|error" "$OUT/multigpu.log"
fi

# uint8 against float32 input, compute only at b256: per-layer profiles (where the 0.5 ms goes)
# and NVML samples (power and clocks without copies in flight).
if [[ $what == *" stem "* ]]; then
  for f in float32-nchw uint8-nhwc; do
    timeout 120 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" \
      --precision fp16 --cuda-graph --batch 256 --no-transfers --duration 3 --input-format $f \
      --monitor --monitor-csv "$OUT/monitor_compute_$f.csv" \
      --dump-profile "/tmp/kiln-json/r50_fp16_b256_${f}_profile.json" > "$OUT/stem_$f.log" 2>&1
    head -30 "$OUT/stem_$f.log"
  done
fi

# End to end from JPEGs held in memory (the issue's 500x375, ~70 KB): decode, resize, normalize,
# infer, ResNet-50 fp16, batches made on the GPU (nvJPEG and the host threads) against the
# host threads alone (IMAGES_HOST=1), and torchvision's GPU decode of the same files.
if [[ $what == *" images "* ]]; then
  jp=/tmp/kiln-jpegs
  [ -d "$jp" ] || [ "${SERVE_JPEGS:-1}" = 0 ] || python3 "$repo/scripts/gpu/make_jpegs.py" "$jp" --count "${IMAGES_COUNT:-256}" > "$OUT/jpegs.log" 2>&1
  cat "$OUT/jpegs.log"
  im() { echo "== kiln bench $*" >> "$OUT/images.log"; timeout 120 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" --precision fp16 --cuda-graph --images "$jp" --duration 3 "$@" >> "$OUT/images.log" 2>&1 || echo "FAILED: $*" >> "$OUT/images.log"; }
  # gpu: JPEGs split between nvJPEG and the host threads by measured speed; nvjpeg: nvJPEG
  # alone (the hardware engines saturate near 19-20k images/s of these, whatever the decoders)
  for d in 1 2 3; do im --batch 64 --streams 4 --image-decoder gpu --decoders $d; done
  im --batch 64 --streams 4 --image-decoder nvjpeg --decoders 3
  im --batch 128 --streams 4 --image-decoder gpu --decoders 3
  im --batch 64 --streams 4 --image-decoder gpu --decoders 3 --letterbox
  [ "${IMAGES_HOST:-0}" = 1 ] && im --batch 256 --streams 4 --image-decoder host --decoders 2
  timeout 60 python3 "$repo/bench/torch_decode.py" "$jp" --batch 64 256 > "$OUT/torch_decode.log" 2>&1
  grep -E "^resnet50|image files|FAILED|error|warning" "$OUT/images.log"; cat "$OUT/torch_decode.log"
fi

# kiln bench --ladder for each of LADDER_MODELS (torchvision names; default ResNet-50,
# MobileNet-V2, EfficientNet-B0) at LADDER_BATCH (64), with PyTorch rows (LADDER_PEER=0: none).
# The table, JSON, markdown and SVG land in $OUT/ladder_<model>.*.
if [[ $what == *" ladder "* ]]; then
  for m in ${LADDER_MODELS:-resnet50 mobilenet_v2 efficientnet_b0}; do
    [ -f "$models/$m.onnx" ] || python3 "$repo/scripts/models/export_torchvision.py" "$m" \
      --out "$models/$m.onnx" >> "$OUT/export.log" 2>&1
    peer=()
    [ "${LADDER_PEER:-1}" = 1 ] && peer=(--peer-torch "$m" --peer-script "$repo/bench/ladder_torch.py")
    timeout "${LADDER_TIMEOUT:-300}" kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache \
      "$models/$m.onnx" --ladder --batch "${LADDER_BATCH:-64}" --rounds "${LADDER_ROUNDS:-2}" \
      --warmup 1 --duration 2 "${peer[@]}" --ladder-out "$OUT/ladder_$m" > "$OUT/ladder_$m.log" 2>&1
    echo "ladder $m exit $?"
    grep -A14 "^ladder:" "$OUT/ladder_$m.log" || tail -5 "$OUT/ladder_$m.log"
  done
fi

if [[ $what == *" peer "* ]]; then
  python3 "$repo/bench/peer_gpu.py" --model resnet50 --onnx "$models/resnet50.onnx" \
    --kiln "$(command -v kiln)" --batch 1 16 256 --precision fp16 --rounds 3 --duration 1 --kiln-args="--timing-cache /tmp/kiln-timing.cache" --markdown \
    --out /tmp/kiln-json/peer_gpu.json > "$OUT/peer_gpu.log" 2>&1
  python3 "$repo/bench/peer_gpu.py" --model resnet50 --onnx "$models/resnet50.onnx" \
    --kiln "$(command -v kiln)" --batch 256 --precision fp32 tf32 --torch-mode eager \
    --rounds 3 --duration 1 --kiln-args="--timing-cache /tmp/kiln-timing.cache" --markdown \
    --out /tmp/kiln-json/peer_gpu_fp32.json \
    > "$OUT/peer_gpu_fp32.log" 2>&1
  tail -n 14 "$OUT/peer_gpu.log"; tail -n 5 "$OUT/peer_gpu_fp32.log"
fi

if [[ $what == *" profile "* ]]; then
  for bs in 1 256; do
    timeout 120 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" \
      --precision fp16 --batch $bs --no-transfers --duration 1 \
      --dump-profile "/tmp/kiln-json/r50_fp16_b${bs}_profile.json" > "$OUT/profile_b$bs.log" 2>&1
    head -22 "$OUT/profile_b$bs.log"
    # The same with 8-bit NHWC pixels in (what kiln serve's uint8 models take): at b1 it computed
    # for 3.0 ms on an H100 where float32 input took 0.34-0.38 ms.
    timeout 120 kiln bench --device cuda --timing-cache /tmp/kiln-timing.cache "$models/resnet50.onnx" \
      --precision fp16 --batch $bs --input-format uint8-nhwc --no-transfers --duration 1 \
      --dump-profile "/tmp/kiln-json/r50_fp16_u8_b${bs}_profile.json" > "$OUT/profile_u8_b$bs.log" 2>&1
    head -22 "$OUT/profile_u8_b$bs.log"
  done
  timeout 120 kiln inspect --device cuda --timing-cache /tmp/kiln-timing.cache --precision fp16 \
    --batch 1 --input-format uint8-nhwc "$models/resnet50.onnx" > "$OUT/inspect_u8_b1.log" 2>&1
  timeout 120 kiln inspect --device cuda --timing-cache /tmp/kiln-timing.cache --precision fp16 \
    --batch 256 "$models/resnet50.onnx" > "$OUT/inspect_b256.log" 2>&1
  tail -3 "$OUT/inspect_b256.log"
fi

if [[ $what == *" precision "* ]]; then
  python3 "$repo/scripts/gpu/torch_precision_error.py" > "$OUT/torch_precision.log" 2>&1
  cat "$OUT/torch_precision.log"
fi

# 8-bit against fp16 (KILN_8BIT: fp8 int8 best), compute only with CUDA graphs, ResNet-50 and
# MobileNetV2 (KILN_8BIT_MODELS) at b1 and b256 (KILN_8BIT_BATCHES): each plan built once, then
# the precisions alternate, 3 rounds (the medians are the figures). Calibrated on random-normal
# samples: a speed figure (accuracy is bench/results/int8.md's). Also the calibration time of
# 512 ResNet-50 samples on the GPU, and the same build again from its cache.
if [[ $what == *" eightbit "* ]]; then
  e() { echo "== $*" >> "$OUT/eightbit.log"; timeout 240 "$@" >> "$OUT/eightbit.log" 2>&1 || echo "FAILED: $*" >> "$OUT/eightbit.log"; }
  python3 -c "import numpy as np; np.save('/tmp/calib.npy', np.random.default_rng(0).standard_normal((512, 3, 224, 224), dtype=np.float32))"
  ps=(fp16 ${KILN_8BIT:-fp8})
  for m in ${KILN_8BIT_MODELS:-resnet50 mobilenet_v2}; do
    for bs in ${KILN_8BIT_BATCHES:-1 256}; do
      for p in "${ps[@]}"; do
        cal=(); [[ $p == fp16 ]] || cal=(--calib /tmp/calib.npy --calib-samples 64 --calib-cache "/tmp/$m.$p.calib")
        e kiln build "$models/$m.onnx" --device cuda --precision "$p" "${cal[@]}" --batch "$bs" --cuda-graph \
          --timing-cache /tmp/kiln-timing.cache -o "/tmp/$m.$p.b$bs.kiln"
      done
    done
  done
  for round in 1 2 3; do
    for m in ${KILN_8BIT_MODELS:-resnet50 mobilenet_v2}; do
      for bs in ${KILN_8BIT_BATCHES:-1 256}; do
        for p in "${ps[@]}"; do
          e kiln bench "/tmp/$m.$p.b$bs.kiln" --device cuda --cuda-graph --batch "$bs" --no-transfers \
            --duration 2 --json "/tmp/kiln-json/${m}_${p}_b${bs}_r$round.json"
        done
      done
    done
  done
  grep -E "^== kiln bench|img/s|FAILED" "$OUT/eightbit.log" | tail -60
  for p in "${ps[@]:1}"; do
    t0=$(date +%s.%N)
    e kiln inspect "$models/resnet50.onnx" --device cuda --precision "$p" --calib /tmp/calib.npy \
      --calib-samples 512 --calib-cache "/tmp/r50.$p.512.calib"
    t1=$(date +%s.%N)
    e kiln inspect "$models/resnet50.onnx" --device cuda --precision "$p" --calib /tmp/calib.npy \
      --calib-samples 512 --calib-cache "/tmp/r50.$p.512.calib"
    t2=$(date +%s.%N)
    echo "$p calibration of 512 samples: inspect $(awk "BEGIN{print $t1 - $t0}") s; from the cache $(awk "BEGIN{print $t2 - $t1}") s" | tee -a "$OUT/eightbit.log"
  done
fi

# kiln serve (bench/results/serve.md): ResNet-50 fp16 served over gRPC and HTTP with raw uint8
# inputs at concurrency 256, against the offline Pipeline; a no-op model for the transport's
# ceiling; capacity, 70% and 2x capacity with RSS (bench/serve_gpu.py). The client runs on
# SERVE_CLIENT_CPUS, the server on SERVE_SERVER_CPUS.
if [[ $what == *" serve "* ]]; then
  jp=/tmp/kiln-jpegs
  [ -d "$jp" ] || [ "${SERVE_JPEGS:-1}" = 0 ] || python3 "$repo/scripts/gpu/make_jpegs.py" "$jp" --count 64 > "$OUT/jpegs.log" 2>&1
  # SERVE_JPEGS=0 leaves the JPEG model out; SERVE_ARGS adds serve_gpu.py's own (--sweep-instances 1,2).
  jpegs=(--jpegs "$jp"); [ "${SERVE_JPEGS:-1}" = 0 ] && jpegs=()
  timeout "${SERVE_TIMEOUT:-560}" python3 "$repo/bench/serve_gpu.py" --kiln "$(command -v kiln)" \
    --onnx "$models/resnet50.onnx" --out "$OUT/serve" --timing-cache /tmp/kiln-timing.cache \
    --client-cpus "${SERVE_CLIENT_CPUS:-0-5}" --server-cpus "${SERVE_SERVER_CPUS:-6-15}" \
    --duration "${SERVE_DURATION:-8}" --overload-seconds "${SERVE_OVERLOAD_S:-60}" "${jpegs[@]}" \
    ${SERVE_ARGS:-} > "$OUT/serve.log" 2>&1
  echo "serve exit $?"
  tail -n 40 "$OUT/serve.log"
fi

tar czf "$OUT/results.tgz" -C /tmp kiln-json
