# nxquota - top-level Makefile.  It delegates to the directories and owns
# the user-facing targets:
#
#   make            build the library, the tools and the module (for the
#                   kernels the tests use; KDIR=... builds for one kernel)
#   make check      install what is missing (Debian 12, root) and run every
#                   test that can run here: KUnit, cmocka, real kernels
#                   (Debian 12's 6.12 and trixie-backports' newest 7.x;
#                   NXQ_KERNELS="6.12 7", the series scripts/deps.sh takes)
#   make check-matrix  the kernel matrix: the module built for, and every
#                   scenario (module and nxquotad, then the container
#                   scenarios) run on, every kernel scripts/deps.sh lists:
#                   Debian 12's 6.1 and 6.12, trixie-backports' newest
#                   6.18.x and newest 7.x
#   make check-dmem the scenarios, dmem_coexist among them, on the newest
#                   kernel's source built with the dmem cgroup controller
#                   (scripts/dmem-kernel.sh, a small configuration; the
#                   first run builds it: 51 minutes on 2 busy cores)
#   make check-nri-long  nxquota-nri's long runs: 1,000 pod create/delete
#                   cycles through containerd with each authority, and the
#                   container start with the plugin against without it
#                   (integrations/nri/test/nri_cycles.sh, nri_latency.sh)
#   make demo       boot a real kernel with the module and show the main job
#   make check-gpu  the GPU tests (say "skipped" without a GPU)
#   make demo-gpu   the lending story on a real GPU with nxquotad as the
#                   authority (root; "skipped" without a GPU;
#                   NXQ_FAKE_CUDA=1: on tests/fakecuda); OUT=DIR, default
#                   build/demo-gpu
#   make image      the node image (scripts/image.sh): an mmdebstrap root
#                   of Debian 12's packages and make install, no registry;
#                   build/image/nxquota-VERSION.tar (podman import) and,
#                   with podman, localhost/nxquota:VERSION and its OCI
#                   archive build/image/nxquota-VERSION.oci.tar (root)
#   make check-image  make image, then the image run by podman in the
#                   test VM (6.12) as a DaemonSet runs it, serving a
#                   container's budget (tests/vm/containers/image)
#   make install    library, headers, pkg-config file, man pages, the tools
#                   (if built; nxquota-hook with its oci-hooks(5) file),
#                   the module source for DKMS and the udev rule,
#                   nxquotad with its systemd units (socket units for its
#                   client and control sockets), man page and the
#                   sysusers snippet of the group nxquota; DESTDIR=,
#                   PREFIX= (default /usr/local)
#   make install-dkms  make install, then register, build and install the
#                   module through DKMS for the running kernel, load it at
#                   boot and now (root, no DESTDIR)
#   make uninstall  undo both

VERSION := $(shell cat $(CURDIR)/VERSION)
export VERSION

# Where `make install` puts things.  The udev rule and the modules-load
# snippet go where udev and systemd read them: the distribution's
# directories for PREFIX=/usr (packagers), /etc for a local install.
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share
DKMSSRCDIR ?= $(PREFIX)/src/nxquota-$(VERSION)
ifeq ($(PREFIX),/usr)
UDEVRULESDIR  ?= /usr/lib/udev/rules.d
MODULESLOADDIR ?= /usr/lib/modules-load.d
SYSTEMDUNITDIR ?= /usr/lib/systemd/system
SYSUSERSDIR   ?= /usr/lib/sysusers.d
TMPFILESDIR   ?= /usr/lib/tmpfiles.d
else
UDEVRULESDIR  ?= /etc/udev/rules.d
MODULESLOADDIR ?= /etc/modules-load.d
SYSTEMDUNITDIR ?= /etc/systemd/system
SYSUSERSDIR   ?= /etc/sysusers.d
TMPFILESDIR   ?= /etc/tmpfiles.d
endif
# nxquotad as installed: the daemon's build without the sanitizers.
NXQD_RELEASE := daemon/build/release/nxquotad
NXQD_UNITS := packaging/nxquotad.socket packaging/nxquotad-control.socket
# The module source DKMS builds: what kmod/Kbuild needs, nothing else.
KMOD_SRC := $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild kmod/Kconfig

.PHONY: all deps kmod lib tools check check-kmod check-kunit check-lib \
	check-vm check-matrix check-dmem check-nri-long check-gpu demo demo-gpu install \
	image check-image \
	install-dkms uninstall clean

all: lib tools kmod

deps:
	@scripts/deps.sh

# Build the module against every kernel the tests boot, or against KDIR.
kmod:
ifdef KDIR
	$(MAKE) -C kmod KDIR=$(KDIR)
else
	@scripts/deps.sh --print | while read kver img kdir; do \
		echo "== kmod for $$kver"; \
		$(MAKE) -C kmod KDIR=$$kdir O_SUFFIX=$$kver || exit 1; \
	done
endif

lib:
	@if [ -f lib/Makefile ]; then $(MAKE) -C lib; fi

tools: lib
	@if [ -f tools/Makefile ]; then $(MAKE) -C tools; fi

# make check's kernels (scripts/deps.sh fetches and prepares only these;
# make check-matrix and the other targets: all four).
check: export NXQ_KERNELS ?= 6.12 7
check: deps
	@tests/run-all.sh

check-kunit: deps
	@tests/kunit/run.sh

check-lib: deps
	$(MAKE) -C lib check check-mutants
	$(MAKE) -C integrations/pytorch check-host

check-daemon: ; $(MAKE) -C daemon check check-mutants

# The LD_PRELOAD shim (preload/) against a fake driver and a fake authority.
check-preload: lib ; $(MAKE) -C preload check

check-vm: deps
	@tests/vm/run.sh

check-matrix: deps
	@tests/run-all.sh --matrix

check-dmem: deps lib tools
	@scripts/dmem-kernel.sh
	@$(MAKE) -s -C tools static
	@tests/vm/run.sh --kernel-list 'scripts/dmem-kernel.sh --print' --dmem \
		--authority both

image:
	@scripts/image.sh

check-image: export NXQ_KERNELS ?= 6.12
check-image: deps image
	@NXQ_SCEN_DIRS=tests/vm/containers/image tests/vm/containers/run.sh \
		--kernel 6.12 --authority image image_node

# nxquota-nri's long runs (issue 28), apart from make check (hours under
# TCG): nri_cycles, 1,000 pods made and removed through containerd
# (NXQ_NRI_CYCLES), against the module and against nxquotad, the two
# boots at once (one core each); then nri_latency, the container start
# with the plugin and without, side by side (a benchmark: it prints
# figures), against the module.  Console logs: build/vm-nri-module,
# build/vm-nri-daemon, build/vm-nri-latency; their figures are printed last.
check-nri-long: export NXQ_KERNELS ?= 6.12
check-nri-long: deps
	@# what both boots build, built once first (as make check's vm-build)
	@$(MAKE) -s kmod >/dev/null && $(MAKE) -s lib tools && \
		$(MAKE) -s -C tools static && $(MAKE) -s -C daemon static && \
		$(MAKE) -s -C preload libnxquota-preload.so && \
		$(MAKE) -s -C tests/fakecuda libcuda.so.1
	@integrations/nri/test/run.sh --build-only
	@export NXQ_NRI_BUILT=1 NXQ_VM_TIMEOUT=$${NXQ_VM_TIMEOUT:-10800}; \
	NXQ_CONTAINERS_OUT=build/vm-nri-module integrations/nri/test/run.sh \
		--kernel 6.12 --authority module nri_cycles > build/nri-long-module.log 2>&1 & m=$$!; \
	NXQ_CONTAINERS_OUT=build/vm-nri-daemon integrations/nri/test/run.sh \
		--kernel 6.12 --authority daemon nri_cycles > build/nri-long-daemon.log 2>&1 & d=$$!; \
	wait $$m; rm=$$?; wait $$d; rd=$$?; cat build/nri-long-module.log build/nri-long-daemon.log; \
	NXQ_CONTAINERS_OUT=build/vm-nri-latency integrations/nri/test/run.sh \
		--kernel 6.12 --authority module nri_latency; rl=$$?; \
	for v in module daemon latency; do echo "== figures, $$v:"; \
		grep -h '\[nri_[a-z]*\] info' build/vm-nri-$$v/*/console-*.log; done; \
	[ $$rm = 0 ] && [ $$rd = 0 ] && [ $$rl = 0 ]

check-gpu:
	$(MAKE) -C lib check-gpu
	$(MAKE) -C integrations/pytorch check-gpu

demo: export NXQ_KERNELS ?= 6.12
demo: deps
	@tests/vm/run.sh --demo

demo-gpu:
	@scripts/demo-gpu.sh --out $(or $(OUT),build/demo-gpu)

install: lib tools
	$(MAKE) -C lib install PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) \
		INCLUDEDIR=$(INCLUDEDIR) DESTDIR=$(DESTDIR)
	install -d $(DESTDIR)$(INCLUDEDIR)/linux
	install -m 644 include/uapi/linux/nxquota.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -d $(DESTDIR)$(MANDIR)/man3
	install -m 644 man/man3/*.3 $(DESTDIR)$(MANDIR)/man3/
	@if [ -f tools/nxquotactl ]; then set -x; \
		install -D -m 755 tools/nxquotactl $(DESTDIR)$(SBINDIR)/nxquotactl; fi
	@if [ -f tools/nxquotactl.8 ]; then set -x; \
		install -D -m 644 tools/nxquotactl.8 $(DESTDIR)$(MANDIR)/man8/nxquotactl.8; fi
	@if [ -f tools/nxquota-hook ]; then set -x; \
		install -D -m 755 tools/nxquota-hook $(DESTDIR)$(SBINDIR)/nxquota-hook; \
		install -D -m 644 tools/nxquota-hook.8 $(DESTDIR)$(MANDIR)/man8/nxquota-hook.8; \
		install -d $(DESTDIR)$(DATADIR)/containers/oci/hooks.d; \
		sed 's|@SBINDIR@|$(SBINDIR)|' packaging/oci-hooks.d/nxquota.json > \
			$(DESTDIR)$(DATADIR)/containers/oci/hooks.d/nxquota.json; \
		chmod 644 $(DESTDIR)$(DATADIR)/containers/oci/hooks.d/nxquota.json; fi
	rm -rf $(DESTDIR)$(DKMSSRCDIR)
	install -d $(DESTDIR)$(DKMSSRCDIR)/kmod $(DESTDIR)$(DKMSSRCDIR)/include/uapi/linux
	install -m 644 $(KMOD_SRC) $(DESTDIR)$(DKMSSRCDIR)/kmod/
	install -m 644 include/uapi/linux/nxquota.h $(DESTDIR)$(DKMSSRCDIR)/include/uapi/linux/
	install -m 644 VERSION $(DESTDIR)$(DKMSSRCDIR)/
	sed 's|@VERSION@|$(VERSION)|' packaging/dkms.conf.in > $(DESTDIR)$(DKMSSRCDIR)/dkms.conf
	chmod 644 $(DESTDIR)$(DKMSSRCDIR)/dkms.conf
	install -D -m 644 packaging/60-nxquota.rules $(DESTDIR)$(UDEVRULESDIR)/60-nxquota.rules
	$(MAKE) -C daemon B=build/release SAN= build/release/nxquotad
	install -D -m 755 $(NXQD_RELEASE) $(DESTDIR)$(SBINDIR)/nxquotad
	install -D -m 644 man/man8/nxquotad.8 $(DESTDIR)$(MANDIR)/man8/nxquotad.8
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|' packaging/nxquotad.service > \
		$(DESTDIR)$(SYSTEMDUNITDIR)/nxquotad.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/nxquotad.service
	install -m 644 $(NXQD_UNITS) $(DESTDIR)$(SYSTEMDUNITDIR)/
	install -D -m 644 packaging/nxquota.sysusers $(DESTDIR)$(SYSUSERSDIR)/nxquota.conf
	install -D -m 644 packaging/nxquota.tmpfiles $(DESTDIR)$(TMPFILESDIR)/nxquota.conf
	$(MAKE) -C preload install PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) DESTDIR=$(DESTDIR)
	install -d $(DESTDIR)$(PREFIX)/bin
	sed 's|@LIBDIR@|$(LIBDIR)|' tools/nxquota-run > $(DESTDIR)$(PREFIX)/bin/nxquota-run
	chmod 755 $(DESTDIR)$(PREFIX)/bin/nxquota-run
	install -D -m 644 man/man1/nxquota-run.1 $(DESTDIR)$(MANDIR)/man1/nxquota-run.1
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then set -x; ldconfig; fi

# DKMS registers on this machine: no DESTDIR.  KVER picks another kernel
# whose headers are installed.
KVER ?= $(shell uname -r)
install-dkms: install
	@if [ -n "$(DESTDIR)" ]; then \
		echo "install-dkms: DKMS works on this machine; unset DESTDIR" >&2; exit 1; fi
	@command -v dkms >/dev/null || { \
		echo "install-dkms: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
	-dkms remove -m nxquota -v $(VERSION) --all >/dev/null 2>&1
	dkms add $(DKMSSRCDIR)
	dkms install -m nxquota -v $(VERSION) -k $(KVER)
	install -D -m 644 packaging/nxquota-modules-load.conf $(MODULESLOADDIR)/nxquota.conf
	-udevadm control --reload
	@if [ "$(KVER)" = "$$(uname -r)" ]; then set -x; modprobe nxquota; fi

uninstall:
	@if [ -z "$(DESTDIR)" ] && command -v dkms >/dev/null && \
	    dkms status -m nxquota -v $(VERSION) | grep -q .; then set -x; \
		dkms remove -m nxquota -v $(VERSION) --all; \
		if [ "$(DKMSSRCDIR)" != /usr/src/nxquota-$(VERSION) ]; then \
			rm -rf /usr/src/nxquota-$(VERSION); fi; fi
	rm -f $(DESTDIR)$(LIBDIR)/libnxquota.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/libnxquota.so.0 $(DESTDIR)$(LIBDIR)/libnxquota.so \
		$(DESTDIR)$(LIBDIR)/libnxquota.a $(DESTDIR)$(LIBDIR)/pkgconfig/nxquota.pc \
		$(DESTDIR)$(INCLUDEDIR)/nxquota.h $(DESTDIR)$(INCLUDEDIR)/linux/nxquota.h \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard man/man3/*.3))) \
		$(DESTDIR)$(MANDIR)/man8/nxquotactl.8 $(DESTDIR)$(SBINDIR)/nxquotactl \
		$(DESTDIR)$(MANDIR)/man8/nxquota-hook.8 $(DESTDIR)$(SBINDIR)/nxquota-hook \
		$(DESTDIR)$(DATADIR)/containers/oci/hooks.d/nxquota.json \
		$(DESTDIR)$(UDEVRULESDIR)/60-nxquota.rules \
		$(DESTDIR)$(MODULESLOADDIR)/nxquota.conf \
		$(DESTDIR)$(SBINDIR)/nxquotad $(DESTDIR)$(MANDIR)/man8/nxquotad.8 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/nxquotad.service \
		$(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(notdir $(NXQD_UNITS))) \
		$(DESTDIR)$(SYSUSERSDIR)/nxquota.conf \
		$(DESTDIR)$(TMPFILESDIR)/nxquota.conf \
		$(DESTDIR)$(LIBDIR)/libnxquota-preload.so \
		$(DESTDIR)$(LIBDIR)/nxquota/ld.so.preload \
		$(DESTDIR)$(PREFIX)/bin/nxquota-run $(DESTDIR)$(MANDIR)/man1/nxquota-run.1
	-rmdir $(DESTDIR)$(LIBDIR)/nxquota 2>/dev/null
	rm -rf $(DESTDIR)$(DKMSSRCDIR)
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then set -x; ldconfig; fi

clean:
	rm -rf build
	-$(MAKE) -C kmod clean >/dev/null 2>&1
	-@if [ -f lib/Makefile ]; then $(MAKE) -C lib clean; fi
	-@if [ -f tools/Makefile ]; then $(MAKE) -C tools clean; fi
	-$(MAKE) -C integrations/pytorch clean
