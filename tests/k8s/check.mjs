// tests/k8s/check.mjs - nxquota's Kubernetes manifests
// (packaging/kubernetes) and Helm chart (packaging/helm/nxquota), checked
// without a cluster (tests/k8s/check.sh runs it; make check's k8s stage).
//
// Each set of objects -- the manifests as written, and the chart rendered
// (tests/k8s/render.mjs, not helm: Debian 12 has none) with its defaults
// and with other values -- must pass:
//   schema   kubernetes-models (npm): Kubernetes' OpenAPI schema of each
//            kind (types, formats, enums, required fields), and the
//            Prometheus Operator's for the ServiceMonitor;
//   strict   tests/k8s/strict.py (Debian's python3-kubernetes): no field
//            its kind does not have, as kubectl --validate=strict;
//   node     what nxquotad's node image needs, which no schema says: no
//            RBAC object, no ServiceAccount token, no init container
//            (nothing may wait for nxquotad before it starts: the old
//            example's deadlock), hostPID and privileged, each hostPath
//            the entrypoint uses mounted at the host's own path, the
//            entrypoint's commands, the image tag and versions = VERSION;
//   wiring   selectors that select: the DaemonSet's its pods, the
//            Service's the pods and a named container port, the
//            ServiceMonitor's the Service and its port, in its namespace.
// The chart with its defaults must render the manifests' DaemonSet and
// Service exactly (as parsed), and with serviceMonitor.enabled their
// ServiceMonitor too.  Then each mutant (a set with one thing broken)
// must be refused by some check: the checks are shown able to fail.
//
// Output: a line per case, then "k8s: N passed, M failed".
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { isDeepStrictEqual } from "node:util";
import YAML from "yaml";
import { renderChart } from "./render.mjs";

import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const top = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const VERSION = fs.readFileSync(path.join(top, "VERSION"), "utf8").trim();
const CHART = path.join(top, "packaging/helm/nxquota");
const ENTRY = fs.readFileSync(path.join(top, "packaging/image/nxquota-node"), "utf8");
const models = {
	"v1/Namespace": Namespace,
	"v1/Service": Service,
	"apps/v1/DaemonSet": DaemonSet,
	"rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
	"monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};
const RBAC = new Set(["ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);

let npass = 0, nfail = 0;
function report(name, problems, why) {
	if (problems.length) {
		nfail++;
		console.log(`k8s: ${name.padEnd(44)} FAIL ${problems[0]}`);
		for (const p of problems.slice(1, 6))
			console.log(`    ${p}`);
	} else {
		npass++;
		console.log(`k8s: ${name.padEnd(44)} PASS${why ? ` (${why})` : ""}`);
	}
}

const load = (f) => YAML.parseAllDocuments(fs.readFileSync(path.join(top, f), "utf8"))
	.map((d) => {
		if (d.errors.length)
			throw new Error(`${f}: ${d.errors[0].message}`);
		return d.toJSON();
	}).filter((o) => o);
const parseRendered = (text) => YAML.parseAllDocuments(text).map((d) => {
	if (d.errors.length)
		throw new Error(`rendered chart: ${d.errors[0].message}`);
	return d.toJSON();
}).filter((o) => o);
const kindOf = (objs, kind) => objs.filter((o) => o.kind === kind);
const clone = (x) => JSON.parse(JSON.stringify(x));

function schema(objs) {
	const out = [];
	for (const o of objs) {
		const M = models[`${o.apiVersion}/${o.kind}`];
		if (!M) {
			out.push(`schema: no model for ${o.apiVersion} ${o.kind}`);
			continue;
		}
		try {
			new M(o).validate();
		} catch (e) {
			out.push(`schema: ${o.kind}/${o.metadata?.name}: ${String(e.message).split("\n")[0]}`);
		}
	}
	return out;
}

const matches = (sel, labels) => sel && Object.keys(sel).length > 0 &&
	Object.entries(sel).every(([k, v]) => labels?.[k] === v);

function node(objs) {
	const out = [];
	for (const o of objs)
		if (RBAC.has(o.kind))
			out.push(`node: a ${o.kind} (${o.metadata?.name}): nxquotad needs no RBAC`);
	const dss = kindOf(objs, "DaemonSet");
	if (dss.length !== 1)
		return [...out, `node: ${dss.length} DaemonSets, expected one`];
	const ds = dss[0];
	const ps = ds.spec?.template?.spec ?? {};
	if (ps.automountServiceAccountToken !== false)
		out.push("node: the pod mounts a ServiceAccount token (automountServiceAccountToken: false)");
	if (ps.serviceAccountName || ps.serviceAccount)
		out.push("node: the pod names a ServiceAccount");
	if (ps.initContainers?.length)
		out.push("node: an init container: nothing may run before nxquotad that waits for it (the entrypoint does install, nxquotad, then setup)");
	if (ps.hostPID !== true)
		out.push("node: hostPID is not true: nxquotad must see (and may signal) its clients");
	const cs = ps.containers ?? [];
	if (cs.length !== 1)
		return [...out, `node: ${cs.length} containers, expected nxquotad alone`];
	const c = cs[0];
	if (c.securityContext?.privileged !== true)
		out.push("node: the container is not privileged (the host's cgroup namespace and devices)");
	const image = String(c.image ?? "");
	if (!image.endsWith(`/nxquota:${VERSION}`))
		out.push(`node: image ${image} is not nxquota:${VERSION} (VERSION)`);
	if (ds.metadata?.labels?.["app.kubernetes.io/version"] !== VERSION)
		out.push(`node: the version label is not ${VERSION}`);
	// the entrypoint's commands the pod uses exist in packaging/image/nxquota-node
	const cmds = new Set([...ENTRY.matchAll(/^([a-z]+)\) do_/gm)].map((m) => m[1]));
	const args = c.args ?? [];
	if (c.command)
		out.push("node: the container overrides the image's entrypoint (nxquota-node)");
	if (!cmds.has(args[0]))
		out.push(`node: args[0] '${args[0]}' is no command of nxquota-node (${[...cmds].join(", ")})`);
	const probe = c.readinessProbe?.exec?.command ?? [];
	if (probe[0] !== "nxquota-node" || !cmds.has(probe[1]))
		out.push(`node: the readiness probe '${probe.join(" ")}' is no nxquota-node command`);
	// the host's paths, each mounted at its own path
	const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
	const hostDir = env.NXQUOTA_HOST_DIR ?? "/opt/nxquota";
	const vols = Object.fromEntries((ps.volumes ?? []).map((v) => [v.name, v]));
	const mounts = {};
	for (const m of c.volumeMounts ?? []) {
		const v = vols[m.name];
		if (!v) {
			out.push(`node: volumeMount ${m.name} names no volume`);
			continue;
		}
		mounts[m.mountPath] = v.hostPath?.path;
	}
	for (const p of ["/run/nxquota", "/var/lib/nxquota", "/sys/fs/cgroup", hostDir]) {
		if (mounts[p] !== p)
			out.push(`node: ${p} is not the host's ${p} (hostPath ${mounts[p] ?? "none"}): the entrypoint and the CDI spec use the host's paths`);
	}
	if (!mounts["/etc/cdi"])
		out.push("node: /etc/cdi is not a hostPath: the CDI spec would stay in the pod");
	if (env.NXQUOTA_METRICS !== undefined) {
		const port = Number(String(env.NXQUOTA_METRICS).split(":").pop());
		const cp = (c.ports ?? []).find((p) => p.name === "metrics");
		if (!cp || cp.containerPort !== port)
			out.push(`node: NXQUOTA_METRICS listens on ${port}, the metrics containerPort is ${cp?.containerPort}`);
	}
	return out;
}

function wiring(objs) {
	const out = [];
	const ds = kindOf(objs, "DaemonSet")[0];
	const pod = ds?.spec?.template;
	if (ds && !matches(ds.spec.selector?.matchLabels, pod?.metadata?.labels))
		out.push("wiring: the DaemonSet's selector does not select its pods");
	const ports = pod?.spec?.containers?.[0]?.ports ?? [];
	for (const s of kindOf(objs, "Service")) {
		if (s.metadata.namespace !== ds?.metadata?.namespace)
			out.push(`wiring: Service ${s.metadata.name} is not in the DaemonSet's namespace`);
		if (!matches(s.spec.selector, pod?.metadata?.labels))
			out.push(`wiring: Service ${s.metadata.name} selects no nxquotad pod`);
		for (const p of s.spec.ports ?? []) {
			const t = p.targetPort ?? p.port;
			if (!ports.some((cp) => cp.name === t || cp.containerPort === t))
				out.push(`wiring: Service port ${p.name} targets ${t}, which no container port is`);
		}
	}
	for (const m of kindOf(objs, "ServiceMonitor")) {
		const svc = kindOf(objs, "Service").find((s) =>
			matches(m.spec.selector?.matchLabels, s.metadata.labels) &&
			(m.spec.namespaceSelector?.matchNames ?? [m.metadata.namespace]).includes(s.metadata.namespace));
		if (!svc) {
			out.push(`wiring: ServiceMonitor ${m.metadata.name} selects no Service`);
			continue;
		}
		for (const e of m.spec.endpoints ?? [])
			if (!(svc.spec.ports ?? []).some((p) => p.name === e.port))
				out.push(`wiring: ServiceMonitor endpoint port ${e.port} is no port of Service ${svc.metadata.name}`);
	}
	return out;
}

// strict.py, once for every set (one python start)
function strictAll(sets) {
	const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "nxq-k8s-")), "sets.json");
	fs.writeFileSync(f, JSON.stringify(Object.fromEntries(Object.entries(sets).map(([k, v]) =>
		[k, v.filter((o) => o.kind !== "ServiceMonitor")]))));
	try {
		return JSON.parse(execFileSync("/usr/bin/python3", [path.join(top, "tests/k8s/strict.py"), f],
			{ encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
	} finally {
		fs.rmSync(path.dirname(f), { recursive: true });
	}
}

const checks = (objs) => [...schema(objs), ...node(objs), ...wiring(objs)];

// ---- the sets -------------------------------------------------------------

const manifests = [...load("packaging/kubernetes/nxquota.yaml"), ...load("packaging/kubernetes/servicemonitor.yaml")];
const chartYaml = YAML.parse(fs.readFileSync(path.join(CHART, "Chart.yaml"), "utf8"));
const render = (set) => parseRendered(renderChart(CHART, { namespace: "nxquota", set }));
const sets = {};
const problems = {};
function addSet(name, fn) {
	try {
		sets[name] = fn();
	} catch (e) {
		problems[name] = [`cannot load or render: ${e.message}`];
		sets[name] = [];
	}
}
addSet("manifests", () => manifests);
addSet("chart (defaults)", () => render({}));
addSet("chart (serviceMonitor.enabled)", () => render({ serviceMonitor: { enabled: true, labels: { release: "prom" } } }));
addSet("chart (metrics.enabled false)", () => render({ metrics: { enabled: false } }));
addSet("chart (hostDir, runtimeClass, extraArgs)", () => render({
	hostDir: "/var/lib/nxquota-host", runtimeClassName: "nvidia", extraArgs: ["-K", "256"],
}));

// mutants: one thing broken each; every one must be refused
const base = sets["manifests"];
const dsOf = (objs) => objs.find((o) => o.kind === "DaemonSet");
const podOf = (objs) => dsOf(objs).spec.template.spec;
const mutants = {
	"a field in the wrong place (hostPID in the container)": (o) => { podOf(o).containers[0].hostPID = true; },
	"a port as a string": (o) => { podOf(o).containers[0].ports[0].containerPort = "9400"; },
	"an init container that waits for nxquotad": (o) => {
		podOf(o).initContainers = [{ name: "sync", image: podOf(o).containers[0].image,
			command: ["sh", "-c", "until nxquotactl devices; do sleep 1; done"] }];
	},
	"a ClusterRole": (o) => { o.push({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "nxquotad" }, rules: [] }); },
	"the ServiceAccount token mounted": (o) => { delete podOf(o).automountServiceAccountToken; },
	"no hostPID": (o) => { delete podOf(o).hostPID; },
	"the host dir mounted elsewhere": (o) => {
		podOf(o).containers[0].volumeMounts.find((m) => m.name === "host-dir").mountPath = "/host/opt/nxquota";
	},
	"a volumeMount of no volume": (o) => { podOf(o).containers[0].volumeMounts[0].name = "runn"; },
	"an old image tag": (o) => { podOf(o).containers[0].image = "localhost/nxquota:0.0.9"; },
	"a readiness probe of no command": (o) => { podOf(o).containers[0].readinessProbe.exec.command = ["nxquota-node", "healthy"]; },
	"a Service that selects nothing": (o) => { o.find((x) => x.kind === "Service").spec.selector["app.kubernetes.io/component"] = "nxquota"; },
	"a Service port to no container port": (o) => { o.find((x) => x.kind === "Service").spec.ports[0].targetPort = "metric"; },
	"a ServiceMonitor on no Service port": (o) => { o.find((x) => x.kind === "ServiceMonitor").spec.endpoints[0].port = "http"; },
	"a ServiceMonitor in the wrong namespace": (o) => { o.find((x) => x.kind === "ServiceMonitor").spec.namespaceSelector.matchNames = ["default"]; },
	"a bad updateStrategy type": (o) => { dsOf(o).spec.updateStrategy.type = "Rolling"; },
	"metrics on another port than the container's": (o) => { podOf(o).containers[0].env[0].value = "0.0.0.0:9401"; },
};
for (const [name, mutate] of Object.entries(mutants)) {
	const o = clone(base);
	mutate(o);
	sets[`mutant: ${name}`] = o;
}

const strict = strictAll(sets);
for (const [name, objs] of Object.entries(sets)) {
	const p = [...(problems[name] ?? []), ...checks(objs), ...(strict[name] ?? ["strict: no result"]).map((s) => `strict: ${s}`)];
	if (name.startsWith("mutant: "))
		report(name, p.length ? [] : ["no check refused it"], p.length ? `refused: ${p[0]}` : "");
	else
		report(name, p);
}

// the chart renders the manifests
const strip = (objs) => objs.filter((o) => o.kind !== "Namespace");
const same = (a, b) => isDeepStrictEqual(a, b);
report("chart (defaults) = manifests",
	same(sets["chart (defaults)"], strip(load("packaging/kubernetes/nxquota.yaml"))) ? [] :
		["the chart with its defaults does not render nxquota.yaml's DaemonSet and Service"]);
const sm = clone(manifests.find((o) => o.kind === "ServiceMonitor"));
sm.metadata.labels.release = "prom";
report("chart (serviceMonitor) = manifests",
	same(sets["chart (serviceMonitor.enabled)"], [...strip(load("packaging/kubernetes/nxquota.yaml")), sm]) ? [] :
		["the chart with serviceMonitor.enabled does not render the manifests and servicemonitor.yaml"]);
{
	const off = sets["chart (metrics.enabled false)"];
	const c = dsOf(off)?.spec.template.spec.containers[0];
	report("chart (metrics off): no endpoint, no Service",
		off.some((o) => o.kind === "Service") || c?.ports || (c?.env ?? []).some((e) => e.name === "NXQUOTA_METRICS") ?
			["metrics.enabled false still renders a Service, a port or NXQUOTA_METRICS"] : []);
}
report("versions: Chart.yaml = VERSION",
	chartYaml.version === VERSION && chartYaml.appVersion === VERSION ? [] :
		[`Chart.yaml has version ${chartYaml.version}, appVersion ${chartYaml.appVersion}; VERSION is ${VERSION}`]);
// a template the renderer cannot read exactly is refused, not guessed
{
	const d = fs.mkdtempSync(path.join(os.tmpdir(), "nxq-chart-"));
	fs.cpSync(CHART, d, { recursive: true });
	fs.writeFileSync(path.join(d, "templates/extra.yaml"), "{{ range .Values.tolerations }}x{{ end }}\n");
	let refused = false;
	try { renderChart(d, {}); } catch { refused = true; }
	fs.writeFileSync(path.join(d, "templates/extra.yaml"), "a: {{ .Values.nosuch }}\n");
	let refused2 = false;
	try { renderChart(d, {}); } catch { refused2 = true; }
	fs.rmSync(d, { recursive: true });
	report("renderer: refuses what it does not render", refused && refused2 ? [] :
		[`range ${refused ? "refused" : "accepted"}, a missing key ${refused2 ? "refused" : "accepted"}`]);
}

console.log(`k8s: ${npass} passed, ${nfail} failed`);
process.exit(nfail ? 1 : 0);
