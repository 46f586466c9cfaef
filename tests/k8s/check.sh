#!/bin/sh
# tests/k8s/check.sh - make check's k8s stage: nxquota's Kubernetes
# manifests (packaging/kubernetes) and Helm chart (packaging/helm/nxquota)
# checked without a cluster by tests/k8s/check.mjs (its header says what
# each check is), with
#   - kubernetes-models, @kubernetes-models/prometheus-operator and yaml
#     from the npm registry, at the versions of package-lock.json (npm ci
#     into tests/k8s/node_modules, once);
#   - Debian's python3-kubernetes (tests/k8s/strict.py; scripts/deps.sh
#     installs it);
#   - tests/k8s/render.mjs for the chart: Debian 12 has no helm, so helm
#     itself is not run here.
# Output: check.mjs's lines, then "k8s: N passed, M failed".  Without
# Node.js and npm it says "skipped" and why, and exits 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
	echo "k8s: skipped: no node or npm (Node.js 20 or later; Debian's nodejs and npm packages)"
	echo "k8s: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
if ! /usr/bin/python3 -c 'import kubernetes.client' 2> /dev/null; then
	echo "k8s: FAIL: Debian's python3-kubernetes is not installed (scripts/deps.sh installs it)"
	echo "k8s: 0 passed, 1 failed"
	exit 1
fi
# npm ci when node_modules is missing or older than the lock file
stamp=$here/node_modules/.nxq-lock
if [ ! -f "$stamp" ] || ! cmp -s "$here/package-lock.json" "$stamp"; then
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) || {
		echo "k8s: FAIL: npm ci in tests/k8s failed (the npm registry unreachable?)"
		echo "k8s: 0 passed, 1 failed"
		exit 1
	}
	cp "$here/package-lock.json" "$stamp"
fi
exec node "$here/check.mjs"
