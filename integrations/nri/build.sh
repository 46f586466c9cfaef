#!/bin/sh
# integrations/nri/build.sh - fetch what nxquota-nri needs from Debian
# trixie and build it, on Debian 12 (nothing is installed on the host):
#
#   - a private apt directory, build/nri/apt (trixie main; Debian 12's own
#     sources and state are not touched), from which `apt-get download`
#     takes: golang-1.24-go and golang-1.24-src (Debian 12's Go is 1.19;
#     the NRI library needs 1.21 or later), the Go sources the plugin and
#     the CRI client import, as Debian packages them (GOPATH mode, as
#     Debian builds Go: containerd/nri 0.6.1, ttrpc, cri-api, grpc,
#     protobuf, ...), and containerd 1.7.24 (Debian 12's 1.6.20 speaks
#     only NRI 0.1), and Debian 12's runc 1.1.5 (from the host's own
#     sources) for its shim;
#   - unpacked under build/nri/{go,gopath,containerd};
#   - built: build/nri/bin/nxquota-nri (integrations/nri/nxquota-nri) and
#     build/nri/bin/nxq-cri (integrations/nri/nxq-cri, the tests' CRI
#     client).
#
# Downloads are kept; a second run fetches nothing.  Exit 0 built, 1 not.
# NXQ_DEBIAN_MIRROR overrides http://deb.debian.org/debian.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build/nri
apt=$b/apt
mirror=${NXQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "nri-build: $*" >&2; }

# The Go packages the two programs import, transitively (found by
# building: `go build` names each one it cannot find).
GODEVS="golang-github-containerd-nri-dev golang-github-containerd-ttrpc-dev
golang-github-sirupsen-logrus-dev golang-golang-x-sys-dev
golang-google-protobuf-dev golang-google-grpc-dev golang-google-genproto-dev
golang-github-opencontainers-specs-dev golang-github-pkg-errors-dev
golang-github-kubernetes-cri-api-dev golang-github-golang-protobuf-1-5-dev
golang-golang-x-net-dev golang-golang-x-text-dev golang-k8s-sigs-yaml-dev
golang-gopkg-yaml.v3-dev golang-github-moby-sys-dev
golang-github-gogo-protobuf-dev"

mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/preferences.d" \
	"$apt/debs" "$b/bin"
echo "deb $mirror trixie main" > "$apt/etc/sources.list"
cat > "$apt/apt.conf" <<EOF
Dir::Etc::sourcelist "$apt/etc/sources.list";
Dir::Etc::sourceparts "/nonexistent";
Dir::Etc::preferencesparts "$apt/etc/preferences.d";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
Dir::State::status "$apt/status";
APT::Architecture "amd64";
Acquire::Languages "none";
EOF
touch "$apt/status"
export APT_CONFIG="$apt/apt.conf"
pkgs="golang-1.24-go golang-1.24-src containerd $GODEVS"
missing=
for p in $pkgs; do
	ls "$apt/debs/${p}_"*.deb > /dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	[ -s "$apt/lists/deb.debian.org_debian_dists_trixie_InRelease" ] ||
		{ say "apt-get update (trixie, private)"; apt-get update -qq; }
	say "apt-get download$missing"
	(cd "$apt/debs" && apt-get download -qq $missing 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	for p in $missing; do
		ls "$apt/debs/${p}_"*.deb > /dev/null 2>&1 || { say "cannot download $p"; exit 1; }
	done
	rm -rf "$b/go" "$b/gopath" "$b/containerd"
fi
# runc from Debian 12 itself (trixie's needs glibc 2.38; Debian 12's crun
# 1.8.1 refuses containerd 1.7.24's specs, "unknown version specified").
if ! ls "$b/runc_"*.deb > /dev/null 2>&1; then
	say "apt-get download runc (Debian 12)"
	(cd "$b" && env -u APT_CONFIG apt-get download -qq runc 2>&1 |
		grep -v '^W: Download is performed unsandboxed' || true)
	ls "$b/runc_"*.deb > /dev/null 2>&1 || { say "cannot download runc"; exit 1; }
	rm -rf "$b/runc"
fi
[ -x "$b/runc/usr/sbin/runc" ] || dpkg-deb -x "$b/runc_"*.deb "$b/runc"
if [ ! -x "$b/go/usr/lib/go-1.24/bin/go" ]; then
	for p in golang-1.24-go golang-1.24-src; do dpkg-deb -x "$apt/debs/${p}_"*.deb "$b/go"; done
	for p in $GODEVS; do dpkg-deb -x "$apt/debs/${p}_"*.deb "$b/gopath"; done
	dpkg-deb -x "$apt/debs/containerd_"*.deb "$b/containerd"
fi

export GO111MODULE=off GOTOOLCHAIN=local GOFLAGS=-trimpath
export GOROOT="$b/go/usr/lib/go-1.24" GOPATH="$b/gopath/usr/share/gocode"
export GOCACHE="$b/gocache"
for prog in nxquota-nri nxq-cri; do
	# built aside, then renamed: make check's image stage (scripts/image.sh)
	# may copy the plugin while this runs in the other lane
	(cd "$top/integrations/nri/$prog" && nice "$GOROOT/bin/go" build -o "$b/bin/.$prog.new" .) ||
		{ say "$prog does not build"; exit 1; }
	mv -f "$b/bin/.$prog.new" "$b/bin/$prog"
done
say "built $b/bin/nxquota-nri $b/bin/nxq-cri ($("$GOROOT/bin/go" version))"
