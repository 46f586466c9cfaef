// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An application that knows nothing of nxquota, run by app.sh with and
 * without libnxquota-preload.so in LD_PRELOAD, against the fake driver
 * (tests/fakecuda); each brings up device 0's primary context first:
 *   app preload   the CUDA runtime's way in (dlopen, dlsym(handle,
 *                 "cuGetProcAddress_v2"), then cuGetProcAddress) gives the
 *                 shim's entry points; allocations work (the shim passes
 *                 them through: no authority here); dlsym(RTLD_NEXT) from
 *                 another library still finds the library after that one
 *   app bare      the same calls give the driver's own entry points
 *   app budget    (daemon.sh, under a budget) takes 1 MiB blocks with
 *                 cuMemAlloc until refused and says
 *                 "allocated N error E", waits for a line on stdin, frees
 *                 them, says "freed", waits for a line, exits
 * Exit 0 when all holds, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"

void *next_probe(void);

static int bad;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "app: FAIL: %s (line %d)\n", #c, __LINE__); bad = 1; } } while (0)

static int from_preload(void *fn)
{
	Dl_info di;

	return fn && dladdr(fn, &di) && di.dli_fname && strstr(di.dli_fname, "libnxquota-preload");
}

/* As the runtime does: cuInit, device 0's primary context retained and made current. */
static int context(CUresult (*gpa)(const char *, void **, int, uint64_t, int *))
{
	CUresult (*init)(unsigned int), (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	CUcontext c;

	if (gpa("cuInit", (void **)&init, 12000, 0, NULL) ||
	    gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, 0, NULL) ||
	    gpa("cuCtxSetCurrent", (void **)&set, 12000, 0, NULL))
		return 1;
	return init(0) || retain(&c, 0) || set(c);
}

static int budget(CUresult (*gpa)(const char *, void **, int, uint64_t, int *))
{
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	CUdeviceptr p[64];
	CUresult e = 0;
	char line[16];
	int n;

	if (gpa("cuMemAlloc", (void **)&alloc, 12000, 0, NULL) ||
	    gpa("cuMemFree", (void **)&fr, 12000, 0, NULL))
		return 1;
	for (n = 0; n < 64; n++) {
		e = alloc(&p[n], 1 << 20);
		if (e)
			break;
	}
	printf("allocated %d error %d\n", n, e);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	while (n--)
		if (fr(p[n]))
			return 1;
	printf("freed\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int want = argc > 1 && !strcmp(argv[1], "preload");
	CUresult (*gpa)(const char *, void **, int, uint64_t, int *);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	long (*calls)(const char *);
	int (*np)(void) = (int (*)(void))next_probe();
	CUdeviceptr p = 0;
	void *h;

	CHECK(np && np() == 2);
	h = dlopen("libcuda.so.1", RTLD_NOW);
	CHECK(h);
	if (!h)
		return 1;
	gpa = (CUresult (*)(const char *, void **, int, uint64_t, int *))
		dlsym(h, "cuGetProcAddress_v2");
	calls = (long (*)(const char *))dlsym(h, "fakecuda_calls");
	CHECK(gpa && calls);
	if (!gpa || !calls)
		return 1;
	CHECK(context(gpa) == 0);
	if (argc > 1 && !strcmp(argv[1], "budget"))
		return budget(gpa);
	CHECK(from_preload((void *)gpa) == want);
	CHECK(gpa("cuMemAlloc", (void **)&alloc, 12000, 0, NULL) == 0);
	CHECK(gpa("cuMemFree", (void **)&fr, 12000, 0, NULL) == 0);
	CHECK(from_preload((void *)alloc) == want);
	CHECK(from_preload((void *)fr) == want);
	CHECK(alloc(&p, 1 << 20) == 0 && p);
	CHECK(fr(p) == 0);
	CHECK(calls("cuMemAlloc_v2") == 1 && calls("cuMemFree_v2") == 1);
	return bad;
}
