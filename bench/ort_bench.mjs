#!/usr/bin/env node
// ONNX Runtime (CPU) side of the peer benchmark: the counterpart of `kiln bench --json`.
//
//   node bench/ort_bench.mjs MODEL.onnx [--batch N] [--threads T] [--warmup S]
//        [--duration S] [--json FILE] [--seed K]
//
// Loads MODEL with intraOpNumThreads = T, interOpNumThreads = 1 and graph optimization 'all',
// feeds random inputs (a symbolic batch dimension 0 becomes N), runs `warmup` seconds
// untimed, then times single runs until `duration` seconds have passed (at least 3 runs),
// exactly like kiln bench. Prints one JSON object (same keys as `kiln bench --json`) to
// stdout, and also writes it to FILE with --json.
//
// onnxruntime-node is resolved from scripts/ort (install once:
// cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci).
import fs from 'node:fs';
import {createRequire} from 'node:module';
import path from 'node:path';
import process from 'node:process';
import {fileURLToPath} from 'node:url';

const kHere = path.dirname(fileURLToPath(import.meta.url));
const kOrtPackage = path.join(kHere, '..', 'scripts', 'ort', 'package.json');

function fail(msg) {
  process.stderr.write(`ort_bench: ${msg}\n`);
  process.exit(1);
}

function loadOrt() {
  try {
    return createRequire(kOrtPackage)('onnxruntime-node');
  } catch (e) {
    fail(
        `cannot load onnxruntime-node (${e.message.split('\n')[0]}); install it with: ` +
        'cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci');
  }
}

function parseArgs(argv) {
  const args = {model: null, batch: 1, threads: 1, warmup: 1, duration: 3, json: null, seed: 1};
  const number = (flag, v, min) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) fail(`${flag}: expected a number >= ${min}, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--batch') {
      args.batch = number(a, next(), 1);
    } else if (a === '--threads') {
      args.threads = number(a, next(), 1);
    } else if (a === '--warmup') {
      args.warmup = number(a, next(), 0);
    } else if (a === '--duration') {
      args.duration = number(a, next(), 0);
    } else if (a === '--json') {
      args.json = next();
    } else if (a === '--seed') {
      args.seed = number(a, next(), 0);
    } else if (a === '-h' || a === '--help') {
      process.stdout.write(
          'usage: ort_bench.mjs MODEL.onnx [--batch N] [--threads T] [--warmup S] ' +
          '[--duration S] [--json FILE] [--seed K]\n');
      process.exit(0);
    } else if (a.startsWith('--')) {
      fail(`unknown option ${a}`);
    } else if (args.model === null) {
      args.model = a;
    } else {
      fail(`unexpected argument ${a}`);
    }
  }
  if (!args.model) fail('no model given');
  if (!fs.existsSync(args.model)) fail(`${args.model}: no such file`);
  return args;
}

// xorshift32: a seeded generator, so runs are repeatable (Math.random cannot be seeded).
function makeRng(seed) {
  let s = (seed >>> 0) || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

// Random values like kiln bench: floats uniform in [-1, 1), integers small and non-negative.
function randomTensor(ort, meta, batch, rng) {
  const dims = meta.shape.map((d, i) => {
    if (typeof d === 'number' && d >= 0) return d;
    if (i === 0) return batch;
    fail(`input '${meta.name}' [${meta.shape.join(',')}] has symbolic dimension ${i}`);
  });
  const count = dims.reduce((a, b) => a * b, 1);
  const fill = (arr, f) => {
    for (let i = 0; i < count; ++i) arr[i] = f();
    return arr;
  };
  switch (meta.type) {
    case 'float32':
      return new ort.Tensor('float32', fill(new Float32Array(count), () => rng() * 2 - 1), dims);
    case 'float64':
      return new ort.Tensor('float64', fill(new Float64Array(count), () => rng() * 2 - 1), dims);
    case 'int32':
      return new ort.Tensor(
          'int32', fill(new Int32Array(count), () => Math.floor(rng() * 8)), dims);
    case 'int64':
      return new ort.Tensor(
          'int64', fill(new BigInt64Array(count), () => BigInt(Math.floor(rng() * 8))), dims);
    case 'uint8':
      return new ort.Tensor(
          'uint8', fill(new Uint8Array(count), () => Math.floor(rng() * 256)), dims);
    case 'bool':
      return new ort.Tensor('bool', fill(new Uint8Array(count), () => (rng() < 0.5 ? 1 : 0)), dims);
    default: fail(`input '${meta.name}': cannot make random ${meta.type}`);
  }
}

// Same rank rule as kiln bench: the ceil(p% · n)-th smallest.
function percentile(sorted, p) {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
  });
  const rng = makeRng(args.seed);
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) fail(`input '${meta.name}' is not a tensor`);
    feeds[meta.name] = randomTensor(ort, meta, args.batch, rng);
  }
  // Images per run: the first input's leading dimension.
  const first = feeds[session.inputNames[0]];
  const batch = first && first.dims.length ? first.dims[0] : 1;

  const now = () => performance.now() / 1e3;
  let start = now();
  for (let runs = 0; args.warmup > 0 && (runs === 0 || now() - start < args.warmup); ++runs)
    await session.run(feeds);

  const latMs = [];
  start = now();
  while (latMs.length < 3 || now() - start < args.duration) {
    const t0 = now();
    await session.run(feeds);
    latMs.push((now() - t0) * 1e3);
  }
  const total = now() - start;
  latMs.sort((a, b) => a - b);
  const result = {
    model: args.model,
    device: 'cpu',
    precision: 'fp32',
    batch,
    threads: args.threads,
    runs: latMs.length,
    throughput_ips: (batch * latMs.length) / total,
    latency_ms: {
      min: latMs[0],
      median: percentile(latMs, 50),
      p90: percentile(latMs, 90),
      p99: percentile(latMs, 99),
    },
    ort_version: ort.env.versions?.common ?? 'unknown',
  };
  const text = JSON.stringify(result, null, 2) + '\n';
  if (args.json) fs.writeFileSync(args.json, text);
  process.stdout.write(text);
  await session.release();
}

main().catch((e) => fail(e.message ?? String(e)));
