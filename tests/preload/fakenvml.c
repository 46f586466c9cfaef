// SPDX-License-Identifier: GPL-2.0
/*
 * A fake libnvidia-ml.so.1 for the preload shim's tests (derived from
 * tests/tools/fakenvml.c, which fakes what nxquotactl calls): the NVML
 * entry points the shim wraps or calls -- memory info (both versions),
 * handles by index and by UUID, UUIDs, init and shutdown -- with nvml.h's
 * layouts.
 *
 * Its devices are the fake CUDA driver's (tests/preload/fakedrv.c): two,
 * GPU-10111213-... and GPU-20212223-..., and their memory is what that
 * driver says it has in use (fakedrv_devmem(), found in the libcuda.so.1
 * this process loaded: every process's, with FAKEDRV_SHM), so that NVML
 * and cuMemGetInfo agree as on a real node.  Without the fake driver
 * loaded: FAKE_NVML_MEM_MB (default 8192) free of as much.
 *
 * Like the real library: anything before nvmlInit_v2 is
 * NVML_ERROR_UNINITIALIZED; nvmlDeviceGetMemoryInfo_v2 wants its struct's
 * version (nvmlMemory_v2).  fakenvml_calls(NAME) counts the calls.
 * nvmlDeviceGetComputeRunningProcesses_v3 lists this process with what
 * the fake driver says it took (fakedrv_mine()); fakenvml_procs(0) makes
 * it NVML_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_SUPPORTED	3
#define NVML_ERROR_NOT_FOUND		6
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH	25

#define API __attribute__((visibility("default")))
#define NDEV	2

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define MEMORY_V2	((unsigned int)(sizeof(nvmlMemory_v2_t) | (2U << 24)))

struct fdev {
	int ord;
	char uuid[96];
};

static struct fdev devs[NDEV];
static int inits;
static long n_init, n_info, n_info2, n_procs;
static int no_procs;	/* fakenvml_procs(0): no per-process figures (as in a pid namespace) */

static void uuids(void)
{
	static const char hex[] = "0123456789abcdef";

	for (int d = 0; d < NDEV; d++) {
		char *p = devs[d].uuid;

		devs[d].ord = d;
		memcpy(p, "GPU-", 4);
		p += 4;
		for (int i = 0; i < 16; i++) {
			unsigned int b = (unsigned int)(0x10 * (d + 1) + i);

			if (i == 4 || i == 6 || i == 8 || i == 10)
				*p++ = '-';
			*p++ = hex[b >> 4];
			*p++ = hex[b & 15];
		}
		*p = 0;
	}
}

API long fakenvml_calls(const char *name)
{
	if (!strcmp(name, "nvmlInit_v2"))
		return n_init;
	if (!strcmp(name, "nvmlDeviceGetMemoryInfo"))
		return n_info;
	if (!strcmp(name, "nvmlDeviceGetMemoryInfo_v2"))
		return n_info2;
	if (!strcmp(name, "nvmlDeviceGetComputeRunningProcesses_v3"))
		return n_procs;
	return -1;
}

/* on 0: nvmlDeviceGetComputeRunningProcesses_v3 is not supported */
API void fakenvml_procs(int on)
{
	no_procs = !on;
}

API const char *nvmlErrorString(int err)
{
	return err ? "Unknown Error" : "Success";
}

API int nvmlInit_v2(void)
{
	n_init++;
	if (!inits++)
		uuids();
	return NVML_SUCCESS;
}

API int nvmlShutdown(void)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	inits--;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = NDEV;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (i >= NDEV || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	*h = &devs[i];
	return NVML_SUCCESS;
}

API int nvmlDeviceGetHandleByUUID(const char *uuid, void **h)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < NDEV; i++)
		if (!strcmp(devs[i].uuid, uuid)) {
			*h = &devs[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

API int nvmlDeviceGetUUID(void *h, char *uuid, unsigned int length)
{
	struct fdev *d = h;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || !uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(d->uuid) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(uuid, d->uuid);
	return NVML_SUCCESS;
}

/* The device's memory: the fake driver's figures where it is loaded. */
static int mem(const struct fdev *d, unsigned long long *total, unsigned long long *used)
{
	void (*devmem)(int, uint64_t *, uint64_t *) = NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	const char *e = getenv("FAKE_NVML_MEM_MB");
	uint64_t t, u;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (h) {
		devmem = (void (*)(int, uint64_t *, uint64_t *))dlsym(h, "fakedrv_devmem");
		dlclose(h);
	}
	if (devmem) {
		devmem(d->ord, &t, &u);
	} else {
		t = (e && *e ? strtoull(e, NULL, 10) : 8192) << 20;
		u = 0;
	}
	*total = t;
	*used = u;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m)
{
	unsigned long long t, u;
	int r;

	n_info++;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = mem(h, &t, &u);
	if (r)
		return r;
	m->total = t;
	m->used = u;
	m->free = t - u;
	return NVML_SUCCESS;
}

/* Version 2: 5 MiB of the used memory is the driver's own (reserved). */
API int nvmlDeviceGetMemoryInfo_v2(void *h, nvmlMemory_v2_t *m)
{
	unsigned long long t, u;
	int r;

	n_info2++;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (m->version != MEMORY_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = mem(h, &t, &u);
	if (r)
		return r;
	m->total = t;
	m->reserved = 5ULL << 20;
	m->free = t - u - m->reserved;
	m->used = u;
	return NVML_SUCCESS;
}

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/*
 * The processes with a context on the device: this one alone, with what
 * the fake driver says it took (fakedrv_mine()), while that is not 0.
 */
API int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count,
						nvmlProcessInfo_t *infos)
{
	const struct fdev *d = h;
	uint64_t (*minef)(int) = NULL;
	void *l = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	uint64_t m = 0;

	n_procs++;
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (no_procs)
		return NVML_ERROR_NOT_SUPPORTED;
	if (l) {
		minef = (uint64_t (*)(int))dlsym(l, "fakedrv_mine");
		dlclose(l);
	}
	if (minef)
		m = minef(d->ord);
	if (!m) {
		*count = 0;
		return NVML_SUCCESS;
	}
	if (*count < 1 || !infos) {
		*count = 1;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = 1;
	infos[0].pid = (unsigned int)getpid();
	infos[0].usedGpuMemory = m;
	infos[0].gpuInstanceId = infos[0].computeInstanceId = 0xFFFFFFFFU;
	return NVML_SUCCESS;
}
