/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The fake libcuda.so.1's shared state (fakecuda.c says what it models).
 * One lock, fc_mu, guards everything in struct fakecuda and every list
 * hanging off it; a thread's context stack is its own (thread-local) and
 * takes no lock.  Entry points take fc_mu through ENTER() and drop it
 * through LEAVE(); one that calls another entry point (nesting through
 * the exported symbol, as a driver may) drops it first, so a preloaded
 * wrapper of the inner one may call back into the driver.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_ALREADY_MAPPED	208
#define CUDA_ERROR_INVALID_HANDLE	400
#define CUDA_ERROR_NOT_FOUND		500
#define CUDA_ERROR_ILLEGAL_ADDRESS	700

#define MAXDEV	4		/* $FAKECUDA_DEVICES at most */
#define MAXOPS	4096		/* work queued on one held stream */
#define GRAN	(2ULL << 20)	/* the allocation granularity */
#define CHUNK	(32ULL << 20)	/* a pool's reservation step */

typedef struct CUmemPoolHandle_st *CUmemoryPool;	/* as preload/preload.h */

/* A context: a device's primary one (fc.prim[]) or one of cuCtxCreate's. */
struct CUctx_st {
	int dev;
	int primary;
	int dead;		/* cuCtxDestroy'd (kept: stacks may still name it) */
	int sticky;		/* the error every call returns after a device fault */
	struct CUctx_st *next;	/* fc.created */
};

/* A memory pool: a device's default one (fc.defpool[]) or cuMemPoolCreate's. */
struct CUmemPoolHandle_st {
	int dev, live;
	uint64_t reserved, used, threshold;
	struct CUmemPoolHandle_st *next;	/* fc.pools (created ones) */
};

/* Device memory behind a pointer: cuMemAlloc, cuMemAllocManaged, a pool's block. */
enum { A_PLAIN, A_MANAGED, A_POOL };
enum { B_LIVE, B_QUEUED, B_PENDING };	/* a pool block: in use, free queued, freed unobserved */
struct alloc {
	uint64_t va, size;
	int kind, dev, state;
	CUmemoryPool pool;
	struct CUstream_st *stream;	/* a pool block's free: the stream it ran on */
	struct alloc *next;
};

/* A cuMemCreate handle: an extent of the memfd; dev -1 for host memory. */
struct handle {
	uint64_t off, size;
	int dev, maps, released;
	struct handle *next;
};

struct mapping {
	uint64_t va, size;
	struct handle *h;
	int access;
	struct mapping *next;
};

struct resv {
	uint64_t va, size;
	struct resv *next;
};

enum { OP_NONE, OP_SET, OP_TO_HOST, OP_EVENT, OP_FREE };
struct op {
	int kind;
	uint64_t va, n;
	unsigned char val;
	void *host;
	struct CUevent_st *ev;
	long seq;
};

struct CUstream_st {
	int held, dev, nops;
	struct op ops[MAXOPS];
	struct CUstream_st *next;	/* fc.streams */
};

struct CUevent_st { long seq, done; struct CUstream_st *st; };

struct fakecuda {
	int inited;			/* cuInit called */
	int ndev, novmm;
	uint64_t capacity;		/* each device's memory */
	uint64_t ctx_bytes, env_ctx_bytes;	/* what a context takes */
	int implicit, env_implicit;	/* primary contexts up without a retain */
	uint64_t noise_bytes;		/* a neighbour's take as a context comes up */
	uint64_t mine[MAXDEV];		/* what this process takes of each device */
	uint64_t others[MAXDEV];	/* what those neighbours hold */
	struct shm_slot *shm, *myslot;	/* $FAKECUDA_SHM */
	int prim_ref[MAXDEV];
	struct CUctx_st prim[MAXDEV];
	struct CUctx_st *created;
	int memfd;
	uint64_t next_off;
	struct alloc *allocs;
	struct handle *handles;
	struct mapping *maps;
	struct resv *resvs;
	struct CUmemPoolHandle_st defpool[MAXDEV];
	struct CUmemPoolHandle_st *pools;
	struct CUstream_st legacy[MAXDEV];	/* each device's default stream */
	struct CUstream_st *streams;	/* created ones */
	long faults;
	void (*sync_hook)(void);
};

extern struct fakecuda fc HIDDEN;
extern pthread_mutex_t fc_mu HIDDEN;

void fc_init(void) HIDDEN;
int fc_inject(const char *name, int *slot) HIDDEN;
struct CUctx_st *fc_cur(void) HIDDEN;
int fc_ctx_ok(const struct CUctx_st *c) HIDDEN;
void fc_set_current(struct CUctx_st *c) HIDDEN;
void fc_prim_down(int d) HIDDEN;

/* fakecuda_mem.c */
void fc_mem_init(const char *shm) HIDDEN;
uint64_t fc_dev_used(int d) HIDDEN;
int fc_mem_take(int d, int64_t delta) HIDDEN;
CUresult fc_alloc_new(int kind, uint64_t size, int dev, CUmemoryPool pool, CUdeviceptr *out) HIDDEN;
void fc_alloc_free(struct alloc *a) HIDDEN;
struct alloc *fc_alloc_at(uint64_t va) HIDDEN;
int fc_accessible(uint64_t va, uint64_t n) HIDDEN;

/* fakecuda_stream.c */
struct CUstream_st *fc_stream_of(CUstream s) HIDDEN;
void fc_submit(struct CUstream_st *st, struct op o) HIDDEN;
void fc_drain(struct CUstream_st *st) HIDDEN;
void fc_drain_dev(int dev) HIDDEN;

/* fakecuda_pool.c */
void fc_pool_run_free(struct CUstream_st *st, uint64_t va) HIDDEN;
void fc_sync_pools(int dev, struct CUstream_st *st) HIDDEN;
void fc_pools_reset(void) HIDDEN;

/*
 * Every entry point: the driver initialised for the process's tests, the
 * lock, the call counted under its own (exported) name, maybe failed.
 */
#define ENTER() \
	static int slot_ = -1;	/* its counter's index, once known (under fc_mu) */ \
	int inj_; \
	fc_init(); \
	pthread_mutex_lock(&fc_mu); \
	if ((inj_ = fc_inject(__func__, &slot_)) != 0) { pthread_mutex_unlock(&fc_mu); return inj_; }
#define LEAVE(r) do { CUresult r_ = (r); pthread_mutex_unlock(&fc_mu); return r_; } while (0)
#define NEED_INIT() do { if (!fc.inited) LEAVE(CUDA_ERROR_NOT_INITIALIZED); } while (0)
#define NEED_CTX() do { \
	NEED_INIT(); \
	if (!fc_ctx_ok(fc_cur())) \
		LEAVE(CUDA_ERROR_INVALID_CONTEXT); \
	if (fc_cur()->sticky) \
		LEAVE(fc_cur()->sticky); \
} while (0)
#define VALID_DEV(d) ((d) >= 0 && (d) < fc.ndev)

/*
 * The entry points (the exported names, as libcuda.so.1 has them), and
 * their local aliases: what cuGetProcAddress hands out is the driver's
 * own code, not whatever a preloaded library put in front of the name.
 */
#define FC_ENTRIES(X) \
	X(CUresult, cuInit, (unsigned int)) \
	X(CUresult, cuDriverGetVersion, (int *)) \
	X(CUresult, cuDeviceGetCount, (int *)) \
	X(CUresult, cuDeviceGet, (CUdevice *, int)) \
	X(CUresult, cuDeviceGetAttribute, (int *, int, CUdevice)) \
	X(CUresult, cuDeviceGetUuid_v2, (CUuuid *, CUdevice)) \
	X(CUresult, cuDeviceTotalMem_v2, (size_t *, CUdevice)) \
	X(CUresult, cuDeviceTotalMem, (unsigned int *, CUdevice)) \
	X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice)) \
	X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice)) \
	X(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice)) \
	X(CUresult, cuDevicePrimaryCtxGetState, (CUdevice, unsigned int *, int *)) \
	X(CUresult, cuCtxCreate_v2, (CUcontext *, unsigned int, CUdevice)) \
	X(CUresult, cuCtxCreate_v3, (CUcontext *, void *, int, unsigned int, CUdevice)) \
	X(CUresult, cuCtxCreate_v4, (CUcontext *, void *, unsigned int, CUdevice)) \
	X(CUresult, cuCtxDestroy_v2, (CUcontext)) \
	X(CUresult, cuCtxPushCurrent_v2, (CUcontext)) \
	X(CUresult, cuCtxPopCurrent_v2, (CUcontext *)) \
	X(CUresult, cuCtxSetCurrent, (CUcontext)) \
	X(CUresult, cuCtxGetCurrent, (CUcontext *)) \
	X(CUresult, cuCtxGetDevice, (CUdevice *)) \
	X(CUresult, cuCtxSynchronize, (void)) \
	X(CUresult, cuGetErrorName, (CUresult, const char **)) \
	X(CUresult, cuMemGetInfo_v2, (size_t *, size_t *)) \
	X(CUresult, cuMemGetInfo, (unsigned int *, unsigned int *)) \
	X(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t)) \
	X(CUresult, cuMemAllocPitch_v2, (CUdeviceptr *, size_t *, size_t, size_t, unsigned int)) \
	X(CUresult, cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned int)) \
	X(CUresult, cuMemFree_v2, (CUdeviceptr)) \
	X(CUresult, cuMemGetAllocationGranularity, (size_t *, const CUmemAllocationProp *, int)) \
	X(CUresult, cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, \
					  unsigned long long)) \
	X(CUresult, cuMemAddressFree, (CUdeviceptr, size_t)) \
	X(CUresult, cuMemCreate, (CUmemGenericAllocationHandle *, size_t, \
				  const CUmemAllocationProp *, unsigned long long)) \
	X(CUresult, cuMemRelease, (CUmemGenericAllocationHandle)) \
	X(CUresult, cuMemMap, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, \
			       unsigned long long)) \
	X(CUresult, cuMemUnmap, (CUdeviceptr, size_t)) \
	X(CUresult, cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)) \
	X(CUresult, cuEventCreate, (CUevent *, unsigned int)) \
	X(CUresult, cuEventRecord, (CUevent, CUstream)) \
	X(CUresult, cuEventQuery, (CUevent)) \
	X(CUresult, cuEventSynchronize, (CUevent)) \
	X(CUresult, cuEventDestroy_v2, (CUevent)) \
	X(CUresult, cuStreamCreate, (CUstream *, unsigned int)) \
	X(CUresult, cuStreamDestroy_v2, (CUstream)) \
	X(CUresult, cuStreamSynchronize, (CUstream)) \
	X(CUresult, cuStreamGetDevice, (CUstream, CUdevice *)) \
	X(CUresult, cuMemsetD8_v2, (CUdeviceptr, unsigned char, size_t)) \
	X(CUresult, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream)) \
	X(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t)) \
	X(CUresult, cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t)) \
	X(CUresult, cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream)) \
	X(CUresult, cuDeviceGetMemPool, (CUmemoryPool *, CUdevice)) \
	X(CUresult, cuDeviceGetDefaultMemPool, (CUmemoryPool *, CUdevice)) \
	X(CUresult, cuMemPoolCreate, (CUmemoryPool *, const int *)) \
	X(CUresult, cuMemPoolDestroy, (CUmemoryPool)) \
	X(CUresult, cuMemPoolGetAttribute, (CUmemoryPool, int, void *)) \
	X(CUresult, cuMemPoolSetAttribute, (CUmemoryPool, int, void *)) \
	X(CUresult, cuMemPoolTrimTo, (CUmemoryPool, size_t)) \
	X(CUresult, cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
	X(CUresult, cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
	X(CUresult, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream)) \
	X(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr *, size_t, CUstream)) \
	X(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream)) \
	X(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr, CUstream)) \
	X(CUresult, cuGetProcAddress_v2, (const char *, void **, int, uint64_t, int *)) \
	X(CUresult, cuGetProcAddress, (const char *, void **, int, uint64_t))

#define FC_DECLARE(ret, name, args) \
	EXPORT ret name args; \
	extern ret l_##name args HIDDEN;
FC_ENTRIES(FC_DECLARE)
#undef FC_DECLARE

/* After an entry point's definition, in its file: its local alias. */
#define LOCAL(name) extern __typeof(name) l_##name __attribute__((alias(#name)));

#endif /* FAKECUDA_H */
