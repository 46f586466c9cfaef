#!/bin/sh
# integrations/nri/test/run.sh - nxquota-nri against a real containerd
# with NRI enabled, in the container test VM (tests/vm/containers/run.sh,
# the kernels scripts/deps.sh lists):
#
#   integrations/nri/test/run.sh [run.sh's options] [SCENARIO...]
#
# builds nxquota-nri and nxq-cri (integrations/nri/build.sh: Debian
# trixie's Go and containerd, fetched into build/nri/), the pause image
# (nxq-pause, static) and an application image (busybox, static) as OCI
# archives (mkimage.py; the application image also has the loader, libc,
# the fake CUDA driver and nxq-cuda-app, for the shim), and boots the VM
# with them added (NXQ_VM_ADD):
# containerd, containerd-shim-runc-v2, ctr, nxquota-nri, nxq-cri in
# /usr/bin, the images and containerd.toml in /nri.  Default scenario:
# nri_basic; nri_inject is named.  make check runs both on 6.12 with both
# authorities (tests/run-all.sh, stage nri), make check-matrix nri_matrix
# too, make check-nri-long nri_cycles and nri_latency.
#
#   NXQ_NRI_CYCLES      nri_cycles' pods (default 1000)
#   NXQ_NRI_LAT_BLOCKS, NXQ_NRI_LAT_N   nri_latency's blocks a side and
#                       cycles a block (default 10 and 10)
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
here=$top/integrations/nri/test
b=$top/build/nri
# --build-only: build what the VM gets, and stop (make check-nri-long
# builds once, then boots two VMs at once with NXQ_NRI_BUILT=1)
if [ "${NXQ_NRI_BUILT:-}" = 1 ]; then
	[ -s "$b/app.tar" ] && [ -x "$b/bin/nxquota-nri" ] ||
		{ echo "nri: NXQ_NRI_BUILT=1, but nothing is built in $b" >&2; exit 2; }
else
"$top/integrations/nri/build.sh"

img=$b/img
rm -rf "$img"
mkdir -p "$img/pause/bin" "$img/app/bin"
gcc -static -O2 -Wall -Werror -o "$img/pause/nxq-pause" "$here/nxq-pause.c"
cp /bin/busybox "$img/app/bin/busybox"
for a in sh sleep cat echo ls env grep rm touch stat; do ln -s busybox "$img/app/bin/$a"; done
mkdir -p "$img/app/proc" "$img/app/sys" "$img/app/dev" "$img/app/tmp" "$img/app/etc"
# The application image also runs an unmodified CUDA program
# (tests/vm/containers/nxq-cuda-app.c, linked against the fake driver,
# tests/fakecuda), dynamically linked as the shim needs: the loader, libc
# and the libraries the shim links, as the VM's container rootfs has them.
nice make -s -C "$top/tests/fakecuda" libcuda.so.1
gcc -O2 -Wall -Wextra -Werror -o "$img/app/bin/nxq-cuda-app" \
	"$top/tests/vm/containers/nxq-cuda-app.c" "$top/tests/fakecuda/libcuda.so.1"
install -D -m 755 "$top/tests/fakecuda/libcuda.so.1" "$img/app/usr/lib/x86_64-linux-gnu/libcuda.so.1"
for l in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
	f=/lib/x86_64-linux-gnu/$l
	[ ! -e "$f" ] || install -D -m 755 "$(readlink -f "$f")" "$img/app$f"
done
install -D -m 755 "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$img/app/lib64/ld-linux-x86-64.so.2"
python3 "$here/mkimage.py" "$b/pause.tar" localhost/nxq-pause:1 "$img/pause" /nxq-pause
python3 "$here/mkimage.py" "$b/app.tar" localhost/nxq-app:1 "$img/app"
fi
[ "${1:-}" != --build-only ] || exit 0

c=$b/containerd/usr/bin
add="$c/containerd:/usr/bin/containerd $c/containerd-shim-runc-v2:/usr/bin/containerd-shim-runc-v2"
add="$add $b/runc/usr/sbin/runc:/usr/bin/runc $c/ctr:/usr/bin/ctr $b/bin/nxquota-nri:/usr/bin/nxquota-nri $b/bin/nxq-cri:/usr/bin/nxq-cri"
add="$add $b/pause.tar:/nri/pause.tar $b/app.tar:/nri/app.tar $here/containerd.toml:/nri/containerd.toml $here/nri_lib.sh:/nri/lib.sh"
# the long scenarios' sizes (nri_cycles, nri_latency), at /nri/env
printf 'NRI_CYCLES=%s\nNRI_LAT_BLOCKS=%s\nNRI_LAT_N=%s\n' "${NXQ_NRI_CYCLES:-1000}" \
	"${NXQ_NRI_LAT_BLOCKS:-10}" "${NXQ_NRI_LAT_N:-10}" > "$b/env.$$"
mv -f "$b/env.$$" "$b/env"	# two runs at once write the same
add="$add $b/env:/nri/env"
# the scenarios named, else nri_basic
named=0
for a in "$@"; do case "$a" in nri_*) named=1 ;; esac; done
[ $named = 1 ] || set -- "$@" nri_basic
NXQ_VM_ADD="${NXQ_VM_ADD:-} $add" NXQ_SCEN_DIRS="$here" \
	exec "$top/tests/vm/containers/run.sh" "$@"
