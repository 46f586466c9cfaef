// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An unmodified CUDA driver-API program for the shim's figures and the
 * SIGKILL test; it resolves everything as the CUDA runtime does
 * (dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2"), then
 * cuGetProcAddress), so that it runs the same with and without
 * libnxquota-preload.so in LD_PRELOAD.
 *
 *   bench_preload pairs N SIZE   N cuMemAlloc/cuMemFree pairs of SIZE bytes,
 *                                then N cuMemAllocAsync/cuMemFreeAsync
 *                                pairs (stream 0, one sync at the end):
 *                                "pairs: ... ns/pair" lines; under the
 *                                shim each says how many charges and
 *                                uncharges reached the authority per pair
 *                                (its nxquota_preload_authority_trips())
 *   bench_preload churn MIB      forever: allocate MIB 1 MiB blocks, free
 *                                them (for kill -9 at random points);
 *                                "ready" once the context is up
 *   bench_preload plain MIB      MIB 1 MiB cuMemAlloc blocks (stop at the
 *                                first refusal): "plain N error E", then
 *                                holds them until a line on stdin
 *   bench_preload pool MIB       the same with cuMemAllocAsync, then
 *                                cuMemFreeAsync of all (no sync: the pool
 *                                keeps its reservation): "pool N error E",
 *                                then waits for a line on stdin
 *   bench_preload key            the GPU-<uuid> key of device 0
 *
 * On tests/fakecuda (make -C preload bench-fake) it only shows that it runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_api.h"

static CUresult (*gpa)(const char *, void **, int, uint64_t, int *);

static void *get(const char *name)
{
	void *fn = NULL;

	if (gpa(name, &fn, 12000, 0, NULL) || !fn) {
		fprintf(stderr, "bench_preload: no %s\n", name);
		exit(1);
	}
	return fn;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "bench_preload: %s: %d\n", #x, r_); exit(1); } } while (0)

int main(int argc, char **argv)
{
	CUresult (*init)(unsigned int);
	CUresult (*devget)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	CUresult (*aalloc)(CUdeviceptr *, size_t, CUstream);
	CUresult (*afree)(CUdeviceptr, CUstream);
	CUresult (*ssync)(CUstream);
	CUdevice dev;
	CUcontext ctx;
	void *h;

	if (argc < 2 || (strcmp(argv[1], "key") && (argc < 3 ||
	    (strcmp(argv[1], "pairs") && strcmp(argv[1], "churn") && strcmp(argv[1], "plain") &&
	     strcmp(argv[1], "pool"))))) {
		fprintf(stderr, "usage: bench_preload pairs N SIZE | churn MIB | plain MIB | "
			"pool MIB | key\n");
		return 2;
	}
	h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "bench_preload: %s\n", dlerror());
		return 1;
	}
	gpa = (CUresult (*)(const char *, void **, int, uint64_t, int *))
		dlsym(h, "cuGetProcAddress_v2");
	if (!gpa) {
		fprintf(stderr, "bench_preload: no cuGetProcAddress_v2\n");
		return 1;
	}
	init = get("cuInit");
	devget = get("cuDeviceGet");
	retain = get("cuDevicePrimaryCtxRetain");
	setcur = get("cuCtxSetCurrent");
	alloc = get("cuMemAlloc");
	fr = get("cuMemFree");
	aalloc = get("cuMemAllocAsync");
	afree = get("cuMemFreeAsync");
	ssync = get("cuStreamSynchronize");
	CK(init(0));
	CK(devget(&dev, 0));
	if (!strcmp(argv[1], "key")) {
		CUresult (*uuid)(CUuuid *, CUdevice) = get("cuDeviceGetUuid");
		CUuuid u;
		const unsigned char *b = (const unsigned char *)u.bytes;

		CK(uuid(&u, dev));
		printf("GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
		       b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		       b[12], b[13], b[14], b[15]);
		return 0;
	}
	CK(retain(&ctx, dev));
	CK(setcur(ctx));

	if (!strcmp(argv[1], "plain") || !strcmp(argv[1], "pool")) {
		int pool = !strcmp(argv[1], "pool");
		long n = atol(argv[2]), k;
		CUdeviceptr *p = calloc((size_t)n + 1, sizeof(*p));
		CUresult e = 0;
		char line[16];

		if (!p || n <= 0)
			return 2;
		for (k = 0; k < n; k++) {
			e = pool ? aalloc(&p[k], 1 << 20, NULL) : alloc(&p[k], 1 << 20);
			if (e)
				break;
		}
		if (pool)
			for (long i = 0; i < k; i++)
				CK(afree(p[i], NULL));
		printf("%s %ld error %d\n", argv[1], k, e);
		fflush(stdout);
		return fgets(line, sizeof(line), stdin) ? 0 : 1;
	}

	if (!strcmp(argv[1], "churn")) {
		long n = atol(argv[2]);
		CUdeviceptr *p = calloc((size_t)n, sizeof(*p));

		if (!p || n <= 0)
			return 2;
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			long k;

			for (k = 0; k < n && !alloc(&p[k], 1 << 20); k++)
				;
			while (k--)
				CK(fr(p[k]));
		}
	}
	if (argc < 4)
		return 2;
	{
		long n = atol(argv[2]);
		size_t size = strtoull(argv[3], NULL, 0);
		uint64_t (*trips)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT,
						"nxquota_preload_authority_trips");
		uint64_t t0 = 0;
		char tr[64] = "";
		CUdeviceptr p;
		double t;

		for (int i = 0; i < 100; i++) {	/* warm up */
			CK(alloc(&p, size));
			CK(fr(p));
		}
#define TRIPS_START() (t0 = trips ? trips() : 0)
#define TRIPS_END() (trips ? snprintf(tr, sizeof(tr), ", %.3f authority trips/pair", \
				       (double)(trips() - t0) / n) : 0)
		TRIPS_START();
		t = now();
		for (long i = 0; i < n; i++) {
			CK(alloc(&p, size));
			CK(fr(p));
		}
		t = now() - t;
		TRIPS_END();
		printf("pairs: cuMemAlloc+cuMemFree %zu B: %ld in %.3f s, %.0f ns/pair%s\n", size,
		       n, t, t / n * 1e9, tr);
		TRIPS_START();
		t = now();
		for (long i = 0; i < n; i++) {
			CK(aalloc(&p, size, NULL));
			CK(afree(p, NULL));
		}
		CK(ssync(NULL));
		t = now() - t;
		TRIPS_END();
		printf("pairs: cuMemAllocAsync+cuMemFreeAsync %zu B: %ld in %.3f s, %.0f ns/pair%s\n",
		       size, n, t, t / n * 1e9, tr);
	}
	return 0;
}
