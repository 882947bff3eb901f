#!/usr/bin/env node
// Runs an ONNX model through ONNX Runtime (CPU) and writes every output as a .npy file:
// kiln's whole-model tests compare against these.
//
//   node scripts/ort/ort_run.mjs MODEL.onnx --input NAME=FILE.npy [--input ...]
//        --output-dir DIR [--threads N] [--opt disabled|basic|extended|all]
//
// Float outputs are written as float32 (<f4), integer and bool outputs as int64 (<i8), to
// DIR/<output name>.npy (characters other than [A-Za-z0-9._-] in the name become '_').
// Install once: cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';

import ort from 'onnxruntime-node';

const kMagic = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // "\x93NUMPY"

// numpy descr (without byte order) → [onnxruntime type, TypedArray, bytes per element].
const kDtypes = {
  f4: ['float32', Float32Array, 4],
  f8: ['float64', Float64Array, 8],
  i1: ['int8', Int8Array, 1],
  u1: ['uint8', Uint8Array, 1],
  i2: ['int16', Int16Array, 2],
  u2: ['uint16', Uint16Array, 2],
  i4: ['int32', Int32Array, 4],
  u4: ['uint32', Uint32Array, 4],
  i8: ['int64', BigInt64Array, 8],
  u8: ['uint64', BigUint64Array, 8],
  b1: ['bool', Uint8Array, 1],
};

function fail(msg) {
  process.stderr.write(`ort_run: ${msg}\n`);
  process.exit(1);
}

// Reads a little-endian, C-order .npy file (format version 1, 2 or 3) into an ort.Tensor.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(kMagic)) fail(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(`${file}: bad .npy header ${header}`);
  if (fortran[1] === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const order = descr[1][0];
  const kind = descr[1].slice(1);
  if (!(kind in kDtypes) || order === '>') fail(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const [type, Arr, size] = kDtypes[kind];
  const count = dims.reduce((a, b) => a * b, 1);
  const start = headerStart + headerLen;
  if (buf.length - start < count * size) fail(`${file}: truncated data`);
  // Copy into an aligned buffer: the data offset need not be a multiple of the element size.
  const bytes = new Uint8Array(count * size);
  buf.copy(bytes, 0, start, start + count * size);
  let data = new Arr(bytes.buffer);
  if (kind === 'b1') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return new ort.Tensor(type, type === 'bool' ? Array.from(data, Boolean) : data, dims);
}

// Writes a format-1.0 .npy file; the header is padded so the data starts 64-byte aligned.
function writeNpy(file, descr, dims, data) {
  const shapeStr = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  kMagic.copy(pre, 0);
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

function parseArgs(argv) {
  const args = {model: null, inputs: [], outDir: null, threads: 1, opt: 'all'};
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--input') {
      const v = next();
      const eq = v.indexOf('=');
      if (eq <= 0) fail(`--input expects NAME=FILE.npy, got '${v}'`);
      args.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (a === '--output-dir') {
      args.outDir = next();
    } else if (a === '--threads') {
      args.threads = Number(next());
    } else if (a === '--opt') {
      args.opt = next();
    } else if (a === '-h' || a === '--help') {
      process.stdout.write(
          'usage: ort_run.mjs MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR ' +
          '[--threads N] [--opt disabled|basic|extended|all]\n');
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
  if (!args.outDir) fail('--output-dir is required');
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: args.opt,
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
  });
  const feeds = {};
  for (const [name, file] of args.inputs) {
    if (!session.inputNames.includes(name))
      fail(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    feeds[name] = readNpy(file);
  }
  for (const name of session.inputNames)
    if (!(name in feeds)) fail(`missing --input for '${name}'`);

  const t0 = performance.now();
  const results = await session.run(feeds);
  const ms = performance.now() - t0;
  fs.mkdirSync(args.outDir, {recursive: true});
  for (const name of session.outputNames) {
    const t = results[name];
    const file = path.join(args.outDir, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`);
    let data;
    let descr;
    if (['float32', 'float64', 'float16'].includes(t.type)) {
      data = Float32Array.from(t.data, Number);
      descr = '<f4';
    } else if (t.type === 'int64') {
      data = t.data;
      descr = '<i8';
    } else {
      data = BigInt64Array.from(t.data, (v) => BigInt(Number(v)));
      descr = '<i8';
    }
    writeNpy(file, descr, t.dims, data);
    process.stdout.write(`${file}: ${t.type} [${t.dims.join(',')}]\n`);
  }
  process.stdout.write(`ort_run: ${path.basename(args.model)} ran in ${ms.toFixed(1)} ms\n`);
}

main().catch((e) => fail(e.message ?? String(e)));
