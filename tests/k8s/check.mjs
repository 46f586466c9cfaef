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
//            and where the pod runs nxquota-nri (the NRI plugin) beside
//            nxquotad: the same image, "nxquota-node nri", privileged,
//            flags the plugin has (read from its main.go), its NRI
//            socket's directory and containerd's task bundles mounted at
//            the host's own paths (the bundles HostToContainer), the
//            CDI spec and nxquotad's control socket the very host files
//            nxquotad's container writes, /run/nxquota writable (the
//            hook's records), and -exempt-pod-uid from the downward API's
//            metadata.uid (its own pod's nxquotad is left alone);
//   wiring   selectors that select: the DaemonSet's its pods, the
//            Service's the pods and a named container port, the
//            ServiceMonitor's the Service and its port, in its namespace.
// The chart with its defaults must render the manifests' DaemonSet and
// Service exactly (as parsed), and with serviceMonitor.enabled their
// ServiceMonitor too.  Then each mutant (a set with one thing broken)
// must be refused, by a problem that names what was broken (each mutant
// says what it expects): the checks are shown able to fail, each for its
// own reason.
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
// nxquota-nri's flags and defaults, as its main.go declares them
const NRI_FLAGS = Object.fromEntries([...fs.readFileSync(path.join(top,
	"integrations/nri/nxquota-nri/main.go"), "utf8").matchAll(
	/flag\.StringVar\(&[\w.]+, "([\w-]+)", "([^"]*)"/g)].map((m) => [m[1], m[2]]));
const CDI_DEFAULT = "/etc/cdi/nxquota.json";	// nxquota-node's NXQUOTA_CDI_OUTPUT
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
	const c = cs.find((x) => x.name === "nxquotad");
	if (!c)
		return [...out, "node: no container named nxquotad"];
	for (const x of cs)
		if (x.name !== "nxquotad" && x.name !== "nxquota-nri")
			out.push(`node: a container ${x.name}: the pod runs nxquotad and nxquota-nri only`);
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
	const p = cs.find((x) => x.name === "nxquota-nri");
	if (p)
		out.push(...nri(p, c, vols, cmds));
	return out;
}

// The host file a container sees at file: its deepest mount over file,
// which must be a hostPath volume; null where none is.
function hostFile(c, vols, file) {
	let best = null;
	for (const m of c.volumeMounts ?? []) {
		const mp = String(m.mountPath ?? "").replace(/\/+$/, "");
		if (file !== mp && !file.startsWith(mp + "/"))
			continue;
		if (!best || mp.length > best.mp.length)
			best = { mp, m };
	}
	const hp = best && vols[best.m.name]?.hostPath?.path;
	if (!hp)
		return null;
	return { host: hp.replace(/\/+$/, "") + file.slice(best.mp.length),
		 readOnly: best.m.readOnly === true, propagation: best.m.mountPropagation };
}

// Go's flag syntax: -f v, --f v, -f=v; the first non-flag ends them.
function goFlags(args) {
	const out = {}, bad = [];
	for (let i = 0; i < args.length; i++) {
		const m = /^--?([^=]+)(?:=(.*))?$/s.exec(String(args[i]));
		if (!m)
			break;
		if (!(m[1] in NRI_FLAGS)) {
			bad.push(m[1]);
			continue;
		}
		out[m[1]] = m[2] !== undefined ? m[2] : args[++i];
	}
	return { flags: out, bad };
}

// nxquota-nri beside nxquotad (c) in the pod.
function nri(p, c, vols, cmds) {
	const out = [];
	if (p.image !== c.image)
		out.push(`node: nxquota-nri runs image ${p.image}, nxquotad ${c.image}: the plugin's hook and nxquotad must be one version`);
	if (p.securityContext?.privileged !== true)
		out.push("node: nxquota-nri is not privileged (the host's cgroup namespace: the hook reads containers' cgroups as the authority resolves them)");
	if (p.command)
		out.push("node: nxquota-nri overrides the image's entrypoint (nxquota-node nri)");
	const args = (p.args ?? []).map(String);
	if (args[0] !== "nri" || !cmds.has("nri"))
		out.push(`node: nxquota-nri's args[0] '${args[0]}' is not nxquota-node's nri command`);
	const { flags, bad } = goFlags(args.slice(1));
	for (const b of bad)
		out.push(`node: nxquota-nri has no flag -${b} (integrations/nri/nxquota-nri/main.go)`);
	const penv = Object.fromEntries((p.env ?? []).map((e) => [e.name, e]));
	const cenv = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
	const val = (k) => flags[k] ?? NRI_FLAGS[k];
	// containerd's NRI socket, at the host's own path
	const sock = val("socket");
	const sh = hostFile(p, vols, sock);
	if (!sh || sh.host !== sock)
		out.push(`node: nxquota-nri's NRI socket ${sock} is not the host's (the host's ${sock.replace(/\/[^/]*$/, "")} mounted at the same path; here: ${sh ? sh.host : "no hostPath"})`);
	// the task bundles (config.json, init.pid), at the host's own path
	const tasks = `${val("containerd-state").replace(/\/+$/, "")}/io.containerd.runtime.v2.task`;
	const th = hostFile(p, vols, tasks);
	if (!th || th.host !== tasks)
		out.push(`node: nxquota-nri does not see containerd's bundles ${tasks} at the host's path (here: ${th ? th.host : "no hostPath"})`);
	else if (th.propagation !== "HostToContainer")
		out.push(`node: containerd's bundles are mounted with propagation ${th.propagation ?? "None"}: HostToContainer, or the containers' rootfs mounts are pinned in the plugin's namespace`);
	// the CDI spec nxquotad's container writes
	const spec = flags["cdi-spec"] ?? penv.NXQUOTA_CDI_OUTPUT?.value ?? CDI_DEFAULT;
	const want = hostFile(c, vols, cenv.NXQUOTA_CDI_OUTPUT ?? CDI_DEFAULT);
	const have = hostFile(p, vols, spec);
	if (!have || !want || have.host !== want.host)
		out.push(`node: nxquota-nri reads the CDI spec ${have ? have.host : "from no hostPath"}, nxquotad's container writes ${want ? want.host : "none"}`);
	// nxquotad's control socket; the hook's records (written)
	const ctl = "/run/nxquota/control.sock";
	const pc = hostFile(p, vols, ctl), cc = hostFile(c, vols, ctl);
	if (!pc || !cc || pc.host !== cc.host)
		out.push(`node: nxquota-nri's ${ctl} is ${pc ? pc.host : "no hostPath"}, nxquotad's ${cc ? cc.host : "none"}: the hook would not reach nxquotad`);
	const rec = hostFile(p, vols, "/run/nxquota/hooks");
	if (!rec || rec.host !== "/run/nxquota/hooks" || rec.readOnly)
		out.push("node: nxquota-nri cannot write the hook's records in the host's /run/nxquota/hooks (read-only, or not the host's)");
	// its own pod left alone: the UID from the downward API
	const ex = /^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(flags["exempt-pod-uid"] ?? "");
	if (!ex || penv[ex[1]]?.valueFrom?.fieldRef?.fieldPath !== "metadata.uid")
		out.push("node: nxquota-nri's -exempt-pod-uid is not $(VAR) of an env var from fieldRef metadata.uid: its pod's nxquotad would be injected and would wait on itself to start");
	return out;
}

function wiring(objs) {
	const out = [];
	const ds = kindOf(objs, "DaemonSet")[0];
	const pod = ds?.spec?.template;
	if (ds && !matches(ds.spec.selector?.matchLabels, pod?.metadata?.labels))
		out.push("wiring: the DaemonSet's selector does not select its pods");
	const ports = pod?.spec?.containers?.find((c) => c.name === "nxquotad")?.ports ?? [];
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
addSet("chart (nri.enabled false)", () => render({ nri: { enabled: false } }));
addSet("chart (nri: k3s's paths)", () => render({
	nri: { socketDir: "/run/k3s/nri", containerdState: "/run/k3s/containerd" },
}));

// mutants: one thing broken each; every one must be refused
const base = sets["manifests"];
const dsOf = (objs) => objs.find((o) => o.kind === "DaemonSet");
const podOf = (objs) => dsOf(objs).spec.template.spec;
const nriOf = (objs) => podOf(objs).containers.find((c) => c.name === "nxquota-nri");
const mountOf = (c, name) => c.volumeMounts.find((m) => m.name === name);
const argAfter = (c, flag) => c.args.indexOf(flag) + 1;
// each: [what a refusal must name (a pattern), the fault]
const mutants = {
	"a field in the wrong place (hostPID in the container)": [/strict: .*hostPID/, (o) => { podOf(o).containers[0].hostPID = true; }],
	"a port as a string": [/containerPort must be integer/, (o) => { podOf(o).containers[0].ports[0].containerPort = "9400"; }],
	"an init container that waits for nxquotad": [/an init container/, (o) => {
		podOf(o).initContainers = [{ name: "sync", image: podOf(o).containers[0].image,
			command: ["sh", "-c", "until nxquotactl devices; do sleep 1; done"] }];
	}],
	"a ClusterRole": [/ClusterRole .*RBAC/, (o) => { o.push({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "nxquotad" }, rules: [] }); }],
	"the ServiceAccount token mounted": [/ServiceAccount token/, (o) => { delete podOf(o).automountServiceAccountToken; }],
	"no hostPID": [/hostPID is not true/, (o) => { delete podOf(o).hostPID; }],
	"the host dir mounted elsewhere": [/\/opt\/nxquota is not the host's/, (o) => {
		podOf(o).containers[0].volumeMounts.find((m) => m.name === "host-dir").mountPath = "/host/opt/nxquota";
	}],
	"a volumeMount of no volume": [/names no volume/, (o) => { podOf(o).containers[0].volumeMounts[0].name = "runn"; }],
	"an old image tag": [/is not nxquota:/, (o) => { podOf(o).containers[0].image = "localhost/nxquota:0.0.9"; }],
	"a readiness probe of no command": [/readiness probe/, (o) => { podOf(o).containers[0].readinessProbe.exec.command = ["nxquota-node", "healthy"]; }],
	"a Service that selects nothing": [/selects no nxquotad pod/, (o) => { o.find((x) => x.kind === "Service").spec.selector["app.kubernetes.io/component"] = "nxquota"; }],
	"a Service port to no container port": [/which no container port is/, (o) => { o.find((x) => x.kind === "Service").spec.ports[0].targetPort = "metric"; }],
	"a ServiceMonitor on no Service port": [/endpoint port http/, (o) => { o.find((x) => x.kind === "ServiceMonitor").spec.endpoints[0].port = "http"; }],
	"a ServiceMonitor in the wrong namespace": [/ServiceMonitor .* selects no Service/, (o) => { o.find((x) => x.kind === "ServiceMonitor").spec.namespaceSelector.matchNames = ["default"]; }],
	"a bad updateStrategy type": [/updateStrategy\/type/, (o) => { dsOf(o).spec.updateStrategy.type = "Rolling"; }],
	"metrics on another port than the container's": [/NXQUOTA_METRICS listens on 9401/, (o) => { podOf(o).containers[0].env[0].value = "0.0.0.0:9401"; }],
	// nxquota-nri
	"nri: a third container": [/a container sidecar/, (o) => { podOf(o).containers.push({ ...clone(nriOf(o)), name: "sidecar" }); }],
	"nri: another image than nxquotad's": [/nxquota-nri runs image/, (o) => { nriOf(o).image = "localhost/nxquota:0.0.9"; }],
	"nri: not privileged": [/nxquota-nri is not privileged/, (o) => { delete nriOf(o).securityContext; }],
	"nri: the entrypoint overridden": [/overrides the image's entrypoint \(nxquota-node nri\)/, (o) => { nriOf(o).command = ["/usr/lib/nxquota/host/bin/nxquota-nri"]; }],
	"nri: not the nri command": [/args\[0\] 'run'/, (o) => { nriOf(o).args[0] = "run"; }],
	"nri: a flag the plugin lacks": [/no flag -socket-path/, (o) => { nriOf(o).args[1] = "-socket-path"; }],
	"nri: the socket where nothing is mounted": [/NRI socket \/run\/nri\/nri.sock is not the host's/, (o) => { const p = nriOf(o); p.args[argAfter(p, "-socket")] = "/run/nri/nri.sock"; }],
	"nri: the socket's directory not mounted": [/NRI socket .* no hostPath/, (o) => { const p = nriOf(o); p.volumeMounts = p.volumeMounts.filter((m) => m.name !== "nri"); }],
	"nri: the socket's directory from another host path": [/NRI socket .* here: \/run\/nri-plugins/, (o) => { podOf(o).volumes.find((v) => v.name === "nri").hostPath.path = "/run/nri-plugins"; }],
	"nri: no bundles": [/containerd's bundles .* no hostPath/, (o) => { const p = nriOf(o); p.volumeMounts = p.volumeMounts.filter((m) => m.name !== "containerd-tasks"); }],
	"nri: the bundles of another containerd state": [/containerd's bundles \/run\/k3s/, (o) => { const p = nriOf(o); p.args[argAfter(p, "-containerd-state")] = "/run/k3s/containerd"; }],
	"nri: the bundles without HostToContainer": [/propagation None/, (o) => { delete mountOf(nriOf(o), "containerd-tasks").mountPropagation; }],
	"nri: the CDI spec of another directory": [/reads the CDI spec \/var\/run\/cdi/, (o) => {
		podOf(o).volumes.push({ name: "cdi-run", hostPath: { path: "/var/run/cdi", type: "DirectoryOrCreate" } });
		mountOf(nriOf(o), "cdi").name = "cdi-run";
	}],
	"nri: a CDI spec nxquotad does not write": [/reads the CDI spec \/etc\/cdi\/other.json/, (o) => { nriOf(o).args.push("-cdi-spec", "/etc/cdi/other.json"); }],
	"nri: no /run/nxquota": [/control.sock is no hostPath/, (o) => { const p = nriOf(o); p.volumeMounts = p.volumeMounts.filter((m) => m.name !== "run"); }],
	"nri: /run/nxquota read-only": [/cannot write the hook's records/, (o) => { mountOf(nriOf(o), "run").readOnly = true; }],
	"nri: its own pod not exempted": [/exempt-pod-uid/, (o) => { const p = nriOf(o); p.args.splice(p.args.indexOf("-exempt-pod-uid"), 2); }],
	"nri: the pod UID not from the downward API": [/exempt-pod-uid/, (o) => { nriOf(o).env = [{ name: "POD_UID", value: "0" }]; }],
};
for (const [name, [, mutate]] of Object.entries(mutants)) {
	const o = clone(base);
	mutate(o);
	sets[`mutant: ${name}`] = o;
}

const strict = strictAll(sets);
for (const [name, objs] of Object.entries(sets)) {
	const p = [...(problems[name] ?? []), ...checks(objs), ...(strict[name] ?? ["strict: no result"]).map((s) => `strict: ${s}`)];
	if (name.startsWith("mutant: ")) {
		const expect = mutants[name.slice(8)][0];
		const hit = p.find((x) => expect.test(x));
		report(name, hit ? [] : [p.length ? `refused, but not for what was broken (${expect}): ${p[0]}` :
			"no check refused it"], hit ? `refused: ${hit}` : "");
	} else
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
{
	const p = podOf(sets["manifests"]).containers.find((c) => c.name === "nxquota-nri");
	report("manifests: nxquota-nri beside nxquotad", p ? [] :
		["the DaemonSet runs no nxquota-nri: nothing starts the NRI plugin the image installs"]);
	const off = sets["chart (nri.enabled false)"];
	const ps = dsOf(off)?.spec.template.spec;
	report("chart (nri off): no plugin, no NRI volume",
		!ps || ps.containers.length !== 1 || ps.volumes.some((v) => v.name === "nri" || v.name === "containerd-tasks") ?
			["nri.enabled false still renders the plugin's container or its volumes"] : []);
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
