// kiln serve's live page (GET /) in headless Chromium: it lists the models as READY, shows the
// throughput and batch sizes of load sent meanwhile, and classifies an uploaded image (the
// first Fashion-MNIST test image, an ankle boot) with the top 5; a corrupt upload shows the
// server's error. The server then drains on SIGTERM and exits 0.
//
//   node tests/node/live_page.test.mjs --kiln build/kiln --models models \
//        --fashion-data /usr/share/datasets/fashion-mnist [--chromium /usr/bin/chromium] \
//        [--screenshot docs/live-page.png]
//
// Exits 77 (skipped) where Chromium is not installed.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const kiln = arg("--kiln", "build/kiln");
const models = arg("--models", "models");
const fashionData = arg("--fashion-data", "/usr/share/datasets/fashion-mnist");
const browserPath = arg("--chromium", "/usr/bin/chromium");
const screenshot = arg("--screenshot", "");

if (!fs.existsSync(browserPath)) {
  console.log(`live page: ${browserPath} is not installed; skipped`);
  process.exit(77);
}

// --- a PNG of the first test image (8-bit grey), written without an image library ------------
function crc32(buf) {
  let c, crc = 0xffffffff;
  for (const b of buf) {
    c = (crc ^ b) & 0xff;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    crc = (crc >>> 8) ^ c;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4), crc = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
  return Buffer.concat([len, Buffer.from(type), data, crc]);
}
function greyPng(pixels, width, height) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;  // bit depth; colour type 0 (grey), the rest 0
  const rows = [];
  for (let y = 0; y < height; y++) rows.push(Buffer.from([0]), pixels.subarray(y * width, (y + 1) * width));
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", header),
    chunk("IDAT", zlib.deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
}
const idx = zlib.gunzipSync(fs.readFileSync(path.join(fashionData, "t10k-images-idx3-ubyte.gz")));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "kiln-live-page-"));
const bootPng = path.join(work, "ankle-boot.png");
fs.writeFileSync(bootPng, greyPng(idx.subarray(16, 16 + 784), 28, 28));
const corrupt = path.join(work, "corrupt.png");
fs.writeFileSync(corrupt, fs.readFileSync(bootPng).subarray(0, 60));

// --- the server ------------------------------------------------------------------------------
const repo = path.join(work, "repo");
for (const [name, file, batch] of [["fashion", "fashion_mnist.onnx", 8], ["deep", "fashion_resnet18.onnx", 4]]) {
  fs.mkdirSync(path.join(repo, name, "1"), { recursive: true });
  fs.copyFileSync(path.join(models, file), path.join(repo, name, "1", "model.onnx"));
  fs.writeFileSync(path.join(repo, name, "config.pbtxt"),
    `max_batch_size: ${batch}\ndynamic_batching { max_queue_delay_microseconds: 2000 }\n` +
    "instance_group [ { count: 1 kind: KIND_CPU } ]\n");
}
const server = spawn(kiln, ["serve", "--model-repository", repo, "--http-host", "127.0.0.1",
  "--http-port", "0", "--grpc-port", "-1", "--metrics-port", "-1"], { stdio: ["ignore", "ignore", "pipe"] });
let log = "";
const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
const port = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`kiln serve did not start in 120 s:\n${log}`)), 120000);
  server.stderr.on("data", (d) => {
    log += d;
    const m = log.match(/HTTP on [^:]+:(\d+)/);
    if (m) { clearTimeout(timer); resolve(Number(m[1])); }
  });
  exited.then((code) => reject(new Error(`kiln serve exited ${code}:\n${log}`)));
});
const base = `http://127.0.0.1:${port}`;

// Load for the page to show: clients sending one-row JSON requests back to back.
let loading = true, sent = 0;
async function client(model) {
  const data = Array.from({ length: 784 }, (_, i) => Math.sin(i + sent));
  const body = JSON.stringify({ inputs: [{ name: "input", shape: [1, 1, 28, 28], datatype: "FP32", data }] });
  while (loading) {
    const r = await fetch(`${base}/v2/models/${model}/infer`, { method: "POST", body });
    if (!r.ok) throw new Error(`infer ${model}: HTTP ${r.status} ${await r.text()}`);
    sent++;
  }
}

let failures = 0;
const check = (cond, what) => {
  if (!cond) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
};

const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
try {
  const clients = [0, 1, 2, 3].map((i) => client(i % 2 ? "deep" : "fashion"));
  const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  await page.goto(base + "/");
  await page.waitForFunction(() => document.getElementById("status").textContent === "ready", null, { timeout: 30000 });
  // Two models READY, and a throughput figure once two scrapes have passed.
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#models tbody tr")].map((r) => [...r.cells].map((c) => c.textContent));
    return rows.length === 2 && rows.every((r) => r[2] === "READY" && Number(r[3].replace(/,/g, "")) > 0);
  }, null, { timeout: 30000 });
  const rows = await page.$$eval("#models tbody tr", (trs) => trs.map((r) => [...r.cells].map((c) => c.textContent)));
  console.log("models table:", JSON.stringify(rows));
  check(rows.map((r) => r[0]).sort().join() === "deep,fashion", "the table lists deep and fashion");
  const bars = await page.$$eval(".hist div[data-batches]", (ds) => ds.map((d) => Number(d.dataset.batches)));
  check(bars.some((n) => n > 0), "the batch-size histogram shows batches");
  check(await page.$eval("#chart", (c) => c.width > 0), "the throughput chart is drawn");

  // An image: the top 5, the best an ankle boot.
  await page.selectOption("#model", "fashion");
  await page.setInputFiles("#file", bootPng);
  await page.waitForFunction(() => document.querySelectorAll("#top5 tr.class").length === 5, null, { timeout: 20000 });
  const top = await page.$$eval("#top5 tr.class", (trs) => trs.map((r) => [...r.cells].map((c) => c.textContent)));
  console.log("top 5:", JSON.stringify(top));
  check(top[0][0] === "Ankle boot", `the best class is Ankle boot, not ${top[0][0]}`);
  const scores = top.map((r) => Number(r[1].replace("%", "")));
  check(scores.every((s, i) => i === 0 || s <= scores[i - 1]), "scores fall");
  if (screenshot) {
    await page.waitForTimeout(4000);  // a few more seconds of load on the chart
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`screenshot: ${screenshot}`);
  }

  // A corrupt image: the server's error, on the page.
  await page.setInputFiles("#file", corrupt);
  await page.waitForFunction(() => document.getElementById("answer").className === "bad", null, { timeout: 20000 });
  const error = await page.$eval("#answer", (e) => e.textContent);
  console.log("corrupt image:", error);
  check(/image/i.test(error), "a corrupt image shows the server's error naming the image");
  check(consoleErrors.length === 0, `no script errors (${consoleErrors.join("; ")})`);
  loading = false;
  await Promise.all(clients);
  console.log(`requests sent meanwhile: ${sent}`);
} finally {
  loading = false;
  await browser.close();
  server.kill("SIGTERM");
}
const code = await exited;
check(code === 0, `kiln serve exits 0 on SIGTERM (got ${code})`);
fs.rmSync(work, { recursive: true, force: true });
console.log(`live page: ${failures} failures`);
process.exit(failures ? 1 : 0);
