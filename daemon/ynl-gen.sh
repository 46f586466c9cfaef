#!/bin/sh
# The generic netlink family from one source: render, with the kernel's
# tools/net/ynl/ynl-gen-c.py, what Documentation/netlink/specs/nxquota.yaml
# says into the two places that hold it, between their markers:
#
#   include/uapi/linux/nxquota.h  "BEGIN YNL-GEN nxquota" .. "END ..."
#       the attribute and command enums (--mode uapi --header), which
#       tests/tools/check-spec.sh also checks;
#   kmod/abi_genl.c  "BEGIN YNL-GEN nxquota kernel" .. "END ..."
#       the request policies and the ops table (--mode kernel --source),
#       the table as struct nxq_abi_nlop (abi.h): the module's genl_ops,
#       nxquotad's validator and dispatch, and nxquotactl's requests are
#       all built from it.
#
#   daemon/ynl-gen.sh --check   exit 1 if either is stale (make -C daemon
#                               check runs it), 77 if it cannot run here
#   daemon/ynl-gen.sh --write   rewrite both
#
# Needs the kernel source (scripts/kernel-source.sh) and python3 with
# PyYAML and jsonschema; says "skipped" and why when they are missing.
set -u
mode=${1:-}
case $mode in --check|--write) ;; *)
	echo "usage: $0 --check|--write" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
src=$("$top/scripts/kernel-source.sh" 2>/dev/null) || {
	echo "ynl-gen: skipped: no kernel source (linux-source-6.12)"; exit 77; }
gen=$src/tools/net/ynl/ynl-gen-c.py
[ -f "$gen" ] || { echo "ynl-gen: skipped: no $gen"; exit 77; }
python3 -c 'import yaml, jsonschema' 2>/dev/null || {
	echo "ynl-gen: skipped: python3 lacks yaml or jsonschema"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the generator wants a kernel-like tree: MAINTAINERS at its root and the
# schemas beside specs/
mkdir -p "$tmp/Documentation/netlink/specs"
touch "$tmp/MAINTAINERS"
cp "$src"/Documentation/netlink/genetlink*.yaml "$tmp/Documentation/netlink/"
spec=$tmp/Documentation/netlink/specs/nxquota.yaml
cp "$top/Documentation/netlink/specs/nxquota.yaml" "$spec"
for m in "uapi --header:uapi.h" "kernel --source:kernel.c"; do
	if ! timeout 60 python3 "$gen" --mode ${m%:*} --spec "$spec" \
		-o "$tmp/${m#*:}" >"$tmp/log" 2>&1; then
		cat "$tmp/log"
		echo "ynl-gen: the spec does not validate or render"
		exit 1
	fi
done

# uapi: the header's body, without its guard and the blank lines around
sed -n '/^#define _UAPI_LINUX_NXQUOTA_H/,/^#endif/p' "$tmp/uapi.h" |
	sed '1d;$d' | sed '/./,$!d' |
	sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$tmp/uapi.want"
# kernel: the policies and the ops table; the handlers are each shell's,
# so the table says only whether there is a do and a dump
# (the ranges without const: 6.1's struct nla_policy points at them
# through a pointer that is not const)
awk '/^\/\* Ops table/ { exit } /^\/\* (Integer value ranges|NXQUOTA_CMD_)/ { on = 1 } on' \
	"$tmp/kernel.c" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' |
	sed 's/^static const struct netlink_range_validation /static struct netlink_range_validation /' >"$tmp/pol"
sed -n '/^\/\* Ops table for nxquota \*\//,/^};/p' "$tmp/kernel.c" |
	sed -e 's/^const struct genl_split_ops nxquota_nl_ops\[[0-9]*\]/const struct nxq_abi_nlop nxq_abi_nlops[NXQ_ABI_NR_NLOPS]/' \
	    -e 's/= nxquota_nl_[a-z_]*_doit,/= true,/' \
	    -e 's/= nxquota_nl_[a-z_]*_dumpit,/= true,/' >"$tmp/ops"
{
	cat "$tmp/pol"
	echo
	cat "$tmp/ops"
} >"$tmp/kernel.want"
grep -q 'nxq_abi_nlops' "$tmp/kernel.want" || {
	echo "ynl-gen: the generator's ops table was not found"; exit 1; }

# The per-cgroup limits: budget-set's u32 request attributes that have a
# "checks: max", in the spec's order, as one X-macro list in the uapi
# header, between its "BEGIN YNL-GEN nxquota limits" markers.  sysfs,
# netlink, nxquotad's state file and control socket, and nxquotactl take
# their names, attributes and bounds from it; the ledger gives each its
# meaning and default.
python3 - "$spec" >"$tmp/limits.want" <<'PY' || { echo "ynl-gen: the limits table did not render"; exit 1; }
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
attrs = {a['name']: a for s in spec['attribute-sets'] if s['name'] == 'budget'
         for a in s['attributes']}
req = [o for o in spec['operations']['list'] if o['name'] == 'budget-set'][0]
rows = []
for n in req['do']['request']['attributes']:
    a = attrs[n]
    if a['type'] != 'u32' or 'max' not in a.get('checks', {}):
        continue
    rows.append((n.replace('-', '_'), n.replace('-', '_').upper(),
                 'NXQUOTA_A_BUDGET_' + n.replace('-', '_').upper(),
                 int(a['checks']['max'])))
print('/*')
print(' * The per-cgroup limits (daemon/ynl-gen.sh, from the spec: budget-set\'s')
print(' * u32 attributes with a max).  NXQ_LIMITS(X) calls X(name, NAME, attr,')
print(' * max) for each: its name in sysfs, the state file and JSON (netlink and')
print(" * nxquotactl's words spell it with '-'), its enum nxq_limit suffix, its")
print(' * netlink attribute, and the largest value root may set.')
print(' */')
print('#define NXQ_LIMITS(X) \\')
for i, (n, N, attr, mx) in enumerate(rows):
    end = ' \\' if i < len(rows) - 1 else ''
    print('\tX(%s, %s, %s, %uU)%s' % (n, N, attr, mx, end))
print('')
print('/* The limits by number: a node keeps one value of each. */')
print('enum nxq_limit {')
for n, N, attr, mx in rows:
    print('\tNXQ_LIM_%s,' % N)
print('\tNXQ_NR_LIMITS,')
print('};')
PY

# section FILE BEGIN END: the lines strictly between the markers
section() {
	sed -n "/$2/,/$3/p" "$1" | sed '1d;$d'
}
# replace FILE BEGIN END NEW: the lines between the markers become NEW
replace() {
	awk -v b="$2" -v e="$3" -v new="$4" '
		$0 ~ b { print; while ((getline l < new) > 0) print l; skip = 1; next }
		$0 ~ e { skip = 0 }
		!skip { print }' "$1" >"$1.ynl-gen" && mv "$1.ynl-gen" "$1"
}

uapi=$top/include/uapi/linux/nxquota.h
abi=$top/kmod/abi_genl.c
ub='BEGIN YNL-GEN nxquota \*\/' ue='END YNL-GEN nxquota \*\/'
kb='BEGIN YNL-GEN nxquota kernel' ke='END YNL-GEN nxquota kernel'
lb='BEGIN YNL-GEN nxquota limits' le='END YNL-GEN nxquota limits'
grep -q "$lb" "$uapi" && grep -q "$le" "$uapi" || {
	echo "ynl-gen: no limits markers in $uapi"; exit 1; }
grep -q "$kb" "$abi" && grep -q "$ke" "$abi" || {
	echo "ynl-gen: no markers in $abi"; exit 1; }
if [ "$mode" = --write ]; then
	replace "$uapi" "$ub" "$ue" "$tmp/uapi.want"
	replace "$abi" "$kb" "$ke" "$tmp/kernel.want"
	replace "$uapi" "$lb" "$le" "$tmp/limits.want"
	echo "ynl-gen: wrote include/uapi/linux/nxquota.h and kmod/abi_genl.c"
	exit 0
fi
bad=0
section "$uapi" "$ub" "$ue" >"$tmp/uapi.have"
diff -u "$tmp/uapi.want" "$tmp/uapi.have" || bad=1
section "$abi" "$kb" "$ke" >"$tmp/kernel.have"
diff -u "$tmp/kernel.want" "$tmp/kernel.have" || bad=1
section "$uapi" "$lb" "$le" >"$tmp/limits.have"
diff -u "$tmp/limits.want" "$tmp/limits.have" || bad=1
if [ $bad = 1 ]; then
	echo "ynl-gen: stale: run daemon/ynl-gen.sh --write"
	exit 1
fi
echo "ynl-gen: ok (uapi enums, the limits' table and the kernel policies match the spec)"
