// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of the library against nxquotad's client socket, served by
 * a fake daemon in the test process (fake_srv.h): the framing and the
 * descriptors of a registration, identity left to the kernel, the
 * connection pool under a waiting charge, reconnection after the daemon
 * dies (holders registered again, charges restored, the failed call sent
 * again as new, nothing granted twice), a restore the daemon refuses
 * (given back through the pressure path), a charge waiting when the
 * daemon dies, the choice of authority ($NXQ_DEV, $NXQUOTA_SOCKET), and
 * the fork policy over the socket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "internal.h"
#include "fake_srv.h"

#define MiB (1ULL << 20)
#define G (2 * MiB)

static char dir[64];

static struct nxq_ctx *open_ctx(unsigned int flags,
				void (*on_event)(const struct nxq_event *, void *))
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = flags,
				   .report_interval_ms = NXQ_OPT_ZERO, .on_event = on_event };
	struct nxq_ctx *c = NULL;

	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	assert_string_equal(c->kops->name, "nxquotad");
	assert_int_equal(nxq_ctx_is_managed(c), 1);
	return c;
}

static struct nxq_arena *mk(struct nxq_ctx *c, uint64_t retain, uint64_t wait_ms)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = G, .grow_batch = G, .va_size = 1ULL << 30,
		.retain_idle = retain ? retain : NXQ_OPT_ZERO,
		.handle_pool = NXQ_OPT_ZERO,
		.grow_timeout_ms = wait_ms ? wait_ms : NXQ_OPT_ZERO,
	};
	struct nxq_arena *a = NULL;

	assert_int_equal(nxq_arena_create(c, &o, &a), 0);
	return a;
}

static void st(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	assert_int_equal(nxq_arena_stats(a, s), 0);
}

static uint64_t charged(struct nxq_arena *a)
{
	struct nxq_stats s;

	st(a, &s);
	return s.charged;
}

static uint64_t fs_used(void)
{
	uint64_t v;

	pthread_mutex_lock(&fs.mu);
	v = fs.used;
	pthread_mutex_unlock(&fs.mu);
	return v;
}

/* Wait up to 5 s for the arena's answers to reach n. */
static void wait_answers(struct nxq_arena *a, uint64_t n)
{
	struct nxq_stats s;

	for (int i = 0; i < 5000; i++) {
		st(a, &s);
		if (s.answers >= n)
			return;
		usleep(1000);
	}
	print_message("no answer after 5 s (%llu of %llu)\n", (unsigned long long)s.answers,
		      (unsigned long long)n);
	fail();
}

static void idle_granules(struct nxq_arena *a, int n)
{
	void *p[64];

	for (int i = 0; i < n; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	while (n)
		assert_int_equal(nxq_free(a, p[--n]), 0);
}

static int setup(void **state)
{
	(void)state;
	fs.features = 0;
	fs_start(64 * MiB);
	fs_zero();
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);
	setenv("NXQUOTA_SOCKET", fs.path, 1);
	setenv("NXQUOTA_RECONNECT_MS", "5000", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fs_stop();
	return 0;
}

/* ---- framing ---- */

static void test_framing(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	struct nxq_stats s;
	void *p, *q;

	/* the eventfd came with the registration, as the one descriptor */
	assert_int_equal(fs.registers, 1);
	assert_int_equal(fs.reg_nfds, 1);
	assert_int_equal(fs.reg_evfd_ok, 1);
	assert_int_equal(nxq_alloc(a, 3 * MiB, 0, &p), 0);
	assert_int_equal(charged(a), 4 * MiB);
	assert_int_equal(fs_used(), 4 * MiB);
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	/* refused by the daemon: nothing charged anywhere */
	assert_int_equal(nxq_alloc(a, 62 * MiB, 0, &q), -EDQUOT);
	st(a, &s);
	assert_int_equal(s.charged, 4 * MiB);
	assert_true(s.charge_denied >= 1);
	assert_int_equal(fs_used(), 4 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);
	assert_int_equal(fs_used(), charged(a));
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(fs.unregisters, 1);
	assert_int_equal(fs_used(), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	/* identity: every message carried the kernel's credentials, ours */
	assert_true(fs.msgs >= 5);
	assert_int_equal(fs.cred_seen, fs.msgs);
	assert_int_equal(fs.cred_bad, 0);
	assert_int_equal(fs.fds_elsewhere, 0);

	/* a daemon without tickets: no eventfd, no descriptor */
	fs.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE;
	fs_zero();
	c = open_ctx(0, NULL);
	a = mk(c, 0, 0);
	assert_int_equal(fs.registers, 1);
	assert_int_equal(fs.reg_nfds, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	fs.features = 0;
}

/* ---- the pool: a waiting charge does not hold up the ticket's answer ---- */

static void test_pool_under_waiting_charge(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	struct nxq_stats sa, sb;
	void *q;

	fs_stop();
	fs_start(16 * MiB);
	fs_zero();
	c = open_ctx(0, NULL);
	a = mk(c, 0, 5000);
	b = mk(c, 64 * MiB, 0);
	idle_granules(b, 8);			/* the device is full of B's idle memory */
	assert_int_equal(fs_used(), 16 * MiB);
	fs.victim = 1;
	/* A's growth waits in the daemon on one connection; the library's
	 * thread reads and answers B's ticket on another */
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &q), 0);
	wait_answers(b, 1);
	st(a, &sa);
	st(b, &sb);
	assert_int_equal(sa.grow_waits, 1);
	assert_int_equal(sa.charged, 6 * MiB);
	assert_int_equal(sb.answered_bytes, 6 * MiB);
	assert_int_equal(fs.answers, 1);
	assert_true(fs.max_open_conns >= 2);
	assert_int_equal(fs_used(), sa.charged + sb.charged);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

/*
 * The daemon refuses a new connection (its bound per process): that is
 * not the daemon going away -- no reconnect, no registration again; the
 * request waits for a connection the process has.
 */
static struct {
	struct nxq_arena *a;
	void *p;
	int r;
} slow;

static void *slow_fn(void *arg)
{
	(void)arg;
	slow.r = nxq_alloc(slow.a, 2 * MiB, 0, &slow.p);
	return NULL;
}

static void test_conn_refused_is_not_gone(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a, *b;
	unsigned long k[4];
	pthread_t t;
	void *p, *q;
	int i;

	fs_stop();
	fs_start(4 * MiB);
	fs_zero();
	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	a = mk(c, 0, 2000);
	b = mk(c, 0, 0);
	fs.conn_limit = 1;		/* the one connection the context has */
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	/* A's growth waits on the only connection ... */
	slow.a = a;
	pthread_create(&t, NULL, slow_fn, NULL);
	for (i = 0; i < 5000 && !fs_get(&fs.wait_charges); i++)
		usleep(1000);
	assert_true(i < 5000);
	/* ... B's request needs another, which the daemon refuses */
	assert_int_equal(nxq_alloc(b, G, 0, &q), -EDQUOT);
	pthread_join(t, NULL);
	assert_int_equal(slow.r, -ETIMEDOUT);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 0);		/* no reconnect */
	assert_true(k[3] >= 1);			/* it met the refusal */
	assert_true(fs.conns_refused >= 1);
	assert_int_equal(fs.registers, 2);	/* nothing registered again */
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	assert_int_equal(fs_used(), 4 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * Eight growths wait at once (as many as the pool's connections): at most
 * seven wait in the daemon, so the pressure thread still has a connection
 * for the ticket whose answer grants them all.
 */
#define NW 8
static struct {
	struct nxq_arena *a[NW];
	void *p[NW];
	int r[NW];
} many;

static void *many_fn(void *arg)
{
	int i = (int)(intptr_t)arg;

	many.r[i] = nxq_alloc(many.a[i], 2 * MiB, 0, &many.p[i]);
	return NULL;
}

static void test_waiting_charges_leave_a_connection(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *b;
	pthread_t t[NW];
	int i;

	fs_stop();
	fs_start(16 * MiB);
	fs_zero();
	c = open_ctx(0, NULL);
	for (i = 0; i < NW; i++)
		many.a[i] = mk(c, 0, 8000);
	b = mk(c, 64 * MiB, 0);
	idle_granules(b, 8);			/* full of B's idle memory */
	for (i = 0; i < NW; i++)
		pthread_create(&t[i], NULL, many_fn, (void *)(intptr_t)i);
	for (i = 0; i < 5000 && fs_get(&fs.waiting) < NW - 1; i++)
		usleep(1000);
	assert_true(i < 5000);
	usleep(500000);				/* the eighth gets as far as it can */
	fs_ticket(NW, 16 * MiB);		/* B is asked for everything */
	for (i = 0; i < NW; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(many.r[i], 0);
	}
	assert_true(fs.max_open_conns <= 8);
	assert_int_equal(fs_used(), 16 * MiB);
	for (i = 0; i < NW; i++) {
		assert_int_equal(nxq_free(many.a[i], many.p[i]), 0);
		assert_int_equal(nxq_arena_destroy(many.a[i]), 0);
	}
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- STATUS ---- */

/*
 * nxq__status() over the socket: the holder's id translated both ways
 * (the daemon's ids are not the library's), version 1's fields as the
 * daemon sent them (an older daemon's shorter answer leaves them 0), the
 * last refused charge, and sent again after the daemon came back (the
 * holder restored, its charge with it).
 */
static void test_status(void **state)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg), .device = "host0", .eventfd = -1 };
	struct nxq_status s;
	struct nxq_ctx *c;
	unsigned long k[4];

	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	assert_true(c->features & NXQ_FEAT_STATUS_V1);
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(reg.holder_id, 1);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 8 * MiB, 0), 0);
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(fs.statuses, 1);
	assert_int_equal(s.size, sizeof(s));
	assert_int_equal(s.holder_id, 1);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(s.room, 56 * MiB);
	assert_int_equal(s.limit, 64 * MiB);
	assert_int_equal(s.last_error, 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 60 * MiB, 0), -EDQUOT);
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(s.last_error, EDQUOT);
	assert_int_equal(s.last_bytes, 60 * MiB);
	assert_int_equal(s.last_usage, 8 * MiB);
	assert_int_equal(nxq__status(c, 7, &s), -ENOENT);	/* no such holder here */

	/* an older daemon: version 0's bytes only */
	fs.status_ver0 = 1;
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(s.device_capacity, 64 * MiB);
	assert_int_equal(s.room, 0);
	assert_int_equal(s.last_bytes, 0);
	fs.status_ver0 = 0;

	/* the daemon restarts (new ids): restored, then asked again */
	fs_stop();
	fs_start(64 * MiB);
	fs_zero();
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(fs.statuses, 1);
	assert_int_equal(s.holder_id, 1);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(s.room, 56 * MiB);
	assert_int_equal(c->kops->uncharge(c, reg.holder_id, 8 * MiB), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- reconnect ---- */

static void test_reconnect_restores(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 64 * MiB, 0);
	unsigned long k[4];
	uint64_t ca, cb;
	void *p, *q;

	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	idle_granules(b, 2);			/* 4 MiB idle in B, kept */
	assert_int_equal(fs_used(), 10 * MiB);

	fs_stop();				/* the daemon dies: state gone */
	fs_zero();
	fs_start_later(64 * MiB, 300);
	/* A grows: its charge meets the dead socket, the library waits for the
	 * daemon, registers both holders again, restores their charges, then
	 * charges A's growth as new */
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	fs_join_later();
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);		/* one reconnect */
	assert_int_equal(k[1], 0);		/* nothing refused */
	assert_int_equal(fs.registers, 2);
	assert_int_equal(fs.reg_evfd_ok, 2);	/* the same eventfds again */
	ca = charged(a);
	cb = charged(b);
	assert_int_equal(ca, 8 * MiB);
	assert_int_equal(cb, 4 * MiB);
	assert_int_equal(fs_holder_charged(0), ca);
	assert_int_equal(fs_holder_charged(1), cb);
	assert_int_equal(fs_used(), ca + cb);	/* nothing granted twice */
	assert_int_equal(fs.charges, 3);	/* two restores, one growth */
	assert_int_equal(fs.cred_bad, 0);

	/* the new daemon's tickets reach B through the eventfd sent again */
	fs_ticket(1, 2 * MiB);
	wait_answers(b, 1);
	assert_int_equal(charged(b), 2 * MiB);
	assert_int_equal(fs_holder_charged(1), 2 * MiB);
	assert_int_equal(fs_used(), charged(a) + charged(b));

	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

/*
 * An idle process: the daemon restarts while it makes no call at all.
 * The library's watcher sees the connection end and restores at once --
 * its holders and their charges are back in the new daemon before the
 * process calls again (the daemon's grace window waits for it, and an
 * idle process would otherwise restore at its next call, or never).
 * Without the watcher nothing reaches the new daemon here.
 */
static void test_idle_restores(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[4];
	int i;
	void *p;

	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	assert_int_equal(fs_used(), 6 * MiB);

	fs_stop();				/* the daemon dies: state gone */
	fs_zero();
	fs_start_later(64 * MiB, 300);
	fs_join_later();
	/* no call from here on: only the watcher can restore */
	for (i = 0; i < 5000 && fs_used() != 6 * MiB; i++)
		usleep(1000);
	assert_true(i < 5000);
	assert_int_equal(fs.registers, 1);
	assert_int_equal(fs_holder_charged(0), 6 * MiB);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);		/* one reconnect, by the watcher */
	assert_int_equal(k[1], 0);		/* nothing refused */

	/* the next call finds it done: nothing registered or charged again */
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(fs.registers, 1);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

/*
 * The daemon dies with an uncharge read and not answered: it is not sent
 * again (the restore already charged without it), nor is a ticket answer.
 */
static void test_uncharge_and_answer_in_flight(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 64 * MiB, 0);
	unsigned long k[4];
	struct nxq_stats s;
	void *p[3];

	for (int i = 0; i < 3; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	idle_granules(b, 3);
	assert_int_equal(fs_used(), 12 * MiB);

	fs_zero();
	fs.die_cap = 64 * MiB;
	fs.die_on = _IOC_NR(NXQ_IOC_UNCHARGE);
	assert_int_equal(nxq_free(a, p[2]), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);	/* the uncharge the daemon dies on */
	pthread_join(fs_die_th, NULL);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(charged(a), 4 * MiB);
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	assert_int_equal(fs_holder_charged(1), 6 * MiB);
	assert_int_equal(fs.uncharges, 0);		/* not sent again */
	assert_int_equal(fs_used(), 10 * MiB);

	fs_zero();
	fs.die_cap = 64 * MiB;
	fs.die_on = _IOC_NR(NXQ_IOC_TICKET_ANSWER);
	fs_ticket(1, 2 * MiB);
	assert_int_equal(nxq_ctx_handle_pressure(c), 1);	/* the answer it dies on */
	pthread_join(fs_die_th, NULL);
	st(b, &s);
	assert_int_equal(s.answers, 1);
	assert_int_equal(s.charged, 4 * MiB);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 2);
	assert_int_equal(fs_holder_charged(1), 4 * MiB);	/* restored without it */
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	assert_int_equal(fs_used(), 8 * MiB);

	assert_int_equal(nxq_free(a, p[0]), 0);
	assert_int_equal(nxq_free(a, p[1]), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

/*
 * The daemon answers -ENOENT for a holder the library holds: it lost it
 * (here, a connection made to a restarted daemon before anyone noticed
 * the old one went): reconnect and restore, then the charge as new.
 */
static void test_enoent_is_lost(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 0, 0);
	unsigned long k[4];
	void *p, *q, *x;

	assert_int_equal(nxq_alloc(a, 2 * G, 0, &p), 0);
	assert_int_equal(nxq_alloc(b, G, 0, &x), 0);
	fs_forget(0);				/* A's holder: gone, uncharged */
	fs_zero();
	assert_int_equal(fs_used(), 2 * MiB);
	assert_int_equal(nxq_alloc(a, G, 0, &q), 0);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(fs.registers, 2);	/* both again: the connections were closed */
	assert_int_equal(charged(a), 6 * MiB);
	/* the old connections' holders end as the daemon sees them close */
	for (int i = 0; i < 1000 && fs_used() != charged(a) + charged(b); i++)
		usleep(1000);
	assert_int_equal(fs_used(), charged(a) + charged(b));
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_free(b, x), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

static struct {
	struct nxq_arena *a;
	void *p;
	int r;
} waiter;

static void *waiter_fn(void *arg)
{
	(void)arg;
	waiter.r = nxq_alloc(waiter.a, 2 * MiB, 0, &waiter.p);
	return NULL;
}

/* A charge waiting in the daemon when it dies was never granted: asked again, once. */
static void test_reconnect_waiting_charge(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a;
	pthread_t t;
	void *p;
	int i;

	fs_stop();
	fs_start(8 * MiB);
	fs_zero();
	c = open_ctx(0, NULL);
	a = mk(c, 0, 5000);
	assert_int_equal(nxq_alloc(a, 8 * MiB, 0, &p), 0);
	waiter.a = a;
	pthread_create(&t, NULL, waiter_fn, NULL);
	for (i = 0; i < 5000 && !fs_get(&fs.waiting); i++)
		usleep(1000);
	assert_true(i < 5000);
	fs_stop();
	fs_zero();
	fs_start_later(16 * MiB, 200);
	pthread_join(t, NULL);
	fs_join_later();
	assert_int_equal(waiter.r, 0);
	assert_int_equal(charged(a), 10 * MiB);
	assert_int_equal(fs_holder_charged(0), 10 * MiB);
	assert_int_equal(fs_used(), 10 * MiB);
	assert_int_equal(fs.charges, 2);	/* the restore, then the growth once */
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, waiter.p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * The restarted daemon's grace holds back a process it did not list
 * (-EAGAIN to a NOWAIT charge): the restore waits for the grace to end
 * instead of giving the memory back.
 */
static void test_restore_in_grace(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[4];
	void *p, *q;

	assert_int_equal(nxq_alloc(a, 2 * G, 0, &p), 0);
	fs_stop();
	fs_zero();
	fs.next_grace = 1;
	fs_start_later(64 * MiB, 100);
	assert_int_equal(nxq_alloc(a, G, 0, &q), 0);
	fs_join_later();
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 0);		/* not refused */
	assert_int_equal(fs.wait_charges, 1);	/* the restore, asked again to wait */
	assert_int_equal(fs_holder_charged(0), 6 * MiB);
	assert_int_equal(fs_used(), charged(a));
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * The restarted daemon refuses the holder at first (its device is not
 * registered again yet): the holder's next charge registers it again and
 * restores what it holds, then is charged.
 */
static void test_readopt(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[4];
	void *p, *q;

	assert_int_equal(nxq_alloc(a, 2 * G, 0, &p), 0);
	fs_stop();
	fs_zero();
	fs.next_refuse = 1;
	fs_start_later(64 * MiB, 100);
	assert_int_equal(nxq_alloc(a, G, 0, &q), 0);
	fs_join_later();
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 1);		/* the refusal was seen */
	assert_int_equal(fs.registers, 2);	/* refused, then taken */
	assert_int_equal(charged(a), 6 * MiB);
	assert_int_equal(fs_holder_charged(0), 6 * MiB);
	assert_int_equal(fs_used(), 6 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

static struct {
	int tickets;
	uint32_t reason;
	uint64_t wanted;
} evs;

static void on_event(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET) {
		evs.tickets++;
		evs.reason = ev->reason;
		evs.wanted = ev->bytes_wanted;
	}
}

/*
 * The restarted daemon has less room than A held: the restore is refused,
 * A is asked (through its own pressure path) for what the daemon did not
 * take, releases its idle memory, and the rest is restored.
 */
static void test_restore_refused(void **state)
{
	struct nxq_ctx *c = open_ctx(0, on_event);
	struct nxq_arena *a = mk(c, 64 * MiB, 0), *b = mk(c, 0, 0);
	unsigned long k[4];
	struct nxq_stats s;
	void *p[4], *q;

	memset(&evs, 0, sizeof(evs));
	for (int i = 0; i < 4; i++)
		assert_int_equal(nxq_alloc(a, G, 0, &p[i]), 0);
	assert_int_equal(nxq_free(a, p[3]), 0);
	assert_int_equal(nxq_free(a, p[2]), 0);	/* 4 MiB in use, 4 MiB idle */
	assert_int_equal(charged(a), 8 * MiB);

	fs_stop();
	fs_zero();
	fs_start_later(6 * MiB, 100);
	assert_int_equal(nxq_alloc(b, G, 0, &q), 0);	/* meets the restart */
	fs_join_later();
	wait_answers(a, 1);
	nxq__sock_counters(c, k);
	assert_int_equal(k[0], 1);
	assert_int_equal(k[1], 1);		/* A's restore was refused */
	st(a, &s);
	assert_int_equal(s.tickets, 1);
	assert_int_equal(evs.tickets, 1);
	assert_int_equal(evs.reason, NXQ_TICKET_REASON_BUDGET);
	assert_int_equal(evs.wanted, 8 * MiB);
	assert_int_equal(s.answered_bytes, 4 * MiB);	/* the idle half */
	assert_int_equal(s.in_use, 4 * MiB);		/* in use: never touched */
	assert_int_equal(s.charged, 4 * MiB);
	/* what A still holds is charged again, B's growth too: 6 MiB, the capacity */
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	assert_int_equal(fs_holder_charged(1), 2 * MiB);
	assert_int_equal(fs_used(), s.charged + charged(b));

	assert_int_equal(nxq_free(a, p[0]), 0);
	assert_int_equal(nxq_free(a, p[1]), 0);
	assert_int_equal(nxq_free(b, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_arena_destroy(b), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(fs_used(), 0);
}

/*
 * A hostile daemon (whatever $NXQUOTA_SOCKET points at): descriptors in
 * replies are closed, malformed replies are -EPROTO and change nothing,
 * and the library neither crashes nor reads past what came.
 */
static int nfds_open(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the DIR's own */
}

static void test_hostile_daemon(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	void *p, *q;
	int before;

	assert_int_equal(nxq_alloc(a, G, 0, &p), 0);
	before = nfds_open();
	fs.hostile = 1;				/* a descriptor with the reply */
	assert_int_equal(nxq_alloc(a, G, 0, &q), 0);
	assert_int_equal(nfds_open(), before);	/* closed, not kept */
	assert_int_equal(nxq_free(a, q), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);
	for (int mode = 2; mode <= 4; mode++) {
		fs.hostile = mode;
		assert_int_equal(nxq_alloc(a, G, 0, &q), -EPROTO);
		assert_int_equal(charged(a), 2 * MiB);	/* nothing taken as granted */
	}
	fs.hostile = 0;
	assert_int_equal(nfds_open(), before);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- choosing the authority ---- */

static int accepted(void)
{
	int n;

	usleep(50000);		/* the accept thread counts after connect() returns */
	pthread_mutex_lock(&fs.mu);
	n = fs.accepted;
	pthread_mutex_unlock(&fs.mu);
	return n;
}

static void test_selection(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co) };
	const char *saved = nxq__sock_default, *saved_v0 = nxq__sock_v0;
	struct nxq_ctx *c = NULL;

	nxq__sock_default = fs.path;		/* the default socket is the fake's */
	fs_zero();

	/* "" means no daemon: the device's error, no connection */
	setenv("NXQUOTA_SOCKET", "", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(accepted(), 0);

	/* unset: the default socket */
	unsetenv("NXQUOTA_SOCKET");
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(accepted(), 1);

	/*
	 * NXQD_SOCKET_PATH_V0, where a daemon from before issue 29 listens,
	 * only where the default socket does not exist; both gone: the
	 * error names the default
	 */
	nxq__sock_default = "/nonexistent/client/nxquota.sock";
	nxq__sock_v0 = fs.path;
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(accepted(), 2);
	nxq__sock_default = fs.path;
	nxq__sock_v0 = "/dev/null";		/* exists, and is no socket */
	c = open_ctx(0, NULL);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(accepted(), 3);
	nxq__sock_default = "/nonexistent/client/nxquota.sock";
	nxq__sock_v0 = "/nonexistent/nxquota.sock";
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_non_null(strstr(nxq_errmsg(), "/nonexistent/client/nxquota.sock"));
	nxq__sock_default = fs.path;
	nxq__sock_v0 = saved_v0;

	/* a device that opens wins over the socket (here one that is not
	 * nxquota's: its NXQ_IOC_VERSION fails) */
	setenv("NXQ_DEV", "/dev/null", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOTTY);
	assert_int_equal(accepted(), 3);
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);

	/* a socket that does not connect: the device's error, both named */
	setenv("NXQUOTA_SOCKET", "/nonexistent/nxquota.sock", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	assert_non_null(strstr(nxq_errmsg(), "nxquotad"));

	setenv("NXQUOTA_SOCKET", fs.path, 1);
	setenv("NXQUOTA_RECONNECT_MS", "soon", 1);
	assert_int_equal(nxq_ctx_open(&co, &c), -EINVAL);
	setenv("NXQUOTA_RECONNECT_MS", "5000", 1);

	/* NXQ_CTX_UNMANAGED asks for nothing */
	co.flags = NXQ_CTX_UNMANAGED;
	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	assert_string_equal(c->kops->name, "unmanaged");
	assert_int_equal(nxq_ctx_is_managed(c), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	assert_int_equal(accepted(), 3);
	nxq__sock_default = saved;
}

/* ---- fork ---- */

static void test_fork(void **state)
{
	struct nxq_ctx *c = open_ctx(0, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	int status, conns;
	void *p, *q;
	pid_t pid;

	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	fs_zero();
	pthread_mutex_lock(&fs.mu);
	conns = fs.open_conns;
	pthread_mutex_unlock(&fs.mu);
	pid = fork();
	if (pid == 0) {
		void *x;
		int ok = nxq_alloc(a, 2 * MiB, 0, &x) == -ECHILD &&
			 nxq_ctx_pressure_fd(c) == -ECHILD &&
			 nxq_arena_destroy(a) == 0 && nxq_ctx_close(c) == 0;

		_exit(ok ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	usleep(50000);
	/* the child sent nothing, and its close ended none of our connections */
	assert_int_equal(fs.msgs, 0);
	assert_int_equal(fs.cred_bad, 0);
	pthread_mutex_lock(&fs.mu);
	assert_int_equal(fs.open_conns, conns);
	pthread_mutex_unlock(&fs.mu);
	assert_int_equal(fs_holder_charged(0), 4 * MiB);
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	assert_int_equal(fs_holder_charged(0), 6 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_under_waiting_charge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_refused_is_not_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waiting_charges_leave_a_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_waiting_charge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uncharge_and_answer_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enoent_is_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_in_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
	};
	int r;

	snprintf(dir, sizeof(dir), "/tmp/nxq-sock-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(fs.path, sizeof(fs.path), "%s/nxquota.sock", dir);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(fs.path);
	rmdir(dir);
	return r;
}
