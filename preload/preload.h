/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libnxquota-preload: the wrapped CUDA driver entry points (declared from
 * NVIDIA's public driver API documentation, same ABI as cuda.h), and the
 * hooks the tests use (hidden: not exported by libnxquota-preload.so).
 */
#ifndef NXQ_PRELOAD_H
#define NXQ_PRELOAD_H

#include <stdint.h>
#include "cuda_api.h"

struct nxq_kops;

typedef struct CUmemPoolHandle_st *CUmemoryPool;
/* The head of CUmemPoolProps: what the shim reads of it. */
typedef struct {
	int allocType;
	int handleTypes;
	CUmemLocation location;
} nxqp_pool_props_head;

/* NVML's memory info (nvml.h's layouts). */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NXQP_NVML_MEMORY_V2	((unsigned int)(sizeof(nvmlMemory_v2_t) | (2U << 24)))
/* nvmlDeviceGetComputeRunningProcesses_v3's entries */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;	/* ~0ULL: not available */
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* cuCtxCreate_v3's and _v4's parameters: passed on, never read. */
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;

/*
 * Every exported wrapper, by the driver's (or NVML's) exported symbol
 * name; the NVML ones last (from NXQP_FIRST_NVML on).
 */
#define NXQP_WRAPPED(X)							\
	X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged)		\
	X(cuMemFree_v2) X(cuMemCreate) X(cuMemRelease)				\
	X(cuMemMap) X(cuMemUnmap)						\
	X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)				\
	X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz)		\
	X(cuMemPoolTrimTo) X(cuMemPoolCreate) X(cuMemPoolDestroy)		\
	X(cuMemGetInfo) X(cuMemGetInfo_v2) X(cuDeviceTotalMem) X(cuDeviceTotalMem_v2)	\
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)		\
	X(cuDevicePrimaryCtxReset_v2)						\
	X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy_v2)	\
	X(cuGetProcAddress) X(cuGetProcAddress_v2)				\
	X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2)
#define NXQP_FIRST_NVML	R_nvmlDeviceGetMemoryInfo

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
			    unsigned int elem);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr va, size_t size);
CUresult cuMemGetInfo(unsigned int *free, unsigned int *total);
CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags,
			CUdevice dev);
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
			CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem);
int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
				      CUstream s);
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const nxqp_pool_props_head *props);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags);
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status);

/*
 * Exported: between nxquota_preload_exempt(1) and (0), this thread's
 * dlsym() and cuGetProcAddress() give the driver's own entry points (for a
 * library that charges its own mappings; find it with
 * dlsym(RTLD_DEFAULT, "nxquota_preload_exempt"): absent without the shim).
 */
void nxquota_preload_exempt(int on);

/*
 * Exported: how many charges and uncharges this process sent to the
 * authority so far (bench_preload prints it per allocation/free pair).
 */
uint64_t nxquota_preload_authority_trips(void);

/* What the shim did, for the tests. */
struct nxqp_counters {
	uint64_t holders;	/* holders registered */
	uint64_t charges;	/* charges granted */
	uint64_t uncharges;
	uint64_t refused;	/* allocations refused (CUDA_ERROR_OUT_OF_MEMORY) */
	uint64_t tickets, answers, answered_bytes;
	uint64_t trips;		/* charges and uncharges sent to the authority */
	uint64_t py_calls;	/* torch.cuda.empty_cache() callbacks run (a PyTorch process) */
	uint64_t py_late;	/* plain-holder tickets answered before their callback ran */
	uint64_t clamped;	/* memory queries (cuMemGetInfo, cuDeviceTotalMem, NVML) answered with the budget */
	uint64_t said;		/* refusal lines written */
	uint64_t ctx_bytes;	/* charged for contexts (now) */
	uint64_t ctx_unmeasured;	/* contexts that could not be measured */
	uint64_t ctx_bounded;	/* measured above NXQUOTA_CONTEXT_MAX, charged at it */
	long tracked;		/* pointers, handles, mappings and contexts remembered */
	/* issue 32: an authority that answers late */
	uint64_t looks;		/* the connector's looks for an authority (each a connect) */
	uint64_t caught_up;	/* bytes charged at the catch-up */
	uint64_t repaid;	/* owed bytes charged later (with a charge, or in the background) */
	uint64_t owed;		/* bytes owed now (plain and context holders, all devices) */
};

/* Start over on kops (NULL: the library's own choice of authority). */
void nxqp__test_authority(const struct nxq_kops *kops, void *kpriv);
void nxqp__test_counters(struct nxqp_counters *c);
int nxqp__test_state(void);	/* 0 not yet, 1 charging, -1 pass-through, -2 down */
/* The last refusal line written (empty if none). */
const char *nxqp__test_last_said(void);
/* 1: measure contexts as if NVML were absent (the driver only). */
void nxqp__test_no_nvml(int on);
/* The gap (1 s) between two refusal lines of a device, two looks for an authority. */
void nxqp__test_gap(uint64_t ns);

#endif /* NXQ_PRELOAD_H */
