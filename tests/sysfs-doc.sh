#!/bin/sh
# tests/sysfs-doc.sh - the sysfs ABI document lists exactly the files the
# module creates.
#
#   tests/sysfs-doc.sh [--doc FILE] [CONSOLE_LOG...]
#
# Reads what the sysfs_files scenario printed in the VM (between
# SYSFS-FILES-BEGIN and SYSFS-FILES-END in build/vm/KVER/console.log, from
# the last tests/vm/run.sh, every kernel that has it; run it after the vm
# stage) and the "What:" lines of Documentation/ABI/testing/
# sysfs-kernel-nxquota (or FILE), paths with <KEY> and <ID>.  Fails when a
# file the module creates is not documented, when a documented file is not
# there, or when a documented directory ("What: .../") is not there; on any
# kernel.  Directories the document does not name (devices/, nodes/) are
# not required to be listed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
doc=
logs=""
while [ $# -gt 0 ]; do
	case "$1" in
	--doc) doc=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
	*) logs="$logs $(cd "$(dirname "$1")" && pwd)/$(basename "$1")" ;;
	esac
	shift
done
cd "$top" || exit 1
[ -n "$doc" ] || doc=Documentation/ABI/testing/sysfs-kernel-nxquota
[ -n "$logs" ] || logs=$(ls build/vm/*/console.log 2>/dev/null)
[ -f "$doc" ] || { echo "sysfs-doc: no $doc"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -n 's/^What:[[:space:]]*//p' "$doc" | sed 's/[[:space:]]*$//' > "$tmp/what"
grep -v '/$' "$tmp/what" | LC_ALL=C sort -u > "$tmp/doc-files"
grep '/$' "$tmp/what" | LC_ALL=C sort -u > "$tmp/doc-dirs"

rc=0 n=0
for log in $logs; do
	kver=$(basename "$(dirname "$log")")
	sed -n '/SYSFS-FILES-BEGIN/,/SYSFS-FILES-END/p' "$log" > "$tmp/block"
	if ! grep -q 'SYSFS-FILES-END' "$tmp/block"; then
		echo "sysfs-doc: $kver: no sysfs_files listing in $log (run tests/vm/run.sh first)"
		continue
	fi
	n=$((n + 1))
	grep -a -o 'SYSFS-FILE .*' "$tmp/block" | sed 's/^SYSFS-FILE *//' |
		LC_ALL=C sort -u > "$tmp/vm-files"
	grep -a -o 'SYSFS-DIR .*' "$tmp/block" | sed 's/^SYSFS-DIR *//' |
		LC_ALL=C sort -u > "$tmp/vm-dirs"
	undoc=$(LC_ALL=C comm -23 "$tmp/vm-files" "$tmp/doc-files")
	absent=$(LC_ALL=C comm -13 "$tmp/vm-files" "$tmp/doc-files")
	nodir=$(LC_ALL=C comm -13 "$tmp/vm-dirs" "$tmp/doc-dirs")
	if [ -n "$undoc$absent$nodir" ]; then
		rc=1
		echo "sysfs-doc: $kver: $doc and the module differ:"
		[ -z "$undoc" ] || echo "$undoc" | sed 's/^/  created, not documented: /'
		[ -z "$absent" ] || echo "$absent" | sed 's/^/  documented, not created: /'
		[ -z "$nodir" ] || echo "$nodir" | sed 's/^/  documented directory, not created: /'
	else
		echo "sysfs-doc: $kver: $(wc -l < "$tmp/vm-files") files, all documented, nothing else documented"
	fi
done
[ "$n" -gt 0 ] || { echo "sysfs-doc: no console log with a sysfs_files listing"; exit 1; }
exit $rc
