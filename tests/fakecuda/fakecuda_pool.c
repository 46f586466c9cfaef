// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The fake driver's memory pools and stream-ordered allocation
 * (fakecuda.c has the whole model).  Each device has its default pool
 * (fc.defpool[d], also its current one); cuMemPoolCreate adds pools
 * (fc.pools, kept after cuMemPoolDestroy, dead, so that tests can read
 * their counters).
 *
 * As the driver's: a pool reserves device memory in 32 MiB chunks and
 * keeps what it reserved until cuMemPoolTrimTo, or a synchronisation,
 * which trims it to its release threshold (CU_MEMPOOL_ATTR_RELEASE_
 * THRESHOLD, default 0).  cuMemFreeAsync only enqueues the free on its
 * stream; once the stream runs it the block is free on the device, but
 * still used (not reusable, not trimmable) until the host observes it: a
 * synchronisation of that stream or of its device (cuStreamSynchronize,
 * cuCtxSynchronize, fakecuda_sync(): every device), or an allocation on
 * the same stream, which may reuse it at once (stream order).
 * cuMemAllocAsync takes the current pool of the stream's device, not of
 * the calling thread's.  A block is host pages, as a pointer
 * (fakecuda_mem.c).  Everything here is under fc_mu.
 */
#include "fakecuda.h"

/* CUmemPool_attribute */
#define ATTR_RELEASE_THRESHOLD	4
#define ATTR_RESERVED_CURRENT	5
#define ATTR_USED_CURRENT	7

static int pool_dev_ok(CUmemoryPool p)
{
	return p && p->dev >= 0 && p->dev < MAXDEV;
}

/* Give back what p reserves above max(used, keep), in whole chunks. */
static void trim(CUmemoryPool p, uint64_t keep)
{
	uint64_t floor = p->used > keep ? p->used : keep;

	if (floor >= p->reserved)
		return;
	floor = (floor + CHUNK - 1) / CHUNK * CHUNK;
	if (p->reserved > floor) {
		fc_mem_take(p->dev, -(int64_t)(p->reserved - floor));
		p->reserved = floor;
	}
}

/* The free of a block reached on its stream: free on the device, not seen yet. */
void fc_pool_run_free(struct CUstream_st *st, uint64_t va)
{
	for (struct alloc *a = fc.allocs; a; a = a->next)
		if (a->va == va && a->kind == A_POOL && a->state == B_QUEUED) {
			a->state = B_PENDING;
			a->stream = st;
			return;
		}
}

/*
 * Frees seen complete: those run on stream st (NULL: on any of device
 * dev's; dev -1: any), of pool p (NULL: any).
 */
static void complete(int dev, struct CUstream_st *st, CUmemoryPool p)
{
	struct alloc *a, *next;

	for (a = fc.allocs; a; a = next) {
		next = a->next;
		if (a->state == B_PENDING && (!p || a->pool == p) &&
		    (st ? a->stream == st : dev < 0 || a->stream->dev == dev))
			fc_alloc_free(a);
	}
}

/* A synchronisation: the frees it sees complete, then dev's pools down to their thresholds. */
void fc_sync_pools(int dev, struct CUstream_st *st)
{
	complete(dev, st, NULL);
	for (int d = 0; d < MAXDEV; d++)
		if (dev < 0 || d == dev)
			trim(&fc.defpool[d], fc.defpool[d].threshold);
	for (CUmemoryPool p = fc.pools; p; p = p->next)
		if (p->live && (dev < 0 || p->dev == dev))
			trim(p, p->threshold);
}

/* fakecuda_reset(): queued work run, every free complete, default pools at no threshold, trimmed. */
void fc_pools_reset(void)
{
	for (int d = 0; d < MAXDEV; d++)
		fc.legacy[d].held = 0;
	for (struct CUstream_st *s = fc.streams; s; s = s->next)
		s->held = 0;
	fc_drain_dev(-1);
	fc_sync_pools(-1, NULL);
	for (int d = 0; d < MAXDEV; d++) {
		fc.defpool[d].threshold = 0;
		trim(&fc.defpool[d], 0);
	}
}

/* ---- pools ---- */

/*
 * A device's default pool: what both entry points answer (nothing here
 * sets a device's current pool to another).  Called with fc_mu held.
 */
static CUresult default_pool(CUmemoryPool *p, CUdevice d)
{
	if (!fc.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!VALID_DEV(d))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	*p = &fc.defpool[d];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *p, CUdevice d)
{
	ENTER();
	LEAVE(default_pool(p, d));
}
LOCAL(cuDeviceGetMemPool)

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice d)
{
	ENTER();
	LEAVE(default_pool(p, d));
}
LOCAL(cuDeviceGetDefaultMemPool)

/* props: CUmemPoolProps, whose location.id (int 3) is the device. */
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *p, const int *props)
{
	CUmemoryPool f;

	ENTER();
	NEED_INIT();
	if (!p || !props || props[2] != CU_MEM_LOCATION_TYPE_DEVICE || !VALID_DEV(props[3]))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	f = calloc(1, sizeof(*f));
	if (!f)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	f->dev = props[3];
	f->live = 1;
	f->next = fc.pools;
	fc.pools = f;
	*p = f;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemPoolCreate)

/* Its reservation back to the device (its blocks' frees still complete later). */
EXPORT CUresult cuMemPoolDestroy(CUmemoryPool p)
{
	ENTER();
	NEED_INIT();
	if (!pool_dev_ok(p) || !p->live || (p >= fc.defpool && p < fc.defpool + MAXDEV))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	p->live = 0;
	fc_mem_take(p->dev, -(int64_t)p->reserved);
	p->reserved = 0;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemPoolDestroy)

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *v)
{
	ENTER();
	NEED_INIT();
	if (!pool_dev_ok(p) || !v)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (attr == ATTR_RELEASE_THRESHOLD)
		*(uint64_t *)v = p->threshold;
	else if (attr == ATTR_RESERVED_CURRENT)
		*(uint64_t *)v = p->reserved;
	else if (attr == ATTR_USED_CURRENT)
		*(uint64_t *)v = p->used;
	else
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemPoolGetAttribute)

/* The release threshold only: what PyTorch sets (UINT64_MAX). */
EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *v)
{
	ENTER();
	NEED_INIT();
	if (!pool_dev_ok(p) || !v || attr != ATTR_RELEASE_THRESHOLD)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	p->threshold = *(uint64_t *)v;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemPoolSetAttribute)

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	ENTER();
	NEED_INIT();
	if (!pool_dev_ok(p))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	trim(p, keep);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemPoolTrimTo)

/* ---- stream-ordered allocation ---- */

/* A block of p for stream s: what s freed is reused first; the pool grows in chunks. */
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dp, size_t n, CUmemoryPool p, CUstream s)
{
	uint64_t size = (n + 511) / 512 * 512;
	CUresult r;

	ENTER();
	NEED_CTX();
	if (!dp || !n || !pool_dev_ok(p) || !p->live)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	complete(-1, fc_stream_of(s), p);	/* stream order: what s freed of p is free */
	if (p->used + size > p->reserved) {
		uint64_t grow = (p->used + size - p->reserved + CHUNK - 1) / CHUNK * CHUNK;

		if (fc_mem_take(p->dev, (int64_t)grow))
			LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
		p->reserved += grow;
	}
	r = fc_alloc_new(A_POOL, size, p->dev, p, dp);
	if (!r)
		p->used += size;
	LEAVE(r);
}
LOCAL(cuMemAllocFromPoolAsync)

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dp, size_t n, CUmemoryPool p,
					     CUstream s)
{
	ENTER();
	pthread_mutex_unlock(&fc_mu);
	return cuMemAllocFromPoolAsync(dp, n, p, s);
}
LOCAL(cuMemAllocFromPoolAsync_ptsz)

/* The current pool of the stream's device (not the current device's), through the exported symbol. */
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dp, size_t n, CUstream s)
{
	CUmemoryPool p;

	ENTER();
	NEED_CTX();
	p = &fc.defpool[fc_stream_of(s)->dev];
	pthread_mutex_unlock(&fc_mu);
	return cuMemAllocFromPoolAsync(dp, n, p, s);
}
LOCAL(cuMemAllocAsync)

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dp, size_t n, CUstream s)
{
	ENTER();
	pthread_mutex_unlock(&fc_mu);
	return cuMemAllocAsync(dp, n, s);
}
LOCAL(cuMemAllocAsync_ptsz)

/* Enqueued on s: the block stays used until a synchronisation sees it done. */
EXPORT CUresult cuMemFreeAsync(CUdeviceptr va, CUstream s)
{
	struct alloc *a;

	ENTER();
	NEED_CTX();
	a = fc_alloc_at(va);
	if (!a || a->va != va || a->kind != A_POOL || a->state != B_LIVE)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	a->state = B_QUEUED;
	fc_submit(fc_stream_of(s), (struct op){ .kind = OP_FREE, .va = va });
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemFreeAsync)

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr va, CUstream s)
{
	ENTER();
	pthread_mutex_unlock(&fc_mu);
	return cuMemFreeAsync(va, s);
}
LOCAL(cuMemFreeAsync_ptsz)

/* ---- control ---- */

/* A pool's counters: what it reserves of its device, what its blocks use of that. */
EXPORT void fakecuda_pool(CUmemoryPool p, uint64_t *reserved, uint64_t *used)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	*reserved = p->reserved;
	*used = p->used;
	pthread_mutex_unlock(&fc_mu);
}

/* A synchronisation of every device: queued work runs, every free is seen complete. */
EXPORT void fakecuda_sync(void)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc_drain_dev(-1);
	fc_sync_pools(-1, NULL);
	pthread_mutex_unlock(&fc_mu);
}
