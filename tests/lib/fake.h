/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A fake kernel (struct nxq_kops) and a fake backend (struct nxq_be_ops)
 * for the cmocka tests.  The fake backend wraps the real host backend, so
 * allocations are real memory, and counts every call; either fake can be
 * told to fail its n-th call of one kind.  One global state; the fake
 * kernel's ops lock fk_mu (the library's pressure thread calls them too),
 * the backend's counters are only read by the tests once that thread is
 * idle (after an answer was seen).
 */
#ifndef NXQ_TEST_FAKE_H
#define NXQ_TEST_FAKE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* ---- fake kernel ---- */

/*
 * The fake kernel models holders (each with its charge and eventfd) and
 * pressure tickets: fk_ticket_open() opens or raises a holder's ticket and
 * adds 1 to its eventfd, as the module does; reads and answers follow the
 * ABI (EAGAIN without a ticket, ESTALE for another generation, an answer
 * uncharges what it says and closes the ticket) and are recorded.  A
 * waiting charge that does not fit opens a ticket on fk.wait_victim (if
 * set) and sleeps on fk_cv until answers or uncharges make room, or its
 * timeout passes (-ETIMEDOUT).  Every op takes fk_mu, because the
 * library's pressure thread calls in concurrently with the test.
 */
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define FK_HOLDERS	16
#define FK_ANSWERS	64

struct fk_holder {
	uint64_t id;
	int live, evfd;
	uint64_t charged;
	int open;			/* a ticket is open */
	uint64_t gen, bytes;
};

struct fk_answer {
	uint64_t holder, gen, released;
};

struct fake_kernel {
	uint64_t charged;		/* sum over holders */
	uint64_t cap;			/* 0 = none; EDQUOT above it */
	uint64_t reclaimable;
	int holders;
	int version_calls, register_calls, unregister_calls;
	int charge_calls, uncharge_calls, reclaim_calls;
	int fail_charge_at;		/* n-th charge call fails (1-based), 0 = never */
	int fail_err;
	int abi_version;		/* 0 = NXQ_ABI_VERSION */
	uint64_t features;		/* 0 = all */
	int errors;			/* ABI misuse seen */

	struct fk_holder h[FK_HOLDERS];
	uint64_t next_gen;
	int ticket_reads, ticket_eagain, stale, signals;
	struct fk_answer answers[FK_ANSWERS];
	int nanswers;
	uint64_t raise_on_read;		/* one shot: raise the ticket just read by this */
	int close_on_read;		/* one shot: close the ticket just read (asker gone) */
	int wait_charges;		/* charges made with NXQ_CHARGE_WAIT */
	uint64_t last_timeout_ns;
	uint64_t wait_victim;		/* holder ticketed by a waiting charge */
	void (*wait_hook)(void);	/* run (fk_mu dropped) when a charge starts waiting */
	pthread_t main;			/* the test's thread */
	int reclaim_calls_main;		/* SET_RECLAIMABLE made on the test's thread */
	int status_calls;		/* NXQ_IOC_STATUS (every field filled, version 1 too) */
	int kcalls_main;		/* every kernel op made on the test's thread */
};

static struct fake_kernel fk;
static pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cv;

static struct fk_holder *fk_find(uint64_t id)
{
	for (int i = 0; i < FK_HOLDERS; i++)
		if (fk.h[i].live && fk.h[i].id == id)
			return &fk.h[i];
	fk.errors++;
	return NULL;
}

static void fk_count_main(void)
{
	if (pthread_equal(pthread_self(), fk.main))
		fk.kcalls_main++;
}

/* Open (or raise) holder id's ticket by bytes and signal its eventfd; fk_mu held. */
static uint64_t fk_ticket_open_locked(uint64_t id, uint64_t bytes)
{
	struct fk_holder *h = fk_find(id);
	uint64_t one = 1;

	if (!h)
		return 0;
	if (h->open) {
		h->bytes += bytes;
	} else {
		h->open = 1;
		h->bytes = bytes;
	}
	h->gen = ++fk.next_gen;
	if (h->evfd >= 0) {
		if (write(h->evfd, &one, sizeof(one)) != sizeof(one))
			fk.errors++;
		fk.signals++;
	}
	return h->gen;
}

static inline uint64_t fk_ticket_open(uint64_t id, uint64_t bytes)
{
	uint64_t g;

	pthread_mutex_lock(&fk_mu);
	g = fk_ticket_open_locked(id, bytes);
	pthread_mutex_unlock(&fk_mu);
	return g;
}

/* Wait until at least n answers were recorded, up to ms; returns the count. */
static inline int fk_wait_answers(int n, int ms)
{
	struct timespec ts;
	int got;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fk_mu);
	while (fk.nanswers < n && pthread_cond_timedwait(&fk_cv, &fk_mu, &ts) == 0)
		;
	got = fk.nanswers;
	pthread_mutex_unlock(&fk_mu);
	return got;
}

static int fk_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	pthread_mutex_lock(&fk_mu);
	fk.version_calls++;
	v->abi_version = fk.abi_version ? (uint32_t)fk.abi_version : NXQ_ABI_VERSION;
	v->features = fk.features ? fk.features : 0x1f;
	pthread_mutex_unlock(&fk_mu);
	return 0;
}

static int fk_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	uint64_t feat = fk.features ? fk.features : 0x1f;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	fk.register_calls++;
	if (reg->size != sizeof(*reg) || reg->flags || !reg->device[0])
		fk.errors++;
	if (feat & NXQ_FEAT_TICKETS) {
		/* an eventfd the library can poll without blocking, not inherited */
		int fl = fcntl(reg->eventfd, F_GETFL), fd = fcntl(reg->eventfd, F_GETFD);

		if (reg->eventfd < 0 || fl < 0 || !(fl & O_NONBLOCK) || fd < 0 ||
		    !(fd & FD_CLOEXEC))
			fk.errors++;
	} else if (reg->eventfd != -1) {
		fk.errors++;
	}
	if (!strcmp(reg->device, "nodev")) {
		r = -ENODEV;
		goto out;
	}
	fk.holders++;
	reg->holder_id = 100 + (uint64_t)fk.register_calls;
	for (int i = 0; i < FK_HOLDERS; i++)
		if (!fk.h[i].live) {
			memset(&fk.h[i], 0, sizeof(fk.h[i]));
			fk.h[i].live = 1;
			fk.h[i].id = reg->holder_id;
			fk.h[i].evfd = reg->eventfd;
			break;
		}
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static int fk_unregister(struct nxq_ctx *ctx, uint64_t id)
{
	struct fk_holder *h;

	pthread_mutex_lock(&fk_mu);
	fk.unregister_calls++;
	fk.holders--;
	h = fk_find(id);
	if (h) {
		if (h->charged)
			fk.errors++;	/* the library uncharges before unregistering */
		h->live = 0;
	}
	pthread_mutex_unlock(&fk_mu);
	return 0;
}

static int fk_charge(struct nxq_ctx *ctx, uint64_t id, uint64_t bytes, uint64_t timeout_ns,
		     struct nxq_refusal *why)
{
	struct fk_holder *h;
	int r = 0;

	if (why)
		memset(why, 0, sizeof(*why));
	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	fk.charge_calls++;
	h = fk_find(id);
	if (!bytes || !h)
		fk.errors++;
	if (timeout_ns) {
		fk.wait_charges++;
		fk.last_timeout_ns = timeout_ns;
	}
	if (fk.fail_charge_at && fk.charge_calls == fk.fail_charge_at) {
		r = fk.fail_err ? fk.fail_err : -EDQUOT;
		goto out;
	}
	if (fk.cap && fk.charged + bytes > fk.cap) {
		struct timespec ts;

		if (!timeout_ns) {
			r = -EDQUOT;
			goto out;
		}
		if (fk.wait_victim)
			fk_ticket_open_locked(fk.wait_victim, fk.charged + bytes - fk.cap);
		if (fk.wait_hook) {
			pthread_mutex_unlock(&fk_mu);
			fk.wait_hook();
			pthread_mutex_lock(&fk_mu);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(timeout_ns / 1000000000ULL);
		ts.tv_nsec += (long)(timeout_ns % 1000000000ULL);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (fk.charged + bytes > fk.cap)
			if (pthread_cond_timedwait(&fk_cv, &fk_mu, &ts)) {
				r = -ETIMEDOUT;
				goto out;
			}
	}
	fk.charged += bytes;
	if (h)
		h->charged += bytes;
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static int fk_uncharge(struct nxq_ctx *ctx, uint64_t id, uint64_t bytes)
{
	struct fk_holder *h;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	fk.uncharge_calls++;
	h = fk_find(id);
	if (!h || !bytes || bytes > h->charged) {
		fk.errors++;
		r = -EINVAL;
		goto out;
	}
	fk.charged -= bytes;
	h->charged -= bytes;
	if (fk.reclaimable > fk.charged)
		fk.reclaimable = fk.charged;
	pthread_cond_broadcast(&fk_cv);
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static int fk_set_reclaimable(struct nxq_ctx *ctx, uint64_t id, uint64_t bytes)
{
	struct fk_holder *h;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	fk.reclaim_calls++;
	if (pthread_equal(pthread_self(), fk.main))
		fk.reclaim_calls_main++;
	h = fk_find(id);
	if (!h || bytes > h->charged) {
		fk.errors++;
		r = -EINVAL;
		goto out;
	}
	fk.reclaimable = bytes;
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static int fk_ticket_read(struct nxq_ctx *ctx, uint64_t id, struct nxq_ticket *t)
{
	struct fk_holder *h;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	fk.ticket_reads++;
	h = fk_find(id);
	if (!h || !h->open) {
		fk.ticket_eagain++;
		r = -EAGAIN;
		goto out;
	}
	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->holder_id = id;
	t->generation = h->gen;
	t->bytes = h->bytes;
	t->deadline_ns = 1;
	t->reason = NXQ_TICKET_REASON_MAX;
	t->level = NXQ_TICKET_LEVEL_ASK;
	if (fk.raise_on_read) {
		uint64_t more = fk.raise_on_read;

		fk.raise_on_read = 0;
		fk_ticket_open_locked(id, more);
	}
	if (fk.close_on_read) {
		fk.close_on_read = 0;
		h->open = 0;
	}
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static int fk_ticket_answer(struct nxq_ctx *ctx, uint64_t id, uint64_t gen, uint64_t released,
			    uint64_t *charged)
{
	struct fk_holder *h;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk_count_main();
	h = fk_find(id);
	if (!h || !h->open || h->gen != gen) {
		fk.stale++;
		r = -ESTALE;
		goto out;
	}
	if (released > h->charged) {
		fk.errors++;
		r = -EINVAL;
		goto out;
	}
	h->charged -= released;
	fk.charged -= released;
	if (fk.reclaimable > fk.charged)
		fk.reclaimable = fk.charged;
	h->open = 0;
	if (fk.nanswers < FK_ANSWERS)
		fk.answers[fk.nanswers] = (struct fk_answer){ id, gen, released };
	fk.nanswers++;
	if (charged)
		*charged = h->charged;
	pthread_cond_broadcast(&fk_cv);
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

/* STATUS as one node under fk.cap (NXQ_UNLIMITED without one); version 1 filled always. */
static int fk_status(struct nxq_ctx *ctx, uint64_t id, struct nxq_status *st)
{
	struct fk_holder *h;
	uint64_t lim;
	int r = 0;

	pthread_mutex_lock(&fk_mu);
	fk.status_calls++;
	h = fk_find(id);
	if (!h) {
		r = -ENOENT;
		goto out;
	}
	lim = fk.cap ? fk.cap : NXQ_UNLIMITED;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->holder_id = id;
	st->holder_charge = h->charged;
	st->node_current = fk.charged;
	st->node_max = lim;
	st->headroom = lim - fk.charged;
	st->device_used = fk.charged;
	st->device_capacity = lim;
	st->node_effective_max = lim;
	st->room = lim - fk.charged;
	st->limit = lim;
	st->last_error = EDQUOT;
	st->last_limit = lim;
out:
	pthread_mutex_unlock(&fk_mu);
	return r;
}

static void fk_close(struct nxq_ctx *ctx) { }

static const struct nxq_kops fake_kops = {
	.name = "fake",
	.version = fk_version,
	.holder_register = fk_register,
	.holder_unregister = fk_unregister,
	.charge = fk_charge,
	.uncharge = fk_uncharge,
	.set_reclaimable = fk_set_reclaimable,
	.ticket_read = fk_ticket_read,
	.ticket_answer = fk_ticket_answer,
	.close = fk_close,
	.status = fk_status,
};

/* ---- fake backend over the host backend ---- */

enum fb_op { OP_CREATE, OP_MAP, OP_ACCESS, OP_UNMAP, OP_RELEASE, OP_FENCE, OP_RESERVE,
	     OP_OPEN, OP_QUIESCE, OP_N };

struct fake_fence {
	int done;
	long born;			/* fb.now when recorded */
	struct fake_fence *next;
};

struct fake_backend {
	int calls[OP_N];
	int fail_op, fail_at;		/* fail the fail_at-th call of fail_op */
	int fail_err;
	long live_handles, live_maps;	/* calls: handles alive, mappings alive */
	uint64_t handle_bytes, map_bytes;	/* bytes of them */
	struct { uint64_t h, size; } hs[4096];	/* live handles and their sizes */
	int nhs;
	int queries, waits;
	long now;			/* the test's clock, for fences that lag */
	struct fake_fence *fences;	/* all outstanding */
	int nfences;
	struct { uint64_t va, size; } unmaps[4096];	/* every unmap, in order */
	int nunmaps;
};

static struct fake_backend fb;

static int fb_fail(enum fb_op op)
{
	fb.calls[op]++;
	if (fb.fail_at && fb.fail_op == (int)op && fb.calls[op] == fb.fail_at)
		return fb.fail_err ? fb.fail_err : -ENOMEM;
	return 0;
}

#define HOST nxq__host_be_ops

static int fb_open(const struct nxq_be_cfg *cfg, void **bep, uint64_t *g, char key[64])
{
	int r = fb_fail(OP_OPEN);

	return r ? r : HOST.open(cfg, bep, g, key);
}
static void fb_close(void *be) { HOST.close(be); }
static int fb_reserve(void *be, uint64_t s, uint64_t a, uint64_t *b)
{
	int r = fb_fail(OP_RESERVE);

	return r ? r : HOST.reserve(be, s, a, b);
}
static int fb_unreserve(void *be, uint64_t b, uint64_t s) { return HOST.unreserve(be, b, s); }
static int fb_create(void *be, uint64_t s, uint64_t *h)
{
	int r = fb_fail(OP_CREATE);

	if (!r && !(r = HOST.create(be, s, h))) {
		fb.live_handles++;
		fb.handle_bytes += s;
		if (fb.nhs < 4096) {
			fb.hs[fb.nhs].h = *h;
			fb.hs[fb.nhs].size = s;
			fb.nhs++;
		}
	}
	return r;
}
static int fb_release(void *be, uint64_t h)
{
	int r = fb_fail(OP_RELEASE);

	if (!r && !(r = HOST.release(be, h))) {
		fb.live_handles--;
		for (int i = 0; i < fb.nhs; i++)
			if (fb.hs[i].h == h) {
				fb.handle_bytes -= fb.hs[i].size;
				fb.hs[i] = fb.hs[--fb.nhs];
				break;
			}
	}
	return r;
}
static int fb_map(void *be, uint64_t va, uint64_t s, uint64_t h)
{
	int r = fb_fail(OP_MAP);

	if (!r && !(r = HOST.map(be, va, s, h))) {
		fb.live_maps++;
		fb.map_bytes += s;
	}
	return r;
}
static int fb_access(void *be, uint64_t va, uint64_t s)
{
	int r = fb_fail(OP_ACCESS);

	return r ? r : HOST.set_access(be, va, s);
}
static int fb_unmap(void *be, uint64_t va, uint64_t s)
{
	int r = fb_fail(OP_UNMAP);

	if (!r && !(r = HOST.unmap(be, va, s))) {
		fb.live_maps--;
		fb.map_bytes -= s;
		if (fb.nunmaps < 4096) {
			fb.unmaps[fb.nunmaps].va = va;
			fb.unmaps[fb.nunmaps].size = s;
		}
		fb.nunmaps++;
	}
	return r;
}
static int fb_quiesce(void *be)
{
	return fb_fail(OP_QUIESCE);
}
static int fb_fence_record(void *be, void *stream, void **fence)
{
	struct fake_fence *f;
	int r = fb_fail(OP_FENCE);

	if (r)
		return r;
	f = calloc(1, sizeof(*f));
	f->done = stream == NULL;	/* NULL stream: already complete */
	f->born = fb.now;
	f->next = fb.fences;
	fb.fences = f;
	fb.nfences++;
	*fence = f;
	return 0;
}
static int fb_fence_query(void *be, void *fence)
{
	fb.queries++;
	return ((struct fake_fence *)fence)->done;
}
static int fb_fence_wait(void *be, void *fence)
{
	fb.waits++;
	((struct fake_fence *)fence)->done = 1;
	return 0;
}
static void fb_fence_free(void *be, void *fence)
{
	struct fake_fence **pp;

	for (pp = &fb.fences; *pp; pp = &(*pp)->next)
		if (*pp == fence) {
			*pp = ((struct fake_fence *)fence)->next;
			break;
		}
	fb.nfences--;
	free(fence);
}

/* The device caught up with fences recorded before time t. */
static inline void fb_complete_before(long t)
{
	for (struct fake_fence *f = fb.fences; f; f = f->next)
		if (f->born < t)
			f->done = 1;
}

/* Complete every outstanding fence (the stream's work has finished). */
static inline void fb_complete_all(void)
{
	for (struct fake_fence *f = fb.fences; f; f = f->next)
		f->done = 1;
}

static const struct nxq_be_ops fake_be = {
	.name = "fake",
	.open = fb_open,
	.close = fb_close,
	.reserve = fb_reserve,
	.unreserve = fb_unreserve,
	.create = fb_create,
	.release = fb_release,
	.map = fb_map,
	.set_access = fb_access,
	.unmap = fb_unmap,
	.quiesce = fb_quiesce,
	.fence_record = fb_fence_record,
	.fence_query = fb_fence_query,
	.fence_wait = fb_fence_wait,
	.fence_free = fb_fence_free,
};

static void fakes_reset(void)
{
	static int cv_ready;

	if (!cv_ready) {
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&fk_cv, &ca);
		cv_ready = 1;
	}
	memset(&fk, 0, sizeof(fk));
	memset(&fb, 0, sizeof(fb));
	fk.main = pthread_self();
}

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

#endif /* NXQ_TEST_FAKE_H */
