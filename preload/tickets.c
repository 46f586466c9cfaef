// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Tickets: the answers -- the pool holder's by trimming the device's
 * pools, the plain holder's through torch.c, the context holder's with
 * 0 -- and ticket_event(), the reactor's handler.
 *
 * Layer 6: calls torch.c, pool.c, charge.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- pressure tickets: trim the device's pools ---- */

/*
 * Let the driver see every stream-ordered free of device ord complete.
 * cuMemPoolTrimTo cannot give back memory whose cuMemFreeAsync has not
 * been observed complete by the host ("can count as outstanding", its
 * documentation says), and an application such as PyTorch's
 * cudaMallocAsync backend frees with cudaFreeAsync and need not
 * synchronise before it goes idle: without this, a ticket trims nothing
 * (what the H200 showed).  PyTorch's own emptyCache() synchronises the
 * device before its trim for the same reason.  The ticket thread has no
 * context: it borrows the device's primary context while the application
 * has it active (never creating one), synchronises it, keeps it current
 * for the trims (dev_sync_end() puts it back).
 * Returns 0 when synchronised.
 */
static int dev_sync(int ord, int *pushed)
{
	CUresult (*state)(CUdevice, unsigned int *, int *) =
		(CUresult (*)(CUdevice, unsigned int *, int *))R(R_cuDevicePrimaryCtxGetState);
	CUresult (*retain)(CUcontext *, CUdevice) =
		(CUresult (*)(CUcontext *, CUdevice))R(R_cuDevicePrimaryCtxRetain);
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	CUresult (*push)(CUcontext) = (CUresult (*)(CUcontext))R(R_cuCtxPushCurrent_v2);
	CUresult (*sync)(void) = (CUresult (*)(void))R(R_cuCtxSynchronize);
	unsigned int flags;
	CUcontext c;
	int active = 0;

	*pushed = 0;
	if (!state || !retain || !release || !push || !sync || !R(R_cuCtxPopCurrent_v2))
		return -1;
	if (state(ord, &flags, &active) || !active)
		return -1;
	if (retain(&c, ord))
		return -1;
	if (push(c)) {
		release(ord);
		return -1;
	}
	*pushed = 1;
	return sync() ? -1 : 0;
}

/* After dev_sync() and the trims: the borrowed context popped and released. */
static void dev_sync_end(int ord, int pushed)
{
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	CUresult (*pop)(CUcontext *) = (CUresult (*)(CUcontext *))R(R_cuCtxPopCurrent_v2);
	CUcontext old;

	if (!pushed)
		return;
	pop(&old);
	release(ord);
}

/* Trim every pool of ord to what it uses; the bytes uncharged-to-be. */
uint64_t pools_trim(int ord)
{
	CUresult (*trim)(CUmemoryPool, size_t) =
		(CUresult (*)(CUmemoryPool, size_t))R(R_cuMemPoolTrimTo);
	uint64_t released = 0, res;
	int pushed;

	if (!trim)
		return 0;
	/* the context stays current for the trims too (a driver may want one) */
	if (dev_sync(ord, &pushed))
		SAY_ONCE(S.said_sync, "cannot synchronise device %d's primary context: a "
			 "ticket gives back only the pool memory whose frees completed", ord);
	for (int i = 0; i < MAXPOOL; i++) {
		struct pool *p = &S.pool[i];

		if (!__atomic_load_n(&p->pool, __ATOMIC_ACQUIRE) || p->dev != ord)
			continue;
		/*
		 * A pool busy with an allocation for more than 10 ms (one that
		 * may be waiting for a grant this very ticket is part of) is
		 * skipped: the answer says what the others gave.
		 */
		int busy = pthread_mutex_trylock(&p->mu);

		for (int k = 0; busy && k < 20; k++) {
			usleep(500);
			busy = pthread_mutex_trylock(&p->mu);
		}
		if (busy)
			continue;
		if (p->pool && p->dev == ord) {
			depth++;
			trim(p->pool, 0);
			depth--;
			if (!pool_attr(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_, &res)) {
				p->reserved = res;
				if (res < p->charged) {
					released += p->charged - res;
					p->charged = res;
				}
			}
		}
		pthread_mutex_unlock(&p->mu);
	}
	dev_sync_end(ord, pushed);
	return released;
}

static void handle_plain_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt, released;
	int r;

	if (read(d->plevfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->holder, &t))) {
		CNT(tickets);
		released = py_release(ord, &t);
		r = S.ctx->kops->ticket_answer(S.ctx, d->holder, t.generation, released, NULL);
		if (r) {
			uncharge(d->holder, released);
			if (r == -ESTALE)
				continue;
			break;
		}
		CNT(answers);
		__atomic_add_fetch(&S.cnt.answered_bytes, released, __ATOMIC_RELAXED);
	}
}

static void handle_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt, released;
	int r;

	if (read(d->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->pholder, &t))) {
		CNT(tickets);
		plain_drop_credit(ord);
		released = pools_trim(ord);
		r = S.ctx->kops->ticket_answer(S.ctx, d->pholder, t.generation, released, NULL);
		if (r) {
			/* raised meanwhile (-ESTALE) or refused: the bytes are gone anyway */
			uncharge(d->pholder, released);
			if (r == -ESTALE)
				continue;
			break;
		}
		CNT(answers);
		__atomic_add_fetch(&S.cnt.answered_bytes, released, __ATOMIC_RELAXED);
	}
}

/* A ticket to a context holder: nothing of a context can be given back: 0. */
static void handle_ctx_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt;
	int r;

	if (read(d->cevfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->cholder, &t))) {
		CNT(tickets);
		r = S.ctx->kops->ticket_answer(S.ctx, d->cholder, t.generation, 0, NULL);
		if (r == -ESTALE)
			continue;
		if (r)
			break;
		CNT(answers);
	}
}

/*
 * S.on_ticket (set by the constructor, before any wrapper runs): the
 * eventfd of the holder dev_state() registered with this tag signalled.
 */
void ticket_event(uint32_t tag)
{
	if (tag >= 2 * MAXDEV)
		handle_ctx_tickets((int)(tag - 2 * MAXDEV));
	else if (tag >= MAXDEV)
		handle_plain_tickets((int)(tag - MAXDEV));
	else
		handle_tickets((int)tag);
}
