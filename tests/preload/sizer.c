// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An unmodified server for tests/preload/budget.sh: it reaches the driver
 * as the CUDA runtime does (dlopen("libcuda.so.1"), dlsym(handle,
 * "cuGetProcAddress_v2"), then cuGetProcAddress), brings up device 0's
 * primary context (cuInit, cuDevicePrimaryCtxRetain, cuCtxSetCurrent),
 * then:
 *
 *   sizer vllm PCT   sizes itself as vLLM does: cuMemGetInfo ("cuda free F
 *                    total T"), NVML's nvmlDeviceGetMemoryInfo through its
 *                    own dlopen of libnvidia-ml.so.1 ("nvml free F total
 *                    T", or "nvml none"), then one cuMemAlloc of PCT% of
 *                    cuMemGetInfo's total less what is already in use
 *                    (total - free: its own context, other processes), as
 *                    vLLM's profiling leaves for its KV cache:
 *                    "took B error E"
 *   sizer fill       1 MiB cuMemAllocs until one is refused (at most 4096):
 *                    "fill N error E after MS ms", then waits for a line on
 *                    stdin and exits
 *   sizer try MIB    for each line on stdin: one cuMemAlloc of MIB MiB and
 *                    its free: "try K error E"; exits at end of input
 *   sizer hold       for each line on stdin: "a N": up to N cuMemAllocs of
 *                    1 MiB, stopping at the first refused: "a got G error
 *                    E held H after MS ms"; "f N": frees the last N held:
 *                    "f held H"; exits at end of input (what it holds
 *                    with it: the authority sees the process end)
 *   sizer vmm MIB    as CUDA's VMM samples do: cuMemAddressReserve,
 *                    cuMemCreate of MIB MiB (a multiple of the
 *                    granularity), cuMemMap, cuMemSetAccess, and
 *                    cuMemRelease at once: "vmm mapped B error E"; at a
 *                    line on stdin cuMemUnmap: "vmm unmapped error E"; at
 *                    the next, cuMemAddressFree and exit (a driver
 *                    without the reserve and access calls maps at a
 *                    fixed address)
 *
 * Exit 0 unless the context cannot be brought up (1, said why).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_api.h"

typedef struct {
	unsigned long long total, free, used;
} mem_t;

static CUresult (*gpa)(const char *, void **, int, uint64_t, int *);

static void *get(const char *name)
{
	void *fn = NULL;

	if (gpa(name, &fn, 12000, 0, NULL) || !fn) {
		fprintf(stderr, "sizer: no %s\n", name);
		exit(1);
	}
	return fn;
}

/* NULL where the driver has no @name */
static void *soft(const char *name)
{
	void *fn = NULL;

	return gpa(name, &fn, 12000, 0, NULL) ? NULL : fn;
}

static double ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nvml(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	int (*init)(void), (*idx)(unsigned int, void **), (*info)(void *, mem_t *);
	void *dev;
	mem_t m;

	if (!h) {
		printf("nvml none\n");
		return;
	}
	init = (int (*)(void))dlsym(h, "nvmlInit_v2");
	idx = (int (*)(unsigned int, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	info = (int (*)(void *, mem_t *))dlsym(h, "nvmlDeviceGetMemoryInfo");
	if (!init || !idx || !info || init() || idx(0, &dev) || info(dev, &m)) {
		printf("nvml error\n");
		return;
	}
	printf("nvml free %llu total %llu\n", m.free, m.total);
}

int main(int argc, char **argv)
{
	CUresult (*init)(unsigned int), (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	CUresult (*info)(size_t *, size_t *), (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	static CUdeviceptr p[4096];
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	CUcontext c;
	CUresult e = 0;
	char line[64];
	int n;

	if (argc < 2 || !lib)
		return 1;
	gpa = (CUresult (*)(const char *, void **, int, uint64_t, int *))
		dlsym(lib, "cuGetProcAddress_v2");
	if (!gpa)
		return 1;
	init = get("cuInit");
	retain = get("cuDevicePrimaryCtxRetain");
	set = get("cuCtxSetCurrent");
	info = get("cuMemGetInfo");
	alloc = get("cuMemAlloc");
	fr = get("cuMemFree");
	if (init(0) || (e = retain(&c, 0)) || set(c)) {
		printf("context error %d\n", e);
		fflush(stdout);
		fprintf(stderr, "sizer: cannot bring up device 0's context (%d)\n", e);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "vllm") && argc > 2) {
		size_t f, t;
		double want;

		if (info(&f, &t))
			return 1;
		printf("cuda free %zu total %zu\n", f, t);
		nvml();
		want = (double)t * atoi(argv[2]) / 100 - (double)(t - f);
		if (want < 1) {
			printf("took 0 error -1\n");	/* nothing left at PCT% */
			return 0;
		}
		e = alloc(&p[0], (size_t)want);
		printf("took %zu error %d\n", e ? 0 : (size_t)want, e);
		return 0;
	}
	if (!strcmp(argv[1], "fill")) {
		double t0 = ms();

		for (n = 0; n < 4096; n++)
			if ((e = alloc(&p[n], 1 << 20)))
				break;
		printf("fill %d error %d after %.0f ms\n", n, e, ms() - t0);
		if (!fgets(line, sizeof(line), stdin))
			return 0;
		return 0;
	}
	if (!strcmp(argv[1], "try") && argc > 2) {
		for (int k = 1; fgets(line, sizeof(line), stdin); k++) {
			e = alloc(&p[0], (size_t)atoi(argv[2]) << 20);
			if (!e)
				fr(p[0]);
			printf("try %d error %d\n", k, e);
		}
		return 0;
	}
	if (!strcmp(argv[1], "hold")) {
		int held = 0, k;

		while (fgets(line, sizeof(line), stdin)) {
			double t0 = ms();

			if (sscanf(line, "a %d", &k) == 1) {
				int got = 0;

				e = 0;
				while (got < k && held < 4096 && !(e = alloc(&p[held], 1 << 20))) {
					held++;
					got++;
				}
				printf("a got %d error %d held %d after %.0f ms\n", got, e, held,
				       ms() - t0);
			} else if (sscanf(line, "f %d", &k) == 1) {
				while (k-- > 0 && held > 0)
					fr(p[--held]);
				printf("f held %d\n", held);
			}
		}
		return 0;
	}
	if (!strcmp(argv[1], "vmm") && argc > 2) {
		CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
				   const CUmemAllocationProp *, unsigned long long) = get("cuMemCreate");
		CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
				unsigned long long) = get("cuMemMap");
		CUresult (*unmap)(CUdeviceptr, size_t) = get("cuMemUnmap");
		CUresult (*release)(CUmemGenericAllocationHandle) = get("cuMemRelease");
		CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
				    unsigned long long) = soft("cuMemAddressReserve");
		CUresult (*afree)(CUdeviceptr, size_t) = soft("cuMemAddressFree");
		CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) =
			soft("cuMemSetAccess");
		CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
					     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE } };
		CUmemAccessDesc ad = { .location = prop.location,
				       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
		size_t sz = (size_t)atoi(argv[2]) << 20;
		CUdeviceptr va = 0x100000000000ULL;
		CUmemGenericAllocationHandle h;

		if (reserve && (e = reserve(&va, sz, 0, 0, 0)))
			goto vmm_out;
		if ((e = create(&h, sz, &prop, 0)))
			goto vmm_out;
		e = map(va, sz, 0, h, 0);
		if (!e && access)
			e = access(va, sz, &ad, 1);
		release(h);	/* at once: the mapping keeps the memory */
vmm_out:
		printf("vmm mapped %zu error %d\n", e ? 0 : sz, e);
		if (e || !fgets(line, sizeof(line), stdin))
			return 0;
		printf("vmm unmapped error %d\n", unmap(va, sz));
		if (fgets(line, sizeof(line), stdin) && reserve && afree)
			afree(va, sz);
		return 0;
	}
	return 1;
}
