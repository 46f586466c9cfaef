// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of pressure handling against the fake kernel's tickets:
 * release order (retained handles, idle granules, callbacks), a callback
 * freeing cache allocations, answers of 0, ESTALE, a ticket that goes
 * away, the poll mode and the thread mode, in-use memory never unmapped,
 * waiting growth (NXQ_CHARGE_WAIT + timeout, lock dropped, granted by a
 * victim's answer), and how often reclaimable bytes are reported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>

#include "fake.h"

#define G (2 * MiB)

static struct nxq_ctx *ctx;

static struct nxq_arena *mk_arena(uint64_t retain, uint64_t pool, uint64_t wait_ms)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = G, .grow_batch = G, .va_size = 4 * GiB,
		.retain_idle = retain ? retain : NXQ_OPT_ZERO,
		.handle_pool = pool ? pool : NXQ_OPT_ZERO,
		.grow_timeout_ms = wait_ms,
	};
	struct nxq_arena *a = NULL;

	assert_int_equal(nxq__arena_create_be(ctx, &o, &fake_be, &a), 0);
	return a;
}

static void open_ctx(unsigned int flags, uint64_t report_ms,
		     void (*on_event)(const struct nxq_event *, void *))
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = flags,
				   .report_interval_ms = report_ms, .on_event = on_event };

	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &ctx), 0);
}

/* Poll mode context and one arena. */
static struct nxq_arena *mk(uint64_t retain, uint64_t pool)
{
	fakes_reset();
	open_ctx(NXQ_CTX_NO_THREAD, NXQ_OPT_ZERO, NULL);
	return mk_arena(retain, pool, 0);
}

static void st(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	assert_int_equal(nxq_arena_stats(a, s), 0);
}

static uint64_t holder_of(int i)
{
	return fk.h[i].id;
}

static void check_acct(struct nxq_arena *a)
{
	struct nxq_stats s;

	st(a, &s);
	assert_int_equal(s.mapped, s.in_use + s.pending + s.free);
	assert_int_equal(s.charged, s.mapped + s.retained);
	assert_int_equal(s.mapped, fb.map_bytes);
	assert_int_equal(s.mapped + s.retained, fb.handle_bytes);
	assert_true(fb.live_maps <= fb.live_handles);	/* one mapping per handle */
	assert_int_equal(fk.errors, 0);
}

static void done(struct nxq_arena *a)
{
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(ctx), 0);
	assert_int_equal(fk.charged, 0);
	assert_int_equal(fb.live_handles, 0);
	assert_int_equal(fk.errors, 0);
}

/* ---- a "cache" the application keeps and its reclaim callback ---- */

struct cache {
	void *p[64];
	int n;
	int calls, freed_chunks;
	uint64_t last_wanted;
	struct nxq_stats at_call;	/* arena stats when the callback ran */
	pthread_t thread;
	int ret;
};

static int cache_cb(struct nxq_arena *a, uint64_t wanted, void *user)
{
	struct cache *c = user;
	uint64_t freed = 0;

	c->calls++;
	c->last_wanted = wanted;
	c->thread = pthread_self();
	c->at_call.size = sizeof(c->at_call);
	nxq_arena_stats(a, &c->at_call);
	while (c->n && freed < wanted) {
		if (nxq_free(a, c->p[--c->n]))
			return -EIO;
		freed += MiB;
		c->freed_chunks++;
	}
	return c->ret;
}

/*
 * n idle handles of one granule each (grow_batch is one granule here, so
 * each granule-sized allocation is its own handle): what a long-running
 * arena looks like, and what lets a ticket be answered granule by granule.
 * Freed highest first, so retention pools the top ones.
 */
static void idle_granules(struct nxq_arena *a, int n)
{
	void *p[64];

	for (int i = 0; i < n; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	while (n)
		assert_int_equal(nxq_free(a, p[--n]), 0);
}

static void cache_fill(struct nxq_arena *a, struct cache *c, int n)
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(nxq_alloc(a, MiB, 0, &c->p[c->n]), 0);
		memset(c->p[c->n], 0xcc, MiB);
		c->n++;
	}
}

static void ticket(struct nxq_arena *a, int holder_index, uint64_t bytes, int expect_handled)
{
	(void)a;
	fk_ticket_open(holder_of(holder_index), bytes);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), expect_handled);
}

/*
 * Release order: retained handles first, then idle granules, then the
 * callbacks -- each stage only when the earlier ones did not cover the
 * ask, and the callback is asked for exactly what is still missing.
 */
static void test_release_order(void **state)
{
	struct nxq_arena *a = mk(3 * G, 3 * G);
	struct cache c = { 0 };
	struct nxq_stats s;
	void *live;

	assert_int_equal(nxq_alloc(a, G, 0, &live), 0);		/* 1 granule in use */
	cache_fill(a, &c, 8);					/* 4 granules of cache */
	idle_granules(a, 6);			/* 6 idle: 3 kept mapped, 3 to the pool */
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);
	st(a, &s);
	assert_int_equal(s.retained, 3 * G);
	assert_int_equal(s.idle, 3 * G);

	/* 1: an ask the pool covers takes only from the pool */
	ticket(a, 0, 2 * G, 1);
	st(a, &s);
	assert_int_equal(s.retained, G);
	assert_int_equal(s.idle, 3 * G);
	assert_int_equal(c.calls, 0);
	assert_int_equal(fk.nanswers, 1);
	assert_int_equal(fk.answers[0].released, 2 * G);
	check_acct(a);

	/* 2: pool empties first, then idle granules */
	ticket(a, 0, 3 * G, 1);
	st(a, &s);
	assert_int_equal(s.retained, 0);
	assert_int_equal(s.idle, G);
	assert_int_equal(c.calls, 0);
	assert_int_equal(fk.answers[1].released, 3 * G);
	check_acct(a);

	/* 3: idle gone, the callback is asked for the rest, then what it freed is trimmed */
	ticket(a, 0, 3 * G, 1);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.last_wanted, 2 * G);		/* 3 G asked - 1 G idle */
	assert_int_equal(c.at_call.retained, 0);	/* pool and idle went before it */
	assert_int_equal(c.at_call.idle, 0);
	assert_int_equal(c.freed_chunks, 4);
	assert_int_equal(fk.answers[2].released, 3 * G);
	st(a, &s);
	assert_int_equal(s.idle, 0);
	assert_int_equal(s.in_use, G + 4 * MiB);
	assert_int_equal(s.tickets, 3);
	assert_int_equal(s.answers, 3);
	assert_int_equal(s.answered_bytes, 8 * G);
	assert_int_equal(s.reclaim_calls, 1);
	assert_int_equal(fk.h[0].charged, s.charged);
	check_acct(a);
	memset(live, 1, G);
	for (int i = 0; i < c.n; i++)
		assert_int_equal(((unsigned char *)c.p[i])[MiB - 1], 0xcc);
	while (c.n)
		assert_int_equal(nxq_free(a, c.p[--c.n]), 0);
	assert_int_equal(nxq_free(a, live), 0);
	done(a);
}

/* Callbacks run in registration order and stop once the ask is covered. */
static void test_callbacks_order_and_stop(void **state)
{
	struct nxq_arena *a = mk(64 * MiB, NXQ_OPT_ZERO);
	struct cache c1 = { 0 }, c2 = { 0 };

	cache_fill(a, &c1, 8);
	cache_fill(a, &c2, 8);
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c1), 0);
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c2), 0);
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c1), -EEXIST);
	ticket(a, 0, 2 * G, 1);		/* c1 alone covers it */
	assert_int_equal(c1.calls, 1);
	assert_int_equal(c2.calls, 0);
	/*
	 * More than both: c1 (4 left), then c2; they freed memory short of the
	 * ask, so a second pass asks both again; it frees nothing: no third.
	 */
	ticket(a, 0, 8 * G, 1);
	assert_int_equal(c1.calls, 3);
	assert_int_equal(c2.calls, 2);
	assert_int_equal(c1.n + c2.n, 0);
	assert_int_equal(fk.answers[1].released, 6 * G);	/* all there was: not 8 */
	assert_int_equal(nxq_arena_remove_reclaim(a, cache_cb, &c2), 0);
	assert_int_equal(nxq_arena_remove_reclaim(a, cache_cb, &c2), -ENOENT);
	cache_fill(a, &c2, 2);
	ticket(a, 0, G, 1);		/* c2 removed: never called again */
	assert_int_equal(c2.calls, 2);
	assert_int_equal(c1.calls, 4);
	assert_int_equal(fk.answers[2].released, 0);
	while (c2.n)
		assert_int_equal(nxq_free(a, c2.p[--c2.n]), 0);
	check_acct(a);
	done(a);
}

/*
 * What a callback frees comes back in whole handles: when the handle it
 * freed into is still partly in use, the ask is not covered, and the
 * callback is asked again for the rest (the answer overshoots by less
 * than one handle, never falls short while the application can free).
 */
static void test_callback_second_pass(void **state)
{
	struct nxq_arena *a;
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = G, .grow_batch = 8 * G, .va_size = 4 * GiB,
		.retain_idle = NXQ_OPT_ZERO, .handle_pool = NXQ_OPT_ZERO,
	};
	struct cache c = { 0 };
	struct nxq_stats s;

	fakes_reset();
	open_ctx(NXQ_CTX_NO_THREAD, NXQ_OPT_ZERO, NULL);
	assert_int_equal(nxq__arena_create_be(ctx, &o, &fake_be, &a), 0);
	cache_fill(a, &c, 48);		/* handles of 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 8, 8, 8 MiB */
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);
	st(a, &s);
	assert_int_equal(s.mapped, 48 * MiB);
	/* 12 MiB asked: the callback frees 12 chunks, [36, 48): one 8 MiB handle
	 * is idle, the next is half in use: a second call frees 4 more */
	ticket(a, 0, 12 * MiB, 1);
	assert_int_equal(c.calls, 2);
	assert_int_equal(c.last_wanted, 4 * MiB);
	assert_int_equal(fk.answers[0].released, 16 * MiB);
	st(a, &s);
	assert_int_equal(s.mapped, 32 * MiB);
	assert_int_equal(s.in_use, 32 * MiB);
	check_acct(a);
	while (c.n)
		assert_int_equal(nxq_free(a, c.p[--c.n]), 0);
	done(a);
}

/*
 * What a callback frees is all released and answered even where the
 * arena's retention would keep it (small retain_idle, large handle pool):
 * retention waits until the answer.
 */
static void test_callback_release_answered(void **state)
{
	struct nxq_arena *a = mk(G, 64 * MiB);
	struct cache c = { 0 };
	struct nxq_stats s;

	cache_fill(a, &c, 8);
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);
	ticket(a, 0, 4 * G, 1);
	assert_int_equal(c.freed_chunks, 8);
	assert_int_equal(fk.answers[0].released, 4 * G);
	st(a, &s);
	assert_int_equal(s.charged, 0);
	assert_int_equal(s.retained, 0);
	assert_int_equal(fk.uncharge_calls, 0);		/* all of it through the answer */
	check_acct(a);
	done(a);
}

/* Nothing idle, nothing pooled, a callback that frees nothing: answer 0. */
static void test_answer_zero(void **state)
{
	struct nxq_arena *a = mk(64 * MiB, 64 * MiB);
	struct cache c = { .ret = -EBUSY };
	struct nxq_stats s0, s;
	void *p;

	assert_int_equal(nxq_alloc(a, 4 * G, 0, &p), 0);
	st(a, &s0);
	ticket(a, 0, G, 1);
	assert_int_equal(fk.nanswers, 1);
	assert_int_equal(fk.answers[0].released, 0);
	assert_int_equal(fk.h[0].open, 0);		/* answered, closed */
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);
	ticket(a, 0, G, 1);
	assert_int_equal(c.calls, 1);
	assert_int_equal(fk.answers[1].released, 0);
	st(a, &s);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(s.mapped, s0.mapped);
	assert_int_equal(s.answers, 2);
	assert_int_equal(s.answered_bytes, 0);
	check_acct(a);
	/* no ticket: nothing handled, nothing answered */
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);
	assert_int_equal(fk.nanswers, 2);
	assert_int_equal(nxq_free(a, p), 0);
	done(a);
}

/* A ticket raised between read and answer: ESTALE, re-read, answer the new one. */
static void test_estale(void **state)
{
	struct nxq_arena *a = mk(64 * MiB, NXQ_OPT_ZERO);
	struct nxq_stats s;
	uint64_t g1;

	idle_granules(a, 8);				/* 8 idle granules */
	fk.raise_on_read = 2 * G;
	g1 = fk_ticket_open(holder_of(0), G);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 2);	/* read twice */
	assert_int_equal(fk.stale, 1);
	assert_int_equal(fk.nanswers, 1);
	assert_true(fk.answers[0].gen > g1);
	assert_int_equal(fk.answers[0].released, 3 * G);	/* first release + the raise */
	st(a, &s);
	assert_int_equal(s.stale_answers, 1);
	assert_int_equal(s.tickets, 2);
	assert_int_equal(s.answers, 1);
	assert_int_equal(s.charged, 5 * G);
	assert_int_equal(fk.h[0].charged, 5 * G);
	check_acct(a);

	/* The ticket goes away after the read (its asker gave up): the
	 * released bytes are uncharged anyway, with a plain uncharge. */
	fk.close_on_read = 1;
	fk.uncharge_calls = 0;
	fk_ticket_open(holder_of(0), G);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 1);
	assert_int_equal(fk.stale, 2);
	assert_int_equal(fk.nanswers, 1);
	assert_int_equal(fk.uncharge_calls, 1);
	st(a, &s);
	assert_int_equal(s.charged, 4 * G);
	assert_int_equal(fk.h[0].charged, 4 * G);
	check_acct(a);
	done(a);
}

/*
 * Ticket handling never unmaps memory in use or pending on a stream, even
 * when asked for more than the arena holds.
 */
static void test_never_touches_in_use(void **state)
{
	struct nxq_arena *a = mk(16 * MiB, 16 * MiB);
	struct { char *p; uint64_t size; unsigned char pat; } live[200];
	void *pend[8];
	int n = 0;
	struct nxq_stats s;
	uint64_t spare;

	srand(7);
	for (int i = 0; i < 400; i++) {
		void *p;
		uint64_t size = 256 + (uint64_t)(rand() % (3 * (int)MiB));

		assert_int_equal(nxq_alloc(a, size, 0, &p), 0);
		if (i % 2 && n < 200) {
			live[n].p = p;
			live[n].size = size;
			live[n].pat = (unsigned char)i;
			memset(p, live[n].pat, size);
			n++;
		} else {
			assert_int_equal(nxq_free(a, p), 0);
		}
	}
	for (int i = 0; i < 8; i++) {	/* whole granules, pending on a stream */
		assert_int_equal(nxq_alloc(a, 2 * G, G, &pend[i]), 0);
		assert_int_equal(nxq_free_async(a, pend[i], (void *)1), 0);	/* not done */
	}
	{
		void *big;

		(void)big;
		idle_granules(a, 24);
	}
	st(a, &s);
	assert_true(s.idle >= 8 * MiB);		/* something to release in both stages */
	assert_true(s.retained >= 8 * MiB);
	spare = s.idle + s.retained;
	fb.nunmaps = 0;
	ticket(a, 0, 64 * GiB, 1);		/* everything */
	st(a, &s);
	assert_int_equal(s.retained, 0);
	assert_int_equal(s.idle, 0);
	assert_int_equal(s.pending, 16 * G);
	assert_true(fb.nunmaps > 0);
	assert_true(fb.nunmaps <= 4096);
	for (int u = 0; u < fb.nunmaps; u++) {
		uint64_t lo = fb.unmaps[u].va, hi = lo + fb.unmaps[u].size;

		for (int i = 0; i < n; i++) {
			uint64_t plo = (uintptr_t)live[i].p, phi = plo + live[i].size;

			assert_false(plo < hi && lo < phi);
		}
		for (int i = 0; i < 8; i++) {
			uint64_t plo = (uintptr_t)pend[i], phi = plo + 2 * G;

			assert_false(plo < hi && lo < phi);
		}
	}
	for (int i = 0; i < n; i++)
		for (uint64_t k = 0; k < live[i].size; k += 4093)
			assert_int_equal((unsigned char)live[i].p[k], live[i].pat);
	assert_int_equal(fk.nanswers, 1);
	assert_int_equal(fk.answers[0].released, spare);	/* all of it, nothing more */
	check_acct(a);
	fb_complete_all();
	for (int i = 0; i < n; i++)
		assert_int_equal(nxq_free(a, live[i].p), 0);
	done(a);
}

/* Poll mode: the fd is readable when a ticket is open; nothing happens until the call. */
static void test_poll_mode(void **state)
{
	struct nxq_arena *a = mk(64 * MiB, 64 * MiB), *b = mk_arena(64 * MiB, 64 * MiB, 0);
	struct pollfd pfd = { .events = POLLIN };
	void *p;

	pfd.fd = nxq_ctx_pressure_fd(ctx);
	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(nxq_alloc(b, G, 0, &p), 0);
	assert_int_equal(nxq_free(b, p), 0);
	fk_ticket_open(holder_of(1), G);		/* arena b */
	assert_int_equal(poll(&pfd, 1, 0), 1);
	usleep(100 * 1000);
	assert_int_equal(fk.nanswers, 0);		/* no thread answered it */
	assert_int_equal(fk.ticket_reads, 0);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 1);
	assert_int_equal(fk.nanswers, 1);
	assert_int_equal(fk.answers[0].holder, holder_of(1));
	assert_int_equal(fk.answers[0].released, G);
	assert_int_equal(fk.ticket_reads, 2);		/* b's ticket, then b's EAGAIN; a not asked */
	assert_int_equal(poll(&pfd, 1, 0), 0);		/* drained */
	assert_int_equal(nxq_arena_destroy(b), 0);
	done(a);
}

/* ---- thread mode ---- */

static struct { int n; int type[8]; uint64_t gen[8], val[8]; pthread_t th; } evlog;

static void on_event(const struct nxq_event *ev, void *user)
{
	int n = __atomic_load_n(&evlog.n, __ATOMIC_RELAXED);

	(void)user;
	if (n < 8) {
		evlog.type[n] = ev->size >= offsetof(struct nxq_event, pad) ? (int)ev->type : -1;
		evlog.gen[n] = ev->generation;
		evlog.val[n] = ev->type == NXQ_EVENT_TICKET ? ev->bytes_wanted : ev->released;
	}
	evlog.th = pthread_self();
	__atomic_store_n(&evlog.n, n + 1, __ATOMIC_RELEASE);	/* after the accounting */
}

/* The ANSWER event comes after the library's accounting of the answer. */
static int wait_events(int n)
{
	for (int i = 0; i < 5000 && __atomic_load_n(&evlog.n, __ATOMIC_ACQUIRE) < n; i++)
		usleep(1000);
	return __atomic_load_n(&evlog.n, __ATOMIC_ACQUIRE);
}

static void test_thread_mode(void **state)
{
	struct nxq_arena *a;
	struct cache c = { 0 };
	struct nxq_stats s;
	uint64_t gen;

	fakes_reset();
	memset(&evlog, 0, sizeof(evlog));
	open_ctx(0, 0, on_event);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 0);
	cache_fill(a, &c, 8);
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);
	gen = fk_ticket_open(holder_of(0), 2 * G);
	assert_int_equal(fk_wait_answers(1, 5000), 1);
	assert_int_equal(fk.answers[0].gen, gen);
	assert_int_equal(fk.answers[0].released, 2 * G);
	assert_int_equal(c.calls, 1);
	assert_false(pthread_equal(c.thread, pthread_self()));	/* the library's thread */
	assert_int_equal(wait_events(2), 2);
	assert_int_equal(evlog.type[0], NXQ_EVENT_TICKET);
	assert_int_equal(evlog.val[0], 2 * G);
	assert_int_equal(evlog.type[1], NXQ_EVENT_ANSWER);
	assert_int_equal(evlog.gen[1], gen);
	assert_int_equal(evlog.val[1], 2 * G);
	assert_true(pthread_equal(evlog.th, c.thread));
	st(a, &s);
	assert_int_equal(s.tickets, 1);
	assert_int_equal(s.answered_bytes, 2 * G);
	/* a second ticket: the thread is still there */
	fk_ticket_open(holder_of(0), 2 * G);
	assert_int_equal(fk_wait_answers(2, 5000), 2);
	assert_int_equal(wait_events(4), 4);
	assert_int_equal(c.n, 0);
	check_acct(a);
	done(a);		/* close stops and joins the thread */
}

/* From inside a callback: no destroy, close or re-entry; self-removal works. */
static struct nxq_arena *inner_arena;
static int inner_results[4];

static int nasty_cb(struct nxq_arena *a, uint64_t wanted, void *user)
{
	inner_results[0] = nxq_arena_destroy(a);
	inner_results[1] = nxq_ctx_close(ctx);
	inner_results[2] = nxq_ctx_handle_pressure(ctx);
	inner_results[3] = nxq_arena_remove_reclaim(a, nasty_cb, user);
	return 0;
}

static void test_callback_reentry(void **state)
{
	struct nxq_arena *a = mk(64 * MiB, NXQ_OPT_ZERO);
	void *p;

	inner_arena = a;
	assert_int_equal(nxq_alloc(a, G, 0, &p), 0);
	assert_int_equal(nxq_arena_add_reclaim(a, nasty_cb, NULL), 0);
	ticket(a, 0, G, 1);
	assert_int_equal(inner_results[0], -EDEADLK);
	assert_int_equal(inner_results[1], -EDEADLK);
	assert_int_equal(inner_results[2], -EDEADLK);
	assert_int_equal(inner_results[3], 0);
	assert_int_equal(nxq_arena_remove_reclaim(a, nasty_cb, NULL), -ENOENT);
	ticket(a, 0, G, 1);
	assert_int_equal(fk.nanswers, 2);
	assert_int_equal(nxq_free(a, p), 0);
	check_acct(a);
	done(a);
}

/* ---- waiting growth ---- */

static void test_grow_wait_flag_and_timeout(void **state)
{
	struct nxq_arena *a;
	struct nxq_stats s0, s;
	void *p __attribute__((unused)), *q;

	/* no timeout configured: NOWAIT, refused at once */
	a = mk(64 * MiB, NXQ_OPT_ZERO);
	fk.cap = 4 * MiB;
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(a, G, 0, &q), -EDQUOT);
	assert_int_equal(fk.wait_charges, 0);
	assert_int_equal(nxq_free(a, p), 0);
	done(a);

	/* the option: one NOWAIT try, then WAIT with the timeout in ns */
	a = mk(64 * MiB, NXQ_OPT_ZERO);
	assert_int_equal(nxq_arena_destroy(a), 0);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 150);
	fk.cap = 4 * MiB;
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	st(a, &s0);
	assert_int_equal(nxq_alloc(a, G, 0, &q), -ETIMEDOUT);
	assert_non_null(strstr(nxq_errmsg(), "timed out"));
	assert_int_equal(fk.wait_charges, 1);
	assert_int_equal(fk.last_timeout_ns, 150000000ULL);
	st(a, &s);
	assert_int_equal(s.grow_waits, 1);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(s.mapped, s0.mapped);
	assert_int_equal(s.charge_denied, s0.charge_denied + 2);
	check_acct(a);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);

	/* the environment */
	setenv("NXQ_GROW_TIMEOUT_MS", "40", 1);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 0);
	fk.wait_charges = 0;
	assert_int_equal(nxq_alloc(a, 5 * MiB, 0, &q), -ETIMEDOUT);
	assert_int_equal(fk.last_timeout_ns, 40000000ULL);
	assert_int_equal(nxq_arena_destroy(a), 0);
	/* NXQ_OPT_ZERO overrides it */
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, NXQ_OPT_ZERO);
	fk.wait_charges = 0;
	assert_int_equal(nxq_alloc(a, 5 * MiB, 0, &q), -EDQUOT);
	assert_int_equal(fk.wait_charges, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	setenv("NXQ_GROW_TIMEOUT_MS", "4s", 1);
	{
		struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_HOST };

		assert_int_equal(nxq__arena_create_be(ctx, &o, &fake_be, &a), -EINVAL);
		assert_non_null(strstr(nxq_errmsg(), "NXQ_GROW_TIMEOUT_MS"));
	}
	unsetenv("NXQ_GROW_TIMEOUT_MS");
	assert_int_equal(nxq_ctx_close(ctx), 0);

	/* a module that cannot wait: a configured timeout is an error, not ignored */
	fakes_reset();
	fk.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_TICKETS;
	open_ctx(NXQ_CTX_NO_THREAD, NXQ_OPT_ZERO, NULL);
	{
		struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_HOST,
					    .grow_timeout_ms = 10 };

		assert_int_equal(nxq__arena_create_be(ctx, &o, &fake_be, &a), -EOPNOTSUPP);
		assert_non_null(strstr(nxq_errmsg(), "NXQ_FEAT_CHARGE_WAIT"));
	}
	assert_int_equal(nxq_ctx_close(ctx), 0);
}

/* While a growth waits, the arena is not locked: another thread gets in. */
static struct nxq_arena *hook_arena;
static int hook_ok;

static void *stats_thread(void *arg)
{
	struct nxq_stats s = { .size = sizeof(s) };

	(void)arg;
	return (void *)(intptr_t)nxq_arena_stats(hook_arena, &s);
}

static void wait_hook(void)
{
	pthread_t t;
	struct timespec ts;
	void *ret = (void *)1;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	pthread_create(&t, NULL, stats_thread, NULL);
	if (pthread_timedjoin_np(t, &ret, &ts) == 0)
		hook_ok = ret == NULL;
	else
		pthread_detach(t);	/* locked: the test fails below */
}

static void test_grow_wait_unlocked(void **state)
{
	struct nxq_arena *a;
	void *p __attribute__((unused)), *q;

	fakes_reset();
	open_ctx(NXQ_CTX_NO_THREAD, NXQ_OPT_ZERO, NULL);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 50);
	hook_arena = a;
	hook_ok = 0;
	fk.cap = 4 * MiB;
	fk.wait_hook = wait_hook;
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(a, G, 0, &q), -ETIMEDOUT);
	assert_int_equal(hook_ok, 1);
	fk.wait_hook = NULL;
	assert_int_equal(nxq_free(a, p), 0);
	done(a);
}

/*
 * End to end in one process: arena A's growth waits; the fake module
 * tickets arena B; the library's thread releases B's idle memory and
 * answers; A is granted.
 */
static void test_grow_wait_granted(void **state)
{
	struct nxq_arena *a, *b;
	struct nxq_stats sa, sb;
	void *p __attribute__((unused)), *q;

	fakes_reset();
	open_ctx(0, NXQ_OPT_ZERO, NULL);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 5000);
	b = mk_arena(64 * MiB, NXQ_OPT_ZERO, 0);
	fk.cap = 16 * MiB;
	fk.wait_victim = holder_of(1);
	idle_granules(b, 8);				/* idle in B */
	p = NULL;
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &q), 0);
	memset(q, 2, 6 * MiB);
	st(a, &sa);
	/* the fake granted A on B's answer; B's thread finishes its accounting */
	for (int i = 0; i < 5000; i++) {
		st(b, &sb);
		if (sb.answers)
			break;
		usleep(1000);
	}
	assert_int_equal(sa.grow_waits, 1);
	assert_int_equal(sa.charged, 6 * MiB);
	assert_int_equal(sb.tickets, 1);
	assert_int_equal(sb.answered_bytes, 6 * MiB);
	assert_int_equal(sb.charged, 10 * MiB);
	assert_int_equal(fk.charged, 16 * MiB);
	assert_int_equal(fk.wait_charges, 1);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	done(a);
}

/* ---- reclaimable reporting ---- */

static void warm_loop(struct nxq_arena *a, int rounds)
{
	void *p[64];

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_alloc(a, 4096 + (size_t)((i * 7919) % 300000), 0, &p[i]), 0);
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_free(a, p[i]), 0);
	}
}

static void test_reporting_frequency(void **state)
{
	struct nxq_arena *a;
	struct nxq_stats s;
	void *hold;
	int reports, main_calls;
	uint64_t t0, el;

	/* poll mode, 30 ms interval */
	fakes_reset();
	open_ctx(NXQ_CTX_NO_THREAD, 30, NULL);
	a = mk_arena(256 * MiB, NXQ_OPT_ZERO, 0);
	warm_loop(a, 1);					/* grows: 1 report */
	reports = fk.reclaim_calls;
	main_calls = fk.kcalls_main;
	warm_loop(a, 1000);					/* 64000 warm allocs */
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &hold), 0);	/* warm too: idle shrinks */
	assert_int_equal(fk.kcalls_main, main_calls);		/* no kernel call at all */
	assert_int_equal(fk.reclaim_calls, reports);
	usleep(40 * 1000);
	st(a, &s);
	assert_int_not_equal(s.idle, s.reclaimable);		/* a change to report */
	t0 = nxq__now_ns();		/* the report below is stamped after this */
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);
	assert_int_equal(fk.reclaim_calls, reports + 1);	/* the change, once */
	st(a, &s);
	assert_int_equal(fk.reclaimable, s.idle);
	assert_int_equal(s.reclaimable, s.idle);
	assert_int_equal(nxq_free(a, hold), 0);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);
	/*
	 * Within the interval nothing is sent.  Asserted only when this thread
	 * surely was within it: a loaded machine may preempt it past 30 ms,
	 * and then a report here is right (the end state is the same).
	 */
	if (nxq__now_ns() - t0 < 30 * 1000000ULL)
		assert_int_equal(fk.reclaim_calls, reports + 1);
	usleep(40 * 1000);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);
	assert_int_equal(fk.reclaim_calls, reports + 2);
	usleep(40 * 1000);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);	/* unchanged: nothing sent */
	assert_int_equal(fk.reclaim_calls, reports + 2);
	done(a);

	/* thread mode, 20 ms: the thread reports, the allocating thread never does */
	fakes_reset();
	open_ctx(0, 20, NULL);
	a = mk_arena(256 * MiB, NXQ_OPT_ZERO, 0);
	warm_loop(a, 1);
	pthread_mutex_lock(&fk_mu);
	main_calls = fk.kcalls_main;
	reports = fk.reclaim_calls;
	pthread_mutex_unlock(&fk_mu);
	t0 = nxq__now_ns();
	warm_loop(a, 1000);
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &hold), 0);
	el = nxq__now_ns() - t0;
	/* The thread reports within its interval; give a loaded machine 5 s. */
	for (int i = 0; i < 500; i++) {
		uint64_t idle;
		int seen;

		usleep(10 * 1000);
		st(a, &s);
		idle = s.idle;
		pthread_mutex_lock(&fk_mu);
		seen = fk.reclaim_calls > reports && fk.reclaimable == idle;
		pthread_mutex_unlock(&fk_mu);
		if (seen && i >= 9)	/* and at least 100 ms, as before */
			break;
	}
	pthread_mutex_lock(&fk_mu);
	assert_int_equal(fk.kcalls_main, main_calls);
	assert_true(fk.reclaim_calls > reports);		/* the change was reported */
	assert_true((uint64_t)(fk.reclaim_calls - reports) <= el / 20000000 + 7);
	pthread_mutex_unlock(&fk_mu);
	st(a, &s);
	assert_int_equal(fk.reclaimable, s.idle);
	assert_int_equal(nxq_free(a, hold), 0);
	done(a);
}

/* Contexts without tickets: no fd, no thread, holders get no eventfd. */
static void test_no_tickets(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_ctx *u;
	struct nxq_arena *a;
	struct cache c = { 0 };

	assert_int_equal(nxq_ctx_open(&co, &u), 0);
	assert_int_equal(nxq_ctx_pressure_fd(u), -EOPNOTSUPP);
	assert_int_equal(nxq_ctx_handle_pressure(u), 0);
	assert_int_equal(nxq_ctx_close(u), 0);

	fakes_reset();
	fk.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_CHARGE_WAIT;
	open_ctx(0, 0, NULL);
	assert_int_equal(nxq_ctx_pressure_fd(ctx), -EOPNOTSUPP);
	assert_non_null(strstr(nxq_errmsg(), "NXQ_FEAT_TICKETS"));
	a = mk_arena(0, 0, 0);		/* the fake checks eventfd == -1 */
	assert_int_equal(nxq_arena_add_reclaim(a, cache_cb, &c), 0);	/* accepted, never called */
	assert_int_equal(nxq_arena_remove_reclaim(a, cache_cb, &c), 0);
	done(a);
}

/*
 * Finished stream frees do not wait for the next allocation: the report
 * pass of the pressure handler fences the streams and collects what
 * completed, so the memory becomes idle, is reported reclaimable and can
 * be given back to a ticket.
 */
static void test_report_collects_stream_frees(void **state)
{
	struct nxq_arena *a;
	struct nxq_stats s;
	void *p;

	fakes_reset();
	open_ctx(NXQ_CTX_NO_THREAD, 20, NULL);
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 0);
	assert_int_equal(nxq_alloc(a, 4 * G, 0, &p), 0);	/* one 8 MiB handle */
	assert_int_equal(nxq_free_async(a, p, (void *)0x77), 0);
	st(a, &s);
	assert_int_equal(s.pending, 4 * G);
	assert_int_equal(s.idle, 0);
	usleep(30 * 1000);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);	/* report pass: fence recorded */
	assert_int_equal(fb.calls[OP_FENCE], 1);
	st(a, &s);
	assert_int_equal(s.pending, 4 * G);			/* the stream is still busy */
	fb_complete_all();					/* the device caught up */
	usleep(30 * 1000);
	assert_int_equal(nxq_ctx_handle_pressure(ctx), 0);
	st(a, &s);
	assert_int_equal(s.pending, 0);
	assert_int_equal(s.idle, 4 * G);
	assert_int_equal(fk.reclaimable, 4 * G);		/* and the module knows */
	check_acct(a);
	done(a);
}

/*
 * Fork: a child never uses or tears down its parent's holders, pressure
 * thread or eventfd registrations.  The child's calls on the parent's
 * context fail with -ECHILD, its destroy and close touch nothing of the
 * parent's (no kernel op, no backend op), the arena's memory is not even
 * mapped in the child (MADV_DONTFORK), and afterwards the parent's
 * pressure thread still answers a ticket.
 */
static void test_fork_policy(void **state)
{
	struct nxq_arena *a;
	struct nxq_stats s;
	void *p, *q;
	int status;
	pid_t pid;

	fakes_reset();
	open_ctx(0, NXQ_OPT_ZERO, NULL);		/* with the pressure thread */
	a = mk_arena(64 * MiB, NXQ_OPT_ZERO, 0);
	idle_granules(a, 4);
	assert_int_equal(nxq_alloc(a, MiB, 0, &p), 0);
	memset(p, 0x5a, MiB);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int kcalls = fk.charge_calls + fk.uncharge_calls + fk.unregister_calls +
			     fk.reclaim_calls, bcalls = 0, rc = 0, st2;
		pid_t g;

		for (int i = 0; i < OP_N; i++)
			bcalls += fb.calls[i];
		rc |= nxq_alloc(a, 4096, 0, &q) != -ECHILD;
		rc |= nxq_free(a, p) != -ECHILD;
		rc |= nxq_free_async(a, p, NULL) != -ECHILD;
		rc |= nxq_arena_trim(a, 0, 0) != -ECHILD;
		rc |= nxq_ctx_handle_pressure(ctx) != -ECHILD;
		rc |= nxq_ctx_pressure_fd(ctx) != -ECHILD;
		rc |= !strstr(nxq_errmsg(), "parent") << 1;
		g = fork();		/* the arena's memory is not in the child */
		if (g == 0) {
			volatile unsigned char c;

			signal(SIGSEGV, SIG_DFL);	/* not cmocka's handler */
			c = *(unsigned char *)p;

			(void)c;
			_exit(0);
		}
		rc |= (waitpid(g, &st2, 0) != g || !WIFSIGNALED(st2) ||
		       WTERMSIG(st2) != SIGSEGV) << 2;
		rc |= (nxq_arena_destroy(a) != 0) << 3;
		rc |= (nxq_ctx_close(ctx) != 0) << 3;
		for (int i = 0; i < OP_N; i++)
			bcalls -= fb.calls[i];
		rc |= (fk.charge_calls + fk.uncharge_calls + fk.unregister_calls +
		       fk.reclaim_calls != kcalls || bcalls) << 4;
		_exit(rc);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the parent: memory intact, arena and thread alive */
	assert_int_equal(((unsigned char *)p)[MiB - 1], 0x5a);
	assert_int_equal(nxq_alloc(a, 4096, 0, &q), 0);
	assert_int_equal(nxq_free(a, q), 0);
	fk_ticket_open(holder_of(0), G);
	assert_int_equal(fk_wait_answers(1, 5000), 1);	/* answered by the thread */
	assert_int_equal(fk.answers[0].released, G);
	for (int i = 0; i < 5000; i++) {	/* the thread finishes its accounting */
		st(a, &s);
		if (s.answers)
			break;
		usleep(1000);
	}
	assert_int_equal(s.answers, 1);
	assert_int_equal(fk.unregister_calls, 0);
	assert_int_equal(nxq_free(a, p), 0);
	done(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release_order),
		cmocka_unit_test(test_callbacks_order_and_stop),
		cmocka_unit_test(test_callback_second_pass),
		cmocka_unit_test(test_callback_release_answered),
		cmocka_unit_test(test_answer_zero),
		cmocka_unit_test(test_estale),
		cmocka_unit_test(test_never_touches_in_use),
		cmocka_unit_test(test_poll_mode),
		cmocka_unit_test(test_thread_mode),
		cmocka_unit_test(test_callback_reentry),
		cmocka_unit_test(test_grow_wait_flag_and_timeout),
		cmocka_unit_test(test_grow_wait_unlocked),
		cmocka_unit_test(test_grow_wait_granted),
		cmocka_unit_test(test_report_collects_stream_frees),
		cmocka_unit_test(test_fork_policy),
		cmocka_unit_test(test_reporting_frequency),
		cmocka_unit_test(test_no_tickets),
	};

	unsetenv("NXQ_GROW_TIMEOUT_MS");
	unsetenv("NXQ_REPORT_INTERVAL_MS");
	return cmocka_run_group_tests_name("libnxquota_pressure", tests, NULL, NULL);
}
