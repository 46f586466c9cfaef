#!/bin/sh
# Each mutant of nxquotactl's unattributed bytes must fail
# tests/tools/nvml.sh: the tool is copied, one change made (an exact
# string, which must be found once), built, and nvml.sh run against it
# (NXQUOTACTL).  A mutant that passes, or a change that no longer applies,
# fails this script.  Needs what nvml.sh needs (root, cgroup2, the daemon,
# the fake NVML built by make -C tools check); skips (77) like it.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "nvml-mutants: skipped: needs root"; exit 77; }
tmp=$(mktemp -d /tmp/nxq-nvmlmut.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# NAME@FILE@FROM@TO  (\n and \t in FROM and TO are newline and tab)
cat >"$tmp/list" <<'EOF'
anyone-sees@unattr.c@	if (admin && init_ns)\n		return 0;@	if (admin || init_ns || 1)\n		return 0;
userns-admin@unattr.c@	if (admin && init_ns)\n		return 0;@	if (admin && (init_ns || 1))\n		return 0;
no-retry@nvml.c@		if (err != NVML_ERROR_INSUFFICIENT_SIZE)\n			break;@		break;
one-retry@nvml.c@	for (tries = 0; tries < 64; tries++) {@	for (tries = 0; tries < 2; tries++) {
v1-as-v2@nvml.c@		a.stride = sizeof(struct nvml_proc_v1);@		a.stride = sizeof(struct nvml_proc_v2);
sign-flipped@nxquotactl.h@	return (int64_t)(r->nvml - r->charged);@	return (int64_t)(r->charged - r->nvml);
na-summed@unattr.c@	if (r->nvml == NXQ_NVML_NA) {\n		s->na++;\n		return;\n	}@	if (r->nvml == NXQ_NVML_NA)\n		s->na++;
never-listed@unattr.c@		r->listed = true;@		r->listed = false;
holder-cgroup-from-proc@unattr.c@		if (!r->cgroup) {\n			p = node_path@		if (0) {\n			p = node_path
no-proc-cgroup@unattr.c@		if (!r->cgroup && r->pid) {@		if (0) {
unlisted-holders-dropped@unattr.c@		r = arow_get(&at->rows, key, h->pid);@		for (j = 0; j < at->rows.n; j++)\n			if (((struct arow *)at->rows.v)[j].pid == h->pid)\n				break;\n		if (j == at->rows.n)\n			continue;\n		r = arow_get(&at->rows, key, h->pid);
device-filter-ignored@unattr.c@		if (device && strcmp(device, key))\n			continue;\n		r = arow_get(&at->rows, key, nv->procs[i].pid);@		r = arow_get(&at->rows, key, nv->procs[i].pid);
no-shutdown@nvml.c@	a.shutdown();\n	return 0;@	return 0;
series-without-nvml@prom.c@	for (m = aseries; shown && m < aseries@	for (m = aseries; m < aseries
env-switch-ignored@unattr.c@	if (e && !strcmp(e, "0")) {@	if (e && 0) {
twice-not-summed@unattr.c@			r->nvml += nv->procs[i].bytes;@			r->nvml = nv->procs[i].bytes;
charged-not-summed@unattr.c@		r->charged += h->charge;@		r->charged = h->charge;
holders-not-counted@unattr.c@		r->holders++;@		r->holders = 1;
cgroup-sums-merged@unattr.c@		if (!s || s->device != r->device || strcmp(s->cgroup, cg)) {@		if (!s || s->device != r->device) {
EOF

killed=0
survived=""
while IFS='@' read -r name file from to; do
	rm -rf "$tmp/src"
	mkdir "$tmp/src"
	cp "$top"/tools/*.c "$top"/tools/*.h "$top"/tools/Makefile "$tmp/src/"
	if ! python3 - "$tmp/src/$file" "$from" "$to" <<'PY'
import sys
path, frm, to = sys.argv[1], sys.argv[2], sys.argv[3]
frm = frm.replace("\\n", "\n").replace("\\t", "\t")
to = to.replace("\\n", "\n").replace("\\t", "\t")
s = open(path).read()
if s.count(frm) != 1:
    sys.exit("found %d times" % s.count(frm))
open(path, "w").write(s.replace(frm, to))
PY
	then
		echo "nvml-mutants: $name: the change no longer applies"
		survived="$survived $name(stale)"
		continue
	fi
	# tools/Makefile's own rule, on the copy (its flags, libnl's and json-c's)
	if ! nice -n 10 make -s -C "$tmp/src" TOP="$top" VERSION=mutant nxquotactl \
		>"$tmp/cc.log" 2>&1; then
		cat "$tmp/cc.log"
		echo "nvml-mutants: $name: does not build"
		survived="$survived $name(build)"
		continue
	fi
	if NXQUOTACTL=$tmp/src/nxquotactl "$top/tests/tools/nvml.sh" >"$tmp/out" 2>&1; then
		echo "nvml-mutants: $name: SURVIVED"
		survived="$survived $name"
	else
		echo "nvml-mutants: $name: killed ($(grep -m1 'FAIL' "$tmp/out" | cut -c1-150))"
		killed=$((killed + 1))
	fi
done <"$tmp/list"
if [ -n "$survived" ]; then
	echo "nvml-mutants: FAIL:$survived"
	exit 1
fi
echo "nvml-mutants: ok ($killed mutants killed)"
