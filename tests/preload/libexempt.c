// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxquota linked in statically (as in the PyTorch integration's
 * libnxq_torch.so), run under libnxquota-preload.so on tests/fakecuda: the
 * entry points the library resolves for itself must be the driver's,
 * not the shim's charging wrappers (else its arena's handles are charged
 * twice: by the arena and by the shim).  lib/cuda.c resolves them between
 * nxquota_preload_exempt(1) and (0).
 *
 * Usage (tests/preload/Makefile check):
 *   LD_PRELOAD=preload/libnxquota-preload.so \
 *   LD_LIBRARY_PATH=tests/fakecuda ./libexempt
 * Prints "libexempt: ok" or "libexempt: FAIL: ..." (exit 1).
 */
#include <dlfcn.h>
#include <stdio.h>

#include "internal.h"
#include "cuda_api.h"

static int rc;

static void check(const char *name, void *lib_has, void *wrapper, void *driver)
{
	if (!lib_has || lib_has == wrapper || lib_has != driver) {
		printf("libexempt: FAIL: libnxquota's %s is %p (shim's wrapper %p, driver's %p)\n",
		       name, lib_has, wrapper, driver);
		rc = 1;
	}
}

int main(void)
{
	void *drv = dlopen("libcuda.so.1", RTLD_NOW);
	void *(*real_dlsym)(void *, const char *) =
		(void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	const struct nxq_cuda *c;
	int err = 0;

	if (!real_dlsym)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!drv || !real_dlsym || !dlsym(RTLD_DEFAULT, "nxquota_preload_exempt")) {
		printf("libexempt: FAIL: needs libcuda.so.1 (tests/fakecuda) and the shim preloaded\n");
		return 1;
	}
	/* the shim is active: an ordinary lookup of a wrapped name gives its wrapper */
	if (dlsym(drv, "cuMemCreate") != dlsym(RTLD_DEFAULT, "cuMemCreate") ||
	    dlsym(RTLD_DEFAULT, "cuMemCreate") == real_dlsym(drv, "cuMemCreate")) {
		printf("libexempt: FAIL: the shim does not hand out its wrapper here\n");
		return 1;
	}
	c = nxq__cuda_load(&err);
	if (!c) {
		printf("libexempt: FAIL: nxq__cuda_load: %d\n", err);
		return 1;
	}
	check("cuMemCreate", (void *)c->cuMemCreate, dlsym(RTLD_DEFAULT, "cuMemCreate"),
	      real_dlsym(drv, "cuMemCreate"));
	check("cuMemRelease", (void *)c->cuMemRelease, dlsym(RTLD_DEFAULT, "cuMemRelease"),
	      real_dlsym(drv, "cuMemRelease"));
	check("cuMemAlloc", (void *)c->cuMemAlloc, dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"),
	      real_dlsym(drv, "cuMemAlloc_v2"));
	/* issue 20 wraps mappings and contexts too: the arena's are its own */
	check("cuMemMap", (void *)c->cuMemMap, dlsym(RTLD_DEFAULT, "cuMemMap"),
	      real_dlsym(drv, "cuMemMap"));
	check("cuMemUnmap", (void *)c->cuMemUnmap, dlsym(RTLD_DEFAULT, "cuMemUnmap"),
	      real_dlsym(drv, "cuMemUnmap"));
	check("cuDevicePrimaryCtxRetain", (void *)c->cuDevicePrimaryCtxRetain,
	      dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain"),
	      real_dlsym(drv, "cuDevicePrimaryCtxRetain"));
	check("cuDevicePrimaryCtxRelease", (void *)c->cuDevicePrimaryCtxRelease,
	      dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRelease_v2"),
	      real_dlsym(drv, "cuDevicePrimaryCtxRelease_v2"));
	/* after the load, the thread is no longer exempt: lookups are wrapped again */
	if (dlsym(drv, "cuMemCreate") == real_dlsym(drv, "cuMemCreate")) {
		printf("libexempt: FAIL: the exemption outlived the load\n");
		rc = 1;
	}
	if (!rc)
		printf("libexempt: ok (static libnxquota under the shim resolves the driver's "
		       "own entry points)\n");
	return rc;
}
