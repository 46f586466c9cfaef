# pkg-config's flags for a library, or the flags of where Debian and
# Ubuntu install it when pkg-config, or the library's .pc file, is missing
# (a stock GPU host has libnl's headers at best, no .pc):
#
#   include $(TOP)/scripts/pkg.mk
#   NL_CFLAGS := $(call pkg_or,--cflags,libnl-genl-3.0,-I/usr/include/libnl3)
#
# One definition for tools/ and daemon/.
PKG_CONFIG ?= pkg-config
pkg_or = $(shell $(PKG_CONFIG) $(1) $(2) 2>/dev/null || echo $(3))
