#!/bin/sh
# Check that the generic-netlink section of include/uapi/linux/nxquota.h
# (between "BEGIN YNL-GEN nxquota" and "END YNL-GEN nxquota") is what the
# kernel's YNL generator renders from Documentation/netlink/specs/
# nxquota.yaml, after validating the spec against the genetlink schema.
# Needs the kernel source (scripts/kernel-source.sh) and python3 with
# PyYAML and jsonschema; says "skipped" and why when they are missing.
# Exit: 0 ok, 1 mismatch, 77 skipped.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$("$top/scripts/kernel-source.sh" 2>/dev/null) || {
	echo "check-spec: skipped: no kernel source (linux-source-6.12)"; exit 77; }
gen=$src/tools/net/ynl/ynl-gen-c.py
[ -f "$gen" ] || { echo "check-spec: skipped: no $gen"; exit 77; }
python3 -c 'import yaml, jsonschema' 2>/dev/null || {
	echo "check-spec: skipped: python3 lacks yaml or jsonschema"; exit 77; }

# The generator wants a kernel-like tree: MAINTAINERS at its root and the
# schemas beside specs/.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/Documentation/netlink/specs"
touch "$tmp/MAINTAINERS"
cp "$src"/Documentation/netlink/genetlink*.yaml "$tmp/Documentation/netlink/"
cp "$top/Documentation/netlink/specs/nxquota.yaml" "$tmp/Documentation/netlink/specs/"
if ! timeout 60 python3 "$gen" --mode uapi --header \
	--spec "$tmp/Documentation/netlink/specs/nxquota.yaml" \
	-o "$tmp/gen.h" > "$tmp/log" 2>&1; then
	cat "$tmp/log"
	echo "check-spec: the spec does not validate or render"
	exit 1
fi
sed -n '/^#define _UAPI_LINUX_NXQUOTA_H/,/^#endif/p' "$tmp/gen.h" |
	sed '1d;$d' | sed '/./,$!d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$tmp/want"
sed -n '/BEGIN YNL-GEN nxquota \*\//,/END YNL-GEN nxquota \*\//p' \
	"$top/include/uapi/linux/nxquota.h" | sed '1d;$d' > "$tmp/have"
if ! diff -u "$tmp/want" "$tmp/have"; then
	echo "check-spec: include/uapi/linux/nxquota.h differs from the spec"
	exit 1
fi
echo "check-spec: ok (spec valid, uapi section matches)"
