// tests/k8s/render.mjs - render packaging/helm/nxquota as `helm template`
// would, where helm is not installed (Debian 12 packages no helm).
//
//   node tests/k8s/render.mjs CHARTDIR [--set-json JSON] [--namespace NS]
//        [--release NAME]
//
// This is NOT helm: it implements the part of Go's text/template and of
// helm's functions that the chart uses, and refuses everything else with
// an error naming it, so that a template written for helm that this
// renderer would read differently fails here instead of passing:
//   - actions {{ }}, with "{{-" and "-}}" trimming the white space beside
//     them, and comments {{/* */}};
//   - if / else if / else / end, define / end, include;
//   - pipelines "a | f b", terms .Values.x.y, .Release.Name,
//     .Release.Namespace, .Chart.<field of Chart.yaml>, ".", string and
//     number literals;
//   - functions: include, toYaml, nindent, indent, quote, default, and,
//     or, not, eq, ne;
//   - a missing key is an error (helm prints nothing there).
// Values: values.yaml, then --set-json's object merged over it.
// Output: the rendered templates, each "---\n# Source: CHART/templates/F"
// and its text, as helm template prints them; _*.tpl files define only.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

class RenderError extends Error {}
const fail = (where, msg) => { throw new RenderError(`${where}: ${msg}`); };

// ---- lexing: text and actions --------------------------------------------

function lex(src, file) {
	const out = [];
	let i = 0;
	while (i < src.length) {
		const open = src.indexOf("{{", i);
		if (open < 0) {
			out.push({ text: src.slice(i) });
			break;
		}
		let text = src.slice(i, open);
		let j = open + 2;
		if (src.startsWith("- ", j) || src.startsWith("-\n", j)) {
			text = text.replace(/\s+$/, "");
			j += 1;
		}
		out.push({ text });
		const close = src.indexOf("}}", j);
		if (close < 0)
			fail(file, `unclosed action at offset ${open}`);
		let body = src.slice(j, close);
		let k = close + 2;
		if (/\s-$/.test(body)) {
			body = body.slice(0, -1);
			const m = /^\s*/.exec(src.slice(k));
			k += m[0].length;
		}
		const line = src.slice(0, open).split("\n").length;
		out.push({ action: body.trim(), where: `${file}:${line}` });
		i = k;
	}
	return out;
}

// ---- parsing: a tree of text, actions, if and define ---------------------

function parse(tokens, file) {
	const root = { kids: [] };
	const stack = [root];
	const defines = {};
	for (const t of tokens) {
		const top = stack[stack.length - 1];
		if (t.text !== undefined) {
			if (t.text)
				top.kids.push({ text: t.text });
			continue;
		}
		const a = t.action;
		if (a.startsWith("/*")) {
			if (!a.endsWith("*/"))
				fail(t.where, "a comment must end with */ inside its action");
			continue;
		}
		let m;
		if ((m = /^if\s+(.+)$/s.exec(a))) {
			const node = { if: [{ cond: m[1], where: t.where, kids: [] }], else: null };
			top.kids.push(node);
			stack.push(node.if[0]);
			node.if[0].owner = node;
		} else if ((m = /^else\s+if\s+(.+)$/s.exec(a)) || a === "else") {
			const owner = top.owner;
			if (!owner || owner.else)
				fail(t.where, "else without if");
			stack.pop();
			const branch = { cond: m ? m[1] : null, where: t.where, kids: [], owner };
			if (m)
				owner.if.push(branch);
			else
				owner.else = branch;
			stack.push(branch);
		} else if ((m = /^define\s+"([^"]+)"$/.exec(a))) {
			if (stack.length !== 1)
				fail(t.where, "define inside another block");
			const node = { kids: [], define: m[1] };
			defines[m[1]] = node;
			stack.push(node);
		} else if (a === "end") {
			if (stack.length === 1)
				fail(t.where, "end without a block");
			stack.pop();
		} else if (/^(range|with|block|template|break|continue)\b/.test(a)) {
			fail(t.where, `'${a.split(/\s/)[0]}' is not supported by this renderer (tests/k8s/render.mjs): keep the chart to what it renders`);
		} else {
			top.kids.push({ pipe: a, where: t.where });
		}
	}
	if (stack.length !== 1)
		fail(file, "a block is not closed with end");
	return { root, defines };
}

// ---- evaluation -----------------------------------------------------------

function truthy(v) {
	if (v === null || v === undefined || v === false || v === 0 || v === "")
		return false;
	if (Array.isArray(v))
		return v.length > 0;
	if (typeof v === "object")
		return Object.keys(v).length > 0;
	return true;
}

function words(s, where) {
	const out = [];
	const re = /\s*("(?:[^"\\]|\\.)*"|[^\s"]+)/gy;
	let m, at = 0;
	while ((m = re.exec(s)) && m[0].length) {
		out.push(m[1]);
		at = re.lastIndex;
	}
	if (s.slice(at).trim())
		fail(where, `cannot read '${s}'`);
	return out;
}

function splitPipe(s) {
	const parts = [];
	let cur = "", q = false;
	for (let i = 0; i < s.length; i++) {
		const c = s[i];
		if (c === '"' && s[i - 1] !== "\\")
			q = !q;
		if (c === "|" && !q) {
			parts.push(cur.trim());
			cur = "";
		} else {
			cur += c;
		}
	}
	parts.push(cur.trim());
	return parts;
}

function indent(n, s) {
	const pad = " ".repeat(n);
	return String(s).split("\n").map((l) => pad + l).join("\n");
}

function show(v, where) {
	if (v === null || v === undefined)
		fail(where, "prints a missing value");
	if (typeof v === "object")
		fail(where, "prints a map or a list: use toYaml");
	return String(v);
}

function makeRenderer(defines) {
	const funcs = {
		include: (where, name, ctx) => {
			if (!defines[name])
				fail(where, `include of an undefined template "${name}"`);
			return render(defines[name].kids, ctx);
		},
		toYaml: (where, v) => YAML.stringify(v, { lineWidth: 0 }).replace(/\n$/, ""),
		nindent: (where, n, s) => "\n" + indent(n, s),
		indent: (where, n, s) => indent(n, s),
		quote: (where, v) => JSON.stringify(show(v, where)),
		default: (where, d, v) => (truthy(v) ? v : d),
		and: (where, ...a) => { for (const x of a) if (!truthy(x)) return x; return a[a.length - 1]; },
		or: (where, ...a) => { for (const x of a) if (truthy(x)) return x; return a[a.length - 1]; },
		not: (where, v) => !truthy(v),
		eq: (where, a, b) => a === b,
		ne: (where, a, b) => a !== b,
	};
	const arity = { include: 2, toYaml: 1, nindent: 2, indent: 2, quote: 1, default: 2, not: 1, eq: 2, ne: 2 };

	function term(w, ctx, where) {
		if (w.startsWith('"'))
			return JSON.parse(w);
		if (/^-?[0-9]+$/.test(w))
			return Number(w);
		if (w === "true" || w === "false")
			return w === "true";
		if (w === ".")
			return ctx;
		if (w.startsWith(".")) {
			let v = ctx;
			const seen = [];
			for (const k of w.slice(1).split(".")) {
				seen.push(k);
				if (v === null || typeof v !== "object" || !(k in v))
					fail(where, `missing key .${seen.join(".")}`);
				v = v[k];
			}
			return v;
		}
		fail(where, `unknown term '${w}' (not supported by this renderer)`);
	}

	function pipeline(s, ctx, where) {
		let val, first = true;
		for (const cmd of splitPipe(s)) {
			const ws = words(cmd, where);
			if (!ws.length)
				fail(where, "an empty command in a pipeline");
			const [head, ...rest] = ws;
			if (funcs[head]) {
				const args = rest.map((w) => term(w, ctx, where));
				if (!first)
					args.push(val);
				if (arity[head] !== undefined && args.length !== arity[head])
					fail(where, `${head} takes ${arity[head]} arguments, has ${args.length}`);
				val = funcs[head](where, ...args);
			} else if (/^[A-Za-z]/.test(head)) {
				fail(where, `function '${head}' is not supported by this renderer`);
			} else {
				if (rest.length || !first)
					fail(where, `'${cmd}' is not a function`);
				val = term(head, ctx, where);
			}
			first = false;
		}
		return val;
	}

	function render(kids, ctx) {
		let out = "";
		for (const k of kids) {
			if (k.text !== undefined) {
				out += k.text;
			} else if (k.pipe !== undefined) {
				out += show(pipeline(k.pipe, ctx, k.where), k.where);
			} else if (k.if) {
				const b = k.if.find((br) => truthy(pipeline(br.cond, ctx, br.where)));
				if (b)
					out += render(b.kids, ctx);
				else if (k.else)
					out += render(k.else.kids, ctx);
			}
		}
		return out;
	}
	return render;
}

function merge(a, b) {
	if (b === null || typeof b !== "object" || Array.isArray(b) ||
	    a === null || typeof a !== "object" || Array.isArray(a))
		return b;
	const out = { ...a };
	for (const [k, v] of Object.entries(b))
		out[k] = k in a ? merge(a[k], v) : v;
	return out;
}

export function renderChart(dir, { set = {}, namespace = "default", release = "nxquota" } = {}) {
	const chart = YAML.parse(fs.readFileSync(path.join(dir, "Chart.yaml"), "utf8"));
	const values = merge(YAML.parse(fs.readFileSync(path.join(dir, "values.yaml"), "utf8")) || {}, set);
	const tdir = path.join(dir, "templates");
	const files = fs.readdirSync(tdir).filter((f) => /\.(yaml|tpl)$/.test(f)).sort();
	const parsed = {};
	const defines = {};
	for (const f of files) {
		const rel = `${chart.name}/templates/${f}`;
		parsed[f] = parse(lex(fs.readFileSync(path.join(tdir, f), "utf8"), rel), rel);
		Object.assign(defines, parsed[f].defines);
	}
	const render = makeRenderer(defines);
	const ctx = {
		Values: values,
		Release: { Name: release, Namespace: namespace, Service: "Helm" },
		Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
	};
	let out = "";
	for (const f of files) {
		if (f.startsWith("_"))
			continue;
		const text = render(parsed[f].root.kids, ctx);
		if (text.trim())
			out += `---\n# Source: ${chart.name}/templates/${f}\n${text.replace(/^\n+/, "")}\n`;
	}
	return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const args = process.argv.slice(2);
	const opts = {};
	let dir;
	try {
		for (let i = 0; i < args.length; i++) {
			if (args[i] === "--set-json")
				opts.set = JSON.parse(args[++i]);
			else if (args[i] === "--namespace")
				opts.namespace = args[++i];
			else if (args[i] === "--release")
				opts.release = args[++i];
			else if (!dir)
				dir = args[i];
			else
				throw new RenderError(`unexpected argument ${args[i]}`);
		}
		if (!dir)
			throw new RenderError("usage: render.mjs CHARTDIR [--set-json JSON] [--namespace NS] [--release NAME]");
		process.stdout.write(renderChart(dir, opts));
	} catch (e) {
		console.error(`render: ${e.message}`);
		process.exit(1);
	}
}
