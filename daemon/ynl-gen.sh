#!/bin/sh
# The generic netlink family from one source: render, with the kernel's
# tools/net/ynl/ynl-gen-c.py, what Documentation/netlink/specs/nxquota.yaml
# says into the three places that hold it, between their markers:
#
#   include/uapi/linux/nxquota.h  "BEGIN YNL-GEN nxquota" .. "END ..."
#       the attribute and command enums and the consts (--mode uapi
#       --header), which tests/tools/check-spec.sh also checks;
#   kmod/abi_genl.c  "BEGIN YNL-GEN nxquota kernel" .. "END ..."
#       the request policies and the ops table (--mode kernel --source),
#       the table as struct nxq_abi_nlop (abi.h): the module's genl_ops,
#       nxquotad's validator and dispatch, and nxquotactl's requests are
#       all built from it;
#   include/uapi/linux/nxquota.h  "BEGIN YNL-GEN nxquota budget" .. "END ..."
#       the budget table, NXQ_BUDGET_FIELDS (rendered here, below, not by
#       the kernel's generator): every attribute of budget-set with its
#       name, unit, parse rule, bounds, default and who may set it, each
#       column derived from the spec as the comment before it says;
#       and the device table, NXQ_DEVICE_FIELDS: every attribute of
#       device-add and device-set but the key and the devt, in the same
#       columns where they fit.
#
#   daemon/ynl-gen.sh --check   exit 1 if any is stale (make -C daemon
#                               check runs it), 77 if it cannot run here
#   daemon/ynl-gen.sh --write   rewrite them
#
# The output is a function of the spec alone (its order, no time, no
# path): --write twice gives the same bytes.
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

# The budget table: every attribute of budget-set's request but the
# device and the cgroup (which say whose budget), in the spec's order, as
# one X-macro list in the uapi header between its "BEGIN YNL-GEN nxquota
# budget" markers; and, of those, the per-cgroup limits.  The kernel's
# schema takes no key of ours in an attribute, so every column is derived
# from what the spec says already:
#   unit, parse  from the type: a u64 is bytes, read as a size
#                (NXQ_PARSE_SIZE_MAX, with "max" for all ones, where the
#                doc says all ones is NXQ_UNLIMITED; else NXQ_PARSE_SIZE);
#                a u8 with "checks: max: 1" a boolean, 0 or 1; a flag a
#                word alone; a u32 a decimal number, milliseconds when its
#                name ends in -ms
#   lo, hi       from "checks" (min, max); a boolean and a flag 0..1; a
#                size without checks: up to NXQ_UNLIMITED where "max" is
#                all ones, else NXQ_BYTES_MAX (the ledger's bound, which it
#                checks itself, with its own errno and refusal)
#   dflt         the const "<name>-default" of the spec's definitions
#                (ynl-gen-c renders it NXQUOTA_<NAME>_DEFAULT); without
#                one, NXQ_UNLIMITED for a size whose "max" is all ones (no
#                max of its own), else 0; a limit must have one
#   who          the operation's flags: admin-perm is NXQ_WHO_ADMIN
#                (CAP_SYS_ADMIN in the initial user namespace), none
#                NXQ_WHO_ANY
#   lim          a u32 with a max is a per-cgroup limit: its enum
#                nxq_limit (NXQ_LIM_<NAME>), else -1
#   kept         1 when budget-get's dump reports it (a node keeps it),
#                0 for a modifier of the request alone (overcommit)
# The ledger gives each its meaning (kmod/counter.c, budget.c); sysfs,
# netlink, nxquotad's control socket and state file, nxquotactl and the
# tests take the rest from here.
python3 - "$spec" >"$tmp/budget.want" <<'PY' || { echo "ynl-gen: the budget table did not render"; exit 1; }
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))


def die(msg):
    sys.stderr.write('ynl-gen: %s\n' % msg)
    sys.exit(1)


def C(n):
    return n.replace('-', '_').upper()


def rule(what, n, a, switches):
    """An attribute's unit, parse rule, bounds, and whether "max" is all
    ones, from its type and checks: a u64 is bytes (its doc naming
    NXQ_UNLIMITED: "max" is all ones), a u32 a number (milliseconds if
    it ends in -ms); with @switches a u8 checked to 1 is a boolean and a
    flag a flag.  Any other type has no rule: refused."""
    t, chk = a['type'], a.get('checks', {})
    unlimited = t == 'u64' and 'NXQ_UNLIMITED' in a.get('doc', '')
    if t == 'u64':
        unit = 'NXQ_UNIT_BYTES'
        parse = 'NXQ_PARSE_SIZE_MAX' if unlimited else 'NXQ_PARSE_SIZE'
        hi = 'NXQ_UNLIMITED' if unlimited else 'NXQ_BYTES_MAX'
        if 'max' in chk:
            hi = '%dULL' % int(chk['max'])
    elif switches and t == 'u8' and chk.get('max') == 1:
        unit, parse, hi = 'NXQ_UNIT_BOOL', 'NXQ_PARSE_BOOL', '1'
    elif switches and t == 'flag':
        unit, parse, hi = 'NXQ_UNIT_FLAG', 'NXQ_PARSE_FLAG', '1'
    elif t == 'u32':
        unit = 'NXQ_UNIT_MS' if n.endswith('-ms') else 'NXQ_UNIT_NUMBER'
        parse, hi = 'NXQ_PARSE_U32', '%dU' % int(chk.get('max', 0xffffffff))
    else:
        die('%s attribute %s: type %s has no rule to parse it' % (what, n, t))
    return unit, parse, '%d' % int(chk.get('min', 0)), hi, unlimited


attrs = {a['name']: a for s in spec['attribute-sets'] if s['name'] == 'budget'
         for a in s['attributes']}
ops = {o['name']: o for o in spec['operations']['list']}
req = ops['budget-set']
kept = set(ops['budget-get']['dump']['reply']['attributes'])
consts = {d['name']: d['value'] for d in spec.get('definitions', [])
          if d['type'] == 'const'}
flags = req.get('flags', [])
if [f for f in flags if f != 'admin-perm']:
    die('budget-set flags %s: only admin-perm is rendered' % flags)
who = 'NXQ_WHO_ADMIN' if 'admin-perm' in flags else 'NXQ_WHO_ANY'
rows, limits, used = [], [], set()
for n in req['do']['request']['attributes']:
    if n in ('device', 'cgroup-path'):
        continue
    a = attrs[n]
    unit, parse, lo, hi, unlimited = rule('budget-set', n, a, True)
    lim = '-1'
    if a['type'] == 'u32' and 'max' in a.get('checks', {}):
        lim = 'NXQ_LIM_' + C(n)
        limits.append(n)
    if n + '-default' in consts:
        used.add(n + '-default')
        dflt = 'NXQUOTA_' + C(n) + '_DEFAULT'
    elif lim != '-1':
        die('limit %s has no default (a const %s-default)' % (n, n))
    else:
        dflt = 'NXQ_UNLIMITED' if unlimited else '0'
    rows.append((n.replace('-', '_'), C(n), 'NXQUOTA_A_BUDGET_' + C(n), unit,
                 parse, lo, hi, dflt, who, lim, '1' if n in kept else '0'))

# The device table: every attribute device-add or device-set takes but
# the key and the devt (which say which device and prove its node), in
# the spec's order: the same columns where they fit, and add/set for
# the operations that take it.
dattrs = {a['name']: a for s in spec['attribute-sets'] if s['name'] == 'device'
          for a in s['attributes']}
dadd, dset = ops['device-add'], ops['device-set']
dreq = []
for o in (dadd, dset):
    for n in o['do']['request']['attributes']:
        if n not in ('key', 'devt') and n not in dreq:
            dreq.append(n)
dreq.sort(key=list(dattrs).index)
for o in (dadd, dset):
    if [f for f in o.get('flags', []) if f != 'admin-perm']:
        die('%s flags: only admin-perm is rendered' % o['name'])
if ('admin-perm' in dadd.get('flags', [])) != \
        ('admin-perm' in dset.get('flags', [])):
    die('device-add and device-set differ in who may call them')
dwho = 'NXQ_WHO_ADMIN' if 'admin-perm' in dset.get('flags', []) else 'NXQ_WHO_ANY'
drows = []
for n in dreq:
    a = dattrs[n]
    unit, parse, lo, hi, unlimited = rule('device', n, a, False)
    if n + '-default' in consts:
        used.add(n + '-default')
        dflt = 'NXQUOTA_' + C(n) + '_DEFAULT'
    else:
        dflt = 'NXQ_UNLIMITED' if unlimited else '0'
    drows.append((n.replace('-', '_'), C(n), 'NXQUOTA_A_DEVICE_' + C(n), unit,
                  parse, lo, hi, dflt, dwho,
                  '1' if n in dadd['do']['request']['attributes'] else '0',
                  '1' if n in dset['do']['request']['attributes'] else '0'))

def table(macro, what, short, rows):
    """NXQ_<macro>_FIELDS(X), one X() of three lines a row, then its enum."""
    print('#define NXQ_%s_FIELDS(X) \\' % macro)
    for i, r in enumerate(rows):
        end = ' \\' if i < len(rows) - 1 else ''
        print('\tX(%s, %s, %s, \\' % r[:3])
        print('\t  %s, %s, %s, %s, \\' % r[3:7])
        print('\t  %s, %s, %s, %s)%s' % (r[7:] + (end,)))
    print('')
    print('/* The %s table by number. */' % what)
    print('enum nxq_%s_field {' % what)
    for r in rows:
        print('\tNXQ_%s_%s,' % (short, r[1]))
    print('\tNXQ_NR_%s_FIELDS,' % macro)
    print('};')

stray = sorted(c for c in consts if c.endswith('-default') and c not in used)
if stray:
    die('consts %s name no attribute of budget-set or of a device' %
        ', '.join(stray))
print('''/*
 * The budget table (daemon/ynl-gen.sh, from the spec: every attribute of
 * budget-set's request but the device and the cgroup).  Not to be edited:
 * change the spec and run daemon/ynl-gen.sh --write.  The columns are
 * derived from what the spec says (ynl-gen.sh tells how);
 * NXQ_BUDGET_FIELDS(X) calls, for each,
 *   X(name, NAME, attr, unit, parse, lo, hi, dflt, who, lim, kept)
 * name   its name in sysfs, nxquotad's state file and JSON (netlink and
 *        nxquotactl's words spell it with '-'); NAME its enum suffix
 * attr   its netlink attribute
 * unit   NXQ_UNIT_*: a u64 is bytes, a u8 checked to 1 a boolean, a flag
 *        a flag, a u32 milliseconds when its name ends in _ms, else a
 *        number
 * parse  NXQ_PARSE_*: how its text is read
 * lo, hi the values root may set (the spec's checks); a size without
 *        checks goes up to NXQ_UNLIMITED where "max" is all ones, else
 *        NXQ_BYTES_MAX, which the ledger checks itself (its errno, its
 *        refusal's reason)
 * dflt   what a cgroup that sets none gets: the spec's const
 *        NAME-default; without one, NXQ_UNLIMITED where "max" is all
 *        ones (no max of its own), else 0.  Whom it binds and what is
 *        inherited is the ledger's (kmod/counter.c)
 * who    NXQ_WHO_*, from budget-set's flags
 * lim    its enum nxq_limit when it is a per-cgroup limit (a u32 with a
 *        max), else -1
 * kept   1 when budget-get reports it (a node keeps it), 0 for a
 *        modifier of the request alone
 */''')
table('BUDGET', 'budget', 'BF', rows)
print('')
print('/*')
print(' * The per-cgroup limits, of those: NXQ_LIMITS(X) calls X(name, NAME,')
print(' * attr, max) for each, as NXQ_BUDGET_FIELDS has them (max is its hi).')
print(' */')
print('#define NXQ_LIMITS(X) \\')
for i, n in enumerate(limits):
    r = [x for x in rows if x[1] == C(n)][0]
    end = ' \\' if i < len(limits) - 1 else ''
    print('\tX(%s, %s, %s, %s)%s' % (r[0], r[1], r[2], r[6], end))
print('')
print('/* The limits by number: a node keeps one value of each. */')
print('enum nxq_limit {')
for n in limits:
    print('\tNXQ_LIM_%s,' % C(n))
print('\tNXQ_NR_LIMITS,')
print('};')
print('')
print('/* Their defaults, by number: the ledger\'s (kmod/counter.c) initializer. */')
print('#define NXQ_LIMIT_DEFAULTS { \\')
for n in limits:
    print('\t[NXQ_LIM_%s] = NXQUOTA_%s_DEFAULT, \\' % (C(n), C(n)))
print('}')
print('')
print('''/*
 * The device table (daemon/ynl-gen.sh, from the spec: every attribute of
 * device-add's and device-set's requests but the key and the devt, which
 * say which device and prove its node).  Not to be edited, as the budget
 * table.  NXQ_DEVICE_FIELDS(X) calls, for each,
 *   X(name, NAME, attr, unit, parse, lo, hi, dflt, who, add, set)
 * name .. who  as the budget table's, derived the same way: its name in
 *        sysfs (the device's file), nxquotad's state file and JSON; a
 *        size without checks goes up to NXQ_UNLIMITED where "max" is all
 *        ones, else NXQ_BYTES_MAX (capacity: no door nor the ledger
 *        checks it yet, as before the table); dflt what a device
 *        registered without it gets (the const NAME-default, else as the
 *        budget table's)
 * add    1 when device-add takes it (the device starts with it)
 * set    1 when device-set changes it
 */''')
table('DEVICE', 'device', 'DF', drows)
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
lb='BEGIN YNL-GEN nxquota budget' le='END YNL-GEN nxquota budget'
grep -q "$lb" "$uapi" && grep -q "$le" "$uapi" || {
	echo "ynl-gen: no budget markers in $uapi"; exit 1; }
grep -q "$kb" "$abi" && grep -q "$ke" "$abi" || {
	echo "ynl-gen: no markers in $abi"; exit 1; }
if [ "$mode" = --write ]; then
	replace "$uapi" "$ub" "$ue" "$tmp/uapi.want"
	replace "$abi" "$kb" "$ke" "$tmp/kernel.want"
	replace "$uapi" "$lb" "$le" "$tmp/budget.want"
	echo "ynl-gen: wrote include/uapi/linux/nxquota.h and kmod/abi_genl.c"
	exit 0
fi
bad=0
section "$uapi" "$ub" "$ue" >"$tmp/uapi.have"
diff -u "$tmp/uapi.want" "$tmp/uapi.have" || bad=1
section "$abi" "$kb" "$ke" >"$tmp/kernel.have"
diff -u "$tmp/kernel.want" "$tmp/kernel.have" || bad=1
section "$uapi" "$lb" "$le" >"$tmp/budget.have"
diff -u "$tmp/budget.want" "$tmp/budget.have" || bad=1
if [ $bad = 1 ]; then
	echo "ynl-gen: stale: run daemon/ynl-gen.sh --write"
	exit 1
fi
echo "ynl-gen: ok (uapi enums, the budget and device tables and the kernel policies match the spec)"
