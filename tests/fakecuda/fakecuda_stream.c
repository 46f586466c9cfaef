// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The fake driver's streams, events and device work (fakecuda.c has the
 * whole model).  Each device has its default stream (fc.legacy[d]: the
 * NULL, legacy and per-thread handles of a context of that device);
 * cuStreamCreate adds one of the current context's device (fc.streams,
 * until cuStreamDestroy_v2).
 *
 * A stream runs its work at once unless held (fakecuda_hold()): then the
 * work queues, and runs when the stream is released or synchronised, or
 * an event recorded after it is waited for.  Work that touches memory not
 * mapped read-write when it runs is a device fault: counted, and the
 * device's primary context's sticky error (CUDA_ERROR_ILLEGAL_ADDRESS)
 * from then on.  A synchronisation also lets the host see the stream's
 * pool frees complete (fakecuda_pool.c).  Everything here is under fc_mu
 * but the cuCtxSynchronize hook.
 */
#include "fakecuda.h"

#include <sys/mman.h>


/* The stream a handle names: a created one, or the current context's device's default. */
struct CUstream_st *fc_stream_of(CUstream s)
{
	struct CUctx_st *c;

	if (s && s != (CUstream)1 && s != (CUstream)2)
		return s;
	c = fc_cur();
	return &fc.legacy[c ? c->dev : 0];
}

static void fault(int dev)
{
	fc.faults++;
	fc.prim[dev].sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
}

static void run_op(struct CUstream_st *st, struct op *o)
{
	switch (o->kind) {
	case OP_SET:
		if (!fc_accessible(o->va, o->n))
			fault(st->dev);
		else
			memset((void *)(uintptr_t)o->va, o->val, o->n);
		break;
	case OP_TO_HOST:
		if (!fc_accessible(o->va, o->n))
			fault(st->dev);
		else
			memcpy(o->host, (void *)(uintptr_t)o->va, o->n);
		break;
	case OP_EVENT:
		if (o->ev->done < o->seq)
			o->ev->done = o->seq;
		break;
	case OP_FREE:
		fc_pool_run_free(st, o->va);
		break;
	}
}

void fc_drain(struct CUstream_st *st)
{
	for (int i = 0; i < st->nops; i++)
		run_op(st, &st->ops[i]);
	st->nops = 0;
}

/* Every stream of device dev (-1: every device's). */
void fc_drain_dev(int dev)
{
	for (int d = 0; d < MAXDEV; d++)
		if (dev < 0 || d == dev)
			fc_drain(&fc.legacy[d]);
	for (struct CUstream_st *s = fc.streams; s; s = s->next)
		if (dev < 0 || s->dev == dev)
			fc_drain(s);
}

void fc_submit(struct CUstream_st *st, struct op o)
{
	if (st->held && st->nops < MAXOPS) {
		st->ops[st->nops++] = o;
		return;
	}
	fc_drain(st);
	run_op(st, &o);
}

/* ---- synchronisation ---- */

/* The current context's device: its streams' work, its pool frees seen complete. */
EXPORT CUresult cuCtxSynchronize(void)
{
	void (*hook)(void);
	CUresult r;
	int dev;

	{
		ENTER();
		NEED_CTX();
		dev = fc_cur()->dev;
		fc_drain_dev(dev);
		fc_sync_pools(dev, NULL);
		r = fc_cur()->sticky;
		hook = fc.sync_hook;
		pthread_mutex_unlock(&fc_mu);
	}
	if (hook)
		hook();		/* outside the lock: it may call anything */
	return r;
}
LOCAL(cuCtxSynchronize)

/*
 * A created stream: its work, its pool frees; a default one (the current
 * context's): its device's, as the legacy stream waits for the others.
 */
EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	struct CUstream_st *st;

	ENTER();
	if (s && s != (CUstream)1 && s != (CUstream)2) {
		NEED_INIT();
		st = s;
		fc_drain(st);
		fc_sync_pools(st->dev, st);
		LEAVE(fc.prim[st->dev].sticky);
	}
	NEED_CTX();
	fc_drain_dev(fc_cur()->dev);
	fc_sync_pools(fc_cur()->dev, NULL);
	LEAVE(fc_cur()->sticky);
}
LOCAL(cuStreamSynchronize)

/* ---- streams ---- */

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	struct CUstream_st *st;

	ENTER();
	NEED_CTX();
	if (!s)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	st = calloc(1, sizeof(*st));
	if (!st)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	st->dev = fc_cur()->dev;
	st->next = fc.streams;
	fc.streams = st;
	*s = st;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuStreamCreate)

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	struct CUstream_st **pp;

	ENTER();
	NEED_INIT();
	for (pp = &fc.streams; *pp && *pp != s; pp = &(*pp)->next)
		;
	if (!*pp)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	fc_drain(s);
	fc_sync_pools(s->dev, s);
	*pp = s->next;
	free(s);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuStreamDestroy_v2)

/* A created stream's device; a default one's is the current context's. */
EXPORT CUresult cuStreamGetDevice(CUstream s, CUdevice *d)
{
	ENTER();
	NEED_INIT();
	if (!d)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (s && s != (CUstream)1 && s != (CUstream)2) {
		*d = s->dev;
		LEAVE(CUDA_SUCCESS);
	}
	NEED_CTX();
	*d = fc_cur()->dev;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuStreamGetDevice)

/* ---- events ---- */

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	ENTER();
	NEED_CTX();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*e = calloc(1, sizeof(**e));
	LEAVE(*e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
}
LOCAL(cuEventCreate)

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	struct CUstream_st *st;

	ENTER();
	NEED_CTX();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	st = fc_stream_of(s);
	/* a later record replaces an earlier one still queued */
	e->st = st;
	e->seq++;
	fc_submit(st, (struct op){ .kind = OP_EVENT, .ev = e, .seq = e->seq });
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuEventRecord)

EXPORT CUresult cuEventQuery(CUevent e)
{
	ENTER();
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	LEAVE(e->done < e->seq ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS);
}
LOCAL(cuEventQuery)

/* The device gets there eventually: the stream's work up to it runs. */
EXPORT CUresult cuEventSynchronize(CUevent e)
{
	ENTER();
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	if (e->done < e->seq && e->st)
		fc_drain(e->st);
	e->done = e->seq;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuEventSynchronize)

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	ENTER();
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	for (int d = 0; d < MAXDEV; d++)
		for (int i = 0; i < fc.legacy[d].nops; i++)
			if (fc.legacy[d].ops[i].kind == OP_EVENT && fc.legacy[d].ops[i].ev == e)
				fc.legacy[d].ops[i].kind = OP_NONE;
	for (struct CUstream_st *s = fc.streams; s; s = s->next)
		for (int i = 0; i < s->nops; i++)
			if (s->ops[i].kind == OP_EVENT && s->ops[i].ev == e)
				s->ops[i].kind = OP_NONE;
	free(e);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuEventDestroy_v2)

/* ---- memset, copies ---- */

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr va, unsigned char v, size_t n)
{
	struct CUstream_st *st;

	ENTER();
	NEED_CTX();
	st = fc_stream_of(NULL);
	fc_drain(st);
	fc_submit(st, (struct op){ .kind = OP_SET, .va = va, .n = n, .val = v });
	LEAVE(fc_cur()->sticky);
}
LOCAL(cuMemsetD8_v2)

EXPORT CUresult cuMemsetD8Async(CUdeviceptr va, unsigned char v, size_t n, CUstream s)
{
	ENTER();
	NEED_CTX();
	fc_submit(fc_stream_of(s), (struct op){ .kind = OP_SET, .va = va, .n = n, .val = v });
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemsetD8Async)

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr va, const void *src, size_t n)
{
	ENTER();
	NEED_CTX();
	fc_drain(fc_stream_of(NULL));
	if (!fc_accessible(va, n)) {
		fault(fc_cur()->dev);
		LEAVE(CUDA_ERROR_ILLEGAL_ADDRESS);
	}
	memcpy((void *)(uintptr_t)va, src, n);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemcpyHtoD_v2)

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr va, size_t n)
{
	struct CUstream_st *st;

	ENTER();
	NEED_CTX();
	st = fc_stream_of(NULL);
	fc_drain(st);
	fc_submit(st, (struct op){ .kind = OP_TO_HOST, .va = va, .n = n, .host = dst });
	LEAVE(fc_cur()->sticky);
}
LOCAL(cuMemcpyDtoH_v2)

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr va, size_t n, CUstream s)
{
	ENTER();
	NEED_CTX();
	fc_submit(fc_stream_of(s), (struct op){ .kind = OP_TO_HOST, .va = va, .n = n,
						.host = dst });
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemcpyDtoHAsync_v2)

/* ---- control ---- */

/* Hold a stream's work (1), or release and run it (0); NULL: the current device's default. */
EXPORT void fakecuda_hold(CUstream s, int hold)
{
	struct CUstream_st *st;

	fc_init();
	pthread_mutex_lock(&fc_mu);
	st = fc_stream_of(s);
	st->held = hold;
	if (!hold)
		fc_drain(st);
	pthread_mutex_unlock(&fc_mu);
}

/* Run fn after every cuCtxSynchronize (outside the fake's lock); NULL: none. */
EXPORT void fakecuda_on_sync(void (*fn)(void))
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc.sync_hook = fn;
	pthread_mutex_unlock(&fc_mu);
}
