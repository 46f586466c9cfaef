# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
# Sourced by the GPU scripts (gpu.sh, gpu-s4.sh, gpu-budget.sh) after they
# tried to build nxquotad ($D) and nxquotactl ($C), logging to
# $OUT/build.log: where one did not build here (a GPU host without
# json-c's or libnl's headers), take the one scripts/demo-gpu.sh
# --prebuild left in $top/build/demo-gpu-bin, and say which and why.
#   prebuilt SCRIPT
prebuilt() {
	for b in D:nxquotad C:nxquotactl; do
		eval "f=\$${b%%:*}"
		if [ ! -x "$f" ] && [ -x "$top/build/demo-gpu-bin/${b#*:}" ]; then
			echo "$1: ${b#*:} not built here ($(grep -m1 -i 'not built\|error' "$OUT/build.log")); using build/demo-gpu-bin/${b#*:}"
			eval "${b%%:*}=\$top/build/demo-gpu-bin/${b#*:}"
		fi
	done
}
