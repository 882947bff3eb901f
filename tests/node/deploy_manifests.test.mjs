// Checks every manifest under deploy/ without a cluster:
//   - Kubernetes' own kinds against the API's schemas (kubernetes-models), KEDA's ScaledObject
//     against KEDA's (@kubernetes-models/keda), KServe's ServingRuntime and InferenceService
//     against the fields of KServe's CRDs that they use (kserve-subset.schema.json, where an
//     unknown field fails), and the runtime's containers as Pod containers;
//   - that the manifests agree with kiln and with each other: every `kiln serve` flag exists
//     (`kiln serve --help`), probes reach the v2 health endpoints on the HTTP port, ports match
//     the flags, the Service selects the Deployment's pods and names its ports, the grace
//     period covers preStop and kiln's 30 s drain, and the autoscaling queries read metrics
//     kiln exports (`kiln serve` itself is started on an empty repository and its /metrics read).
//
//   node tests/node/deploy_manifests.test.mjs --kiln build/kiln --deploy deploy
//
// Kubernetes' schemas do not refuse unknown fields (the API server does, under strict field
// validation); a misspelt field of a core kind shows here only where it breaks an agreement.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import YAML from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Pod } from "kubernetes-models/v1/Pod";
import { Service } from "kubernetes-models/v1/Service";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const kiln = arg("--kiln", path.join(here, "../../build/kiln"));
const deployDir = arg("--deploy", path.join(here, "../../deploy"));
const DRAIN_S = 30;  // kiln serve's gRPC drain_timeout (src/server/grpc_frontend.h)

let failures = 0;
const fail = (where, what) => {
  failures++;
  console.error(`FAIL ${where}: ${what}`);
};
const check = (cond, where, what) => cond || fail(where, what);

// --- read every document ---------------------------------------------------------------
function manifests(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...manifests(p));
    else if (/\.ya?ml$/.test(entry.name)) {
      const docs = YAML.parseAllDocuments(fs.readFileSync(p, "utf8"));
      docs.forEach((d, i) => {
        const where = `${path.relative(deployDir, p)}#${i}`;
        if (d.errors.length) fail(where, d.errors.map((e) => e.message).join("; "));
        else if (d.contents) out.push({ where, doc: d.toJS() });
      });
    }
  }
  return out;
}

// --- schemas -----------------------------------------------------------------------------
const ajv = new Ajv({ allErrors: true, strict: false });
const kserve = ajv.compile(JSON.parse(fs.readFileSync(path.join(here, "kserve-subset.schema.json"))));
const modelClasses = {
  "apps/v1 Deployment": Deployment,
  "v1 Service": Service,
  "v1 PersistentVolumeClaim": PersistentVolumeClaim,
  "keda.sh/v1alpha1 ScaledObject": ScaledObject,
};

function schemaErrors(doc) {
  const key = `${doc.apiVersion} ${doc.kind}`;
  if (modelClasses[key]) {
    try {
      new modelClasses[key](doc).validate();
      return [];
    } catch (e) {
      return [e.message];
    }
  }
  if (doc.apiVersion?.startsWith("serving.kserve.io/")) {
    const errs = [];
    if (!kserve(doc)) errs.push(ajv.errorsText(kserve.errors, { separator: "; " }));
    for (const c of doc.spec?.containers ?? []) {  // a runtime's containers are core containers
      try {
        new Pod({ metadata: { name: "runtime" }, spec: { containers: [c] } }).validate();
      } catch (e) {
        errs.push(`container ${c.name}: ${e.message}`);
      }
    }
    return errs;
  }
  return [`no schema for ${key}: add one before adding the kind`];
}

// The validators must refuse what they should, or the checks above prove nothing.
function selfTest() {
  const bad = [
    { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" },
      spec: { replicas: "one", selector: {}, template: { spec: { containers: [{ name: "c" }] } } } },
    { apiVersion: "keda.sh/v1alpha1", kind: "ScaledObject", metadata: { name: "x" }, spec: {} },
    { apiVersion: "serving.kserve.io/v1beta1", kind: "InferenceService", metadata: { name: "x" },
      spec: { predictor: { model: { modelFormat: { name: "onnx" }, storageURI: "pvc://a" } } } },
    { apiVersion: "serving.kserve.io/v1alpha1", kind: "ServingRuntime", metadata: { name: "x" },
      spec: { containers: [{ name: "c", ports: [{ containerPort: "http" }] }] } },
  ];
  for (const doc of bad)
    check(schemaErrors(doc).length > 0, "self-test", `a broken ${doc.kind} passed its schema`);
}

// --- agreements with kiln ------------------------------------------------------------------
const serveHelp = execFileSync(kiln, ["serve", "--help"], { encoding: "utf8" });
const serveFlags = new Set(serveHelp.match(/--[a-z][a-z0-9-]*/g));

function flagValue(argv, flag) {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i].startsWith(flag + "=")) return argv[i].slice(flag.length + 1);
  }
  return undefined;
}

function checkServeContainer(where, c, { requireProbes }) {
  const argv = [...(c.command ?? []), ...(c.args ?? [])];
  if (!argv.includes("serve")) return;
  for (const a of argv.filter((a) => a.startsWith("--")))
    check(serveFlags.has(a.split("=")[0]), where, `kiln serve has no flag ${a.split("=")[0]}`);
  check(flagValue(argv, "--model-repository"), where, "kiln serve needs --model-repository");
  const http = Number(flagValue(argv, "--http-port") ?? 8000);
  const grpc = Number(flagValue(argv, "--grpc-port") ?? 8001);
  const metrics = Number(flagValue(argv, "--metrics-port") ?? 8002);
  const byName = Object.fromEntries((c.ports ?? []).filter((p) => p.name).map((p) => [p.name, p.containerPort]));
  const declared = new Set((c.ports ?? []).map((p) => p.containerPort));
  if (byName.http !== undefined) check(byName.http === http, where, `port http is ${byName.http}, --http-port ${http}`);
  if (byName.grpc !== undefined) check(byName.grpc === grpc, where, `port grpc is ${byName.grpc}, --grpc-port ${grpc}`);
  if (byName.metrics !== undefined)
    check(byName.metrics === metrics, where, `port metrics is ${byName.metrics}, --metrics-port ${metrics}`);
  for (const p of declared)
    check([http, grpc, metrics].includes(p), where, `container port ${p} is none of kiln's ports`);
  const probePort = (probe) => {
    const port = probe.httpGet.port;
    return typeof port === "string" ? byName[port] : port;
  };
  const probes = { livenessProbe: "/v2/health/live", readinessProbe: "/v2/health/ready", startupProbe: "/v2/health/ready" };
  for (const [name, want] of Object.entries(probes)) {
    const probe = c[name];
    if (!probe) {
      if (requireProbes && name !== "startupProbe") fail(where, `no ${name}`);
      continue;
    }
    check(probe.httpGet?.path === want, where, `${name} asks ${probe.httpGet?.path}, not ${want}`);
    check(probePort(probe) === http, where, `${name} is not on the HTTP port ${http}`);
  }
}

function preStopSeconds(c) {
  const cmd = c.lifecycle?.preStop?.exec?.command ?? [];
  return cmd[0] === "sleep" ? Number(cmd[1]) : 0;
}

function checkDeployment(where, d, services) {
  const pod = d.spec.template;
  const labels = pod.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(d.spec.selector.matchLabels ?? {}))
    check(labels[k] === v, where, `the selector's ${k}=${v} does not match the pod's labels`);
  for (const c of pod.spec.containers) {
    checkServeContainer(where, c, { requireProbes: true });
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
    check(grace >= preStopSeconds(c) + DRAIN_S, where,
      `terminationGracePeriodSeconds ${grace} < preStop ${preStopSeconds(c)} s + kiln's ${DRAIN_S} s drain`);
    const gpus = c.resources?.limits?.["nvidia.com/gpu"];
    check(gpus !== undefined, where, `container ${c.name} asks for no GPU (nvidia.com/gpu)`);
  }
  const ports = new Set(pod.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name)));
  for (const s of services) {
    const selects = Object.entries(s.doc.spec.selector ?? {}).every(([k, v]) => labels[k] === v);
    if (!selects) continue;
    for (const p of s.doc.spec.ports)
      check(typeof p.targetPort !== "string" || ports.has(p.targetPort), s.where,
        `targetPort ${p.targetPort} names no port of ${d.metadata.name}`);
  }
}

function checkQuery(where, query, exported) {
  const names = query.match(/\b(nv|kiln)_[a-z0-9_]+/g) ?? [];
  check(names.length > 0, where, "the query reads no kiln metric");
  for (const n of names) check(exported.has(n), where, `kiln does not export ${n}`);
}

// The metric names `kiln serve` exports, read from a live server on an empty repository.
async function exportedMetrics() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "kiln-deploy-"));
  const server = spawn(kiln, ["serve", "--model-repository", repo, "--http-host", "127.0.0.1",
    "--http-port", "0", "--grpc-port", "-1", "--metrics-port", "-1"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kiln serve did not start: ${log}`)), 30000);
    server.stderr.on("data", (d) => {
      log += d;
      const m = log.match(/HTTP on [^:]+:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    server.on("exit", (code) => reject(new Error(`kiln serve exited ${code}: ${log}`)));
  });
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return new Set(text.match(/^# TYPE ([a-z0-9_]+)/gm).map((l) => l.split(" ")[2]));
  } finally {
    server.kill("SIGTERM");
  }
}

// --- run ---------------------------------------------------------------------------------
selfTest();
const all = manifests(deployDir);
check(all.length > 0, deployDir, "no manifests");
for (const { where, doc } of all)
  for (const e of schemaErrors(doc)) fail(where, e);

const byKind = (kind) => all.filter((m) => m.doc.kind === kind);
const services = byKind("Service");
for (const d of byKind("Deployment")) checkDeployment(d.where, d.doc, services);
for (const r of byKind("ServingRuntime"))
  for (const c of r.doc.spec.containers) checkServeContainer(r.where, c, { requireProbes: false });

const exported = await exportedMetrics();
const deployments = new Set(byKind("Deployment").map((d) => d.doc.metadata.name));
for (const s of byKind("ScaledObject")) {
  check(deployments.has(s.doc.spec.scaleTargetRef.name), s.where,
    `scaleTargetRef ${s.doc.spec.scaleTargetRef.name} is no Deployment here`);
  for (const t of s.doc.spec.triggers.filter((t) => t.type === "prometheus"))
    checkQuery(s.where, t.metadata.query, exported);
}
const runtimes = new Set(byKind("ServingRuntime").map((r) => r.doc.metadata.name));
for (const isvc of byKind("InferenceService")) {
  const p = isvc.doc.spec.predictor;
  check(runtimes.has(p.model.runtime), isvc.where, `runtime ${p.model.runtime} is no ServingRuntime here`);
  for (const m of p.autoScaling?.metrics ?? [])
    if (m.external) checkQuery(isvc.where, m.external.metric.query, exported);
}

console.log(`deploy manifests: ${all.length} documents, ${failures} failures`);
process.exit(failures ? 1 : 0);
