# nxquota - top-level Makefile.  It delegates to the directories and owns
# the user-facing targets:
#
#   make            build the library, the tools and the module (for the
#                   kernels the tests use; KDIR=... builds for one kernel)
#   make check      install what is missing (Debian 12, root) and run every
#                   test that can run here: KUnit, cmocka, real kernels
#   make demo       boot a real kernel with the module and show the main job
#   make check-gpu  the GPU tests (say "skipped" without a GPU)

VERSION := $(shell cat $(CURDIR)/VERSION)
export VERSION

.PHONY: all deps kmod lib tools check check-kmod check-kunit check-lib \
	check-vm check-gpu demo clean

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

check: deps
	@tests/run-all.sh

check-kunit: deps
	@tests/kunit/run.sh

check-lib: deps
	@if [ -f lib/Makefile ]; then $(MAKE) -C lib check; fi

check-vm: deps
	@tests/vm/run.sh

check-gpu:
	@if [ -f lib/Makefile ]; then $(MAKE) -C lib check-gpu; fi

demo: deps
	@tests/vm/run.sh --demo

clean:
	rm -rf build
	-$(MAKE) -C kmod clean >/dev/null 2>&1
	-@if [ -f lib/Makefile ]; then $(MAKE) -C lib clean; fi
	-@if [ -f tools/Makefile ]; then $(MAKE) -C tools clean; fi
