// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The CUDA backend: CUDA VMM through libcuda.so.1, loaded at run time.
 *
 *  reserve     cuMemAddressReserve
 *  create      cuMemCreate of one handle (pinned device memory, a
 *              multiple of the granule: the arena sizes it to the growth)
 *  map         cuMemMap
 *  set_access  cuMemSetAccess, read-write for the arena's device
 *  unmap       cuMemUnmap
 *  release     cuMemRelease
 *  fences      a pooled event recorded on the stream (cuEventRecord);
 *              done when cuEventQuery says so.
 *
 * The granule comes from cuMemGetAllocationGranularity; a failed or zero
 * answer is an error.  The device's primary context is retained for the
 * arena's life and pushed around every driver call (the calling thread
 * may have no current context, or another device's).
 * The loader runs once per process (pthread_once); a backend object is
 * used under its arena's lock only.
 *
 * Layer 1 (a backend, reached through nxq__cuda_be_ops): calls only err.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "cuda_api.h"

typedef CUresult (*gpa_v2_t)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*gpa_v1_t)(const char *, void **, int, uint64_t);

static struct nxq_cuda cuda;
static int cuda_err;
static char cuda_msg[256];
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

#define E(name, fallback, req) { #name, fallback, offsetof(struct nxq_cuda, name), req }
static const struct {
	const char *name, *fallback;
	size_t off;
	int required;
} entries[] = {
	E(cuInit, "cuInit", 1),
	E(cuDriverGetVersion, "cuDriverGetVersion", 1),
	E(cuDeviceGet, "cuDeviceGet", 1),
	E(cuDeviceGetCount, "cuDeviceGetCount", 1),
	E(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1),
	E(cuDeviceGetUuid, "cuDeviceGetUuid_v2", 1),
	E(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1),
	E(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1),
	E(cuCtxPushCurrent, "cuCtxPushCurrent_v2", 1),
	E(cuCtxPopCurrent, "cuCtxPopCurrent_v2", 1),
	E(cuCtxSetCurrent, "cuCtxSetCurrent", 1),
	E(cuCtxSynchronize, "cuCtxSynchronize", 1),
	E(cuGetErrorName, "cuGetErrorName", 1),
	E(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 1),
	E(cuMemAddressReserve, "cuMemAddressReserve", 1),
	E(cuMemAddressFree, "cuMemAddressFree", 1),
	E(cuMemCreate, "cuMemCreate", 1),
	E(cuMemRelease, "cuMemRelease", 1),
	E(cuMemMap, "cuMemMap", 1),
	E(cuMemUnmap, "cuMemUnmap", 1),
	E(cuMemSetAccess, "cuMemSetAccess", 1),
	E(cuEventCreate, "cuEventCreate", 1),
	E(cuEventRecord, "cuEventRecord", 1),
	E(cuEventQuery, "cuEventQuery", 1),
	E(cuEventSynchronize, "cuEventSynchronize", 1),
	E(cuEventDestroy, "cuEventDestroy_v2", 1),
	E(cuStreamCreate, "cuStreamCreate", 0),
	E(cuStreamDestroy, "cuStreamDestroy_v2", 0),
	E(cuStreamSynchronize, "cuStreamSynchronize", 0),
	E(cuMemsetD8, "cuMemsetD8_v2", 0),
	E(cuMemsetD8Async, "cuMemsetD8Async", 0),
	E(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 0),
	E(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 0),
	E(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 0),
	E(cuMemAlloc, "cuMemAlloc_v2", 0),
	E(cuMemFree, "cuMemFree_v2", 0),
	E(cuMemAllocAsync, "cuMemAllocAsync", 0),
	E(cuMemFreeAsync, "cuMemFreeAsync", 0),
	E(cuMemGetInfo, "cuMemGetInfo_v2", 0),
};

static void cuda_load_entries(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	gpa_v2_t gpa2;
	gpa_v1_t gpa1;
	CUresult (*drvver)(int *);
	int ver = 0;

	if (!lib) {
		cuda_err = -ENOENT;
		snprintf(cuda_msg, sizeof(cuda_msg), "nxquota: CUDA backend unavailable: cannot "
			 "load libcuda.so.1 (%s)", dlerror());
		return;
	}
	gpa2 = (gpa_v2_t)dlsym(lib, "cuGetProcAddress_v2");
	gpa1 = (gpa_v1_t)dlsym(lib, "cuGetProcAddress");
	drvver = (CUresult (*)(int *))dlsym(lib, "cuDriverGetVersion");
	if (drvver)
		drvver(&ver);
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		void *p = NULL;
		int status = 0, want = ver < 12000 ? ver : 12000;

		if (gpa2 && ver >= 12000) {
			if (gpa2(entries[i].name, &p, want, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
				 &status) != CUDA_SUCCESS)
				p = NULL;
		} else if (gpa1 && ver) {
			if (gpa1(entries[i].name, &p, want, CU_GET_PROC_ADDRESS_LEGACY_STREAM) !=
			    CUDA_SUCCESS)
				p = NULL;
		}
		if (p)
			cuda.via_getprocaddress = 1;
		else
			p = dlsym(lib, entries[i].fallback);
		if (!p && entries[i].required) {
			cuda_err = -EOPNOTSUPP;
			snprintf(cuda_msg, sizeof(cuda_msg), "nxquota: CUDA backend unavailable: "
				 "libcuda.so.1 (driver version %d) lacks %s", ver, entries[i].name);
			return;
		}
		memcpy((char *)&cuda + entries[i].off, &p, sizeof(p));
	}
	cuda.driver_version = ver;
}

/*
 * Under libnxquota-preload.so (LD_PRELOAD), dlsym() and cuGetProcAddress()
 * hand out the shim's charging wrappers for cuMemCreate & co; this library
 * charges its own mappings, so it resolves its entry points with the shim's
 * exemption on (nxquota_preload_exempt, absent without the shim).  The shim
 * knows libnxquota.so by its file name, but not a copy linked in statically
 * (the PyTorch integration's libnxq_torch.so): without this, such a process
 * would be charged twice for its arena's handles.
 */
static void cuda_load_once(void)
{
	void (*exempt)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "nxquota_preload_exempt");

	if (exempt)
		exempt(1);
	cuda_load_entries();
	if (exempt)
		exempt(0);
}

const struct nxq_cuda *nxq__cuda_load(int *err)
{
	pthread_once(&cuda_once, cuda_load_once);
	if (cuda_err) {
		if (err)
			*err = cuda_err;
		nxq__err(cuda_err, "%s", cuda_msg);
		return NULL;
	}
	return &cuda;
}

const char *nxq__cuda_errname(CUresult r)
{
	const char *s = NULL;

	if (cuda.cuGetErrorName && cuda.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "CUDA_ERROR_UNKNOWN";
}

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS: return 0;
	case CUDA_ERROR_OUT_OF_MEMORY: return -ENOMEM;
	case CUDA_ERROR_INVALID_VALUE: return -EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED: return -EOPNOTSUPP;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE: return -ENODEV;
	default: return -EIO;
	}
}

#define CU_FAIL(call, r) \
	nxq__err(cu_errno(r), "nxquota: cuda: %s failed: %s (%d)", call, \
		 nxq__cuda_errname(r), (int)(r))

struct cuda_be {
	const struct nxq_cuda *cu;
	CUdevice dev;
	CUcontext pctx;
	uint64_t granule;
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUevent *ev;
	size_t nev, evalloc;
};

static void push(struct cuda_be *c) { c->cu->cuCtxPushCurrent(c->pctx); }
static void pop(struct cuda_be *c) { CUcontext x; c->cu->cuCtxPopCurrent(&x); }

static int cuda_open(const struct nxq_be_cfg *cfg, void **bep, uint64_t *granule,
		     char key[NXQ_DEVICE_KEY_MAX])
{
	const struct nxq_cuda *cu;
	struct cuda_be *c;
	CUuuid u;
	size_t gran = 0;
	int vmm = 0, r = 0;
	CUresult cr;

	cu = nxq__cuda_load(&r);
	if (!cu)
		return r;
	cr = cu->cuInit(0);
	if (cr)
		return CU_FAIL("cuInit", cr);
	c = calloc(1, sizeof(*c));
	if (!c)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	c->cu = cu;
	cr = cu->cuDeviceGet(&c->dev, cfg->cuda_device);
	if (cr) {
		r = nxq__err(-ENODEV, "nxquota: cuda: no device %d: %s", cfg->cuda_device,
			     nxq__cuda_errname(cr));
		goto fail;
	}
	cr = cu->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
				      c->dev);
	if (cr || !vmm) {
		r = nxq__err(-EOPNOTSUPP, "nxquota: cuda: device %d does not support virtual "
			     "memory management (cuMemCreate/cuMemMap)", cfg->cuda_device);
		goto fail;
	}
	c->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	c->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	c->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	c->prop.location.id = c->dev;
	c->access.location = c->prop.location;
	c->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	cr = cu->cuMemGetAllocationGranularity(&gran, &c->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (cr) {
		r = CU_FAIL("cuMemGetAllocationGranularity", cr);
		goto fail;
	}
	if (!gran) {
		r = nxq__err(-EIO, "nxquota: cuda: cuMemGetAllocationGranularity returned 0");
		goto fail;
	}
	if (cfg->granule && cfg->granule % gran) {
		r = nxq__err(-EINVAL, "nxquota: cuda: granule %llu is not a multiple of the "
			     "device's granularity %zu", (unsigned long long)cfg->granule, gran);
		goto fail;
	}
	c->granule = cfg->granule ? cfg->granule : gran;
	cr = cu->cuDeviceGetUuid(&u, c->dev);
	if (cr) {
		r = CU_FAIL("cuDeviceGetUuid", cr);
		goto fail;
	}
	cr = cu->cuDevicePrimaryCtxRetain(&c->pctx, c->dev);
	if (cr) {
		r = CU_FAIL("cuDevicePrimaryCtxRetain", cr);
		goto fail;
	}
	{
		const unsigned char *b = (const unsigned char *)u.bytes;

		snprintf(key, NXQ_DEVICE_KEY_MAX,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
			 b[11], b[12], b[13], b[14], b[15]);
	}
	*granule = c->granule;
	*bep = c;
	return 0;
fail:
	free(c);
	return r;
}

static void cuda_close(void *be)
{
	struct cuda_be *c = be;

	push(c);
	for (size_t i = 0; i < c->nev; i++)
		c->cu->cuEventDestroy(c->ev[i]);
	pop(c);
	free(c->ev);
	c->cu->cuDevicePrimaryCtxRelease(c->dev);
	free(c);
}

static int cuda_reserve(void *be, uint64_t size, uint64_t align, uint64_t *base)
{
	struct cuda_be *c = be;
	CUdeviceptr p = 0;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemAddressReserve(&p, size, align, 0, 0);
	pop(c);
	if (cr)
		return CU_FAIL("cuMemAddressReserve", cr);
	*base = p;
	return 0;
}

static int cuda_unreserve(void *be, uint64_t base, uint64_t size)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemAddressFree(base, size);
	pop(c);
	return cr ? CU_FAIL("cuMemAddressFree", cr) : 0;
}

static int cuda_create(void *be, uint64_t size, uint64_t *handle)
{
	struct cuda_be *c = be;
	CUmemGenericAllocationHandle h;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemCreate(&h, size, &c->prop, 0);
	pop(c);
	if (cr)
		return CU_FAIL("cuMemCreate", cr);
	*handle = h;
	return 0;
}

static int cuda_release(void *be, uint64_t handle)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemRelease(handle);
	pop(c);
	return cr ? CU_FAIL("cuMemRelease", cr) : 0;
}

static int cuda_map(void *be, uint64_t va, uint64_t size, uint64_t handle)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemMap(va, size, 0, handle, 0);
	pop(c);
	return cr ? CU_FAIL("cuMemMap", cr) : 0;
}

static int cuda_set_access(void *be, uint64_t va, uint64_t size)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemSetAccess(va, size, &c->access, 1);
	pop(c);
	return cr ? CU_FAIL("cuMemSetAccess", cr) : 0;
}

static int cuda_unmap(void *be, uint64_t va, uint64_t size)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuMemUnmap(va, size);
	pop(c);
	return cr ? CU_FAIL("cuMemUnmap", cr) : 0;
}

/*
 * Like cudaFree: memory freed with nxq_free() may still be used by queued
 * device work, so wait for the context's work before unmapping it.
 */
static int cuda_quiesce(void *be)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuCtxSynchronize();
	pop(c);
	return cr ? CU_FAIL("cuCtxSynchronize", cr) : 0;
}

static int cuda_fence_record(void *be, void *stream, void **fence)
{
	struct cuda_be *c = be;
	CUevent ev;
	CUresult cr;

	if (c->nev) {
		ev = c->ev[--c->nev];
	} else {
		push(c);
		cr = c->cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
		pop(c);
		if (cr)
			return CU_FAIL("cuEventCreate", cr);
	}
	push(c);
	cr = c->cu->cuEventRecord(ev, (CUstream)stream);
	if (cr)
		c->cu->cuEventDestroy(ev);
	pop(c);
	if (cr)
		return CU_FAIL("cuEventRecord", cr);
	*fence = ev;
	return 0;
}

static int cuda_fence_query(void *be, void *fence)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuEventQuery((CUevent)fence);
	pop(c);
	if (cr == CUDA_SUCCESS)
		return 1;
	if (cr == CUDA_ERROR_NOT_READY)
		return 0;
	return CU_FAIL("cuEventQuery", cr);
}

static int cuda_fence_wait(void *be, void *fence)
{
	struct cuda_be *c = be;
	CUresult cr;

	push(c);
	cr = c->cu->cuEventSynchronize((CUevent)fence);
	pop(c);
	return cr ? CU_FAIL("cuEventSynchronize", cr) : 0;
}

static void cuda_fence_free(void *be, void *fence)
{
	struct cuda_be *c = be;

	if (c->nev == c->evalloc) {
		size_t n = c->evalloc ? c->evalloc * 2 : 64;
		CUevent *p = realloc(c->ev, n * sizeof(*p));

		if (!p) {
			push(c);
			c->cu->cuEventDestroy((CUevent)fence);
			pop(c);
			return;
		}
		c->ev = p;
		c->evalloc = n;
	}
	c->ev[c->nev++] = (CUevent)fence;
}

const struct nxq_be_ops nxq__cuda_be_ops = {
	.name = "cuda",
	.open = cuda_open,
	.close = cuda_close,
	.reserve = cuda_reserve,
	.unreserve = cuda_unreserve,
	.create = cuda_create,
	.release = cuda_release,
	.map = cuda_map,
	.set_access = cuda_set_access,
	.unmap = cuda_unmap,
	.quiesce = cuda_quiesce,
	.fence_record = cuda_fence_record,
	.fence_query = cuda_fence_query,
	.fence_wait = cuda_fence_wait,
	.fence_free = cuda_fence_free,
};
