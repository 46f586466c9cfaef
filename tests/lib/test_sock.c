// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of the library's socket client against a fake nxquotad in
 * the test process (fake_srv.h), for what the real daemon will not do on
 * purpose: a daemon without tickets (no eventfd sent), one of protocol 1
 * or 0 (the eventfd sent, not NXQD_REQ_NOTIFY), one that answers
 * STATUS at version 0, one that forgets a holder alone (-ENOENT: handled
 * as a lost daemon), one whose grace answers a restore -EAGAIN, and a
 * hostile one.  Everything else -- framing, the pool, reconnect and
 * restore, the choice of authority, fork -- runs against the real
 * nxquotad in test_sock_real.c.  NXQ_TEST_FILTER=test_x runs one case.
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

#include "internal.h"
#include "fake_srv.h"
#include "sock.h"
#include "sock_util.h"

static char dir[64];

static uint64_t fs_used(void)
{
	uint64_t v;

	pthread_mutex_lock(&fs.mu);
	v = fs.used;
	pthread_mutex_unlock(&fs.mu);
	return v;
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

/*
 * A daemon without tickets (NXQ_FEAT_TICKETS not offered): no eventfd
 * goes with the registration, no descriptor at all; with tickets, the
 * eventfd, as the one descriptor.
 */
static void test_framing_no_tickets(void **state)
{
	struct nxq_ctx *c;
	struct nxq_arena *a;

	fs.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE;
	c = open_ctx(0, NULL);
	a = mk(c, 0, 0);
	assert_int_equal(fs.registers, 1);
	assert_int_equal(fs.reg_nfds, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);

	fs.features = 0;
	fs_zero();
	c = open_ctx(0, NULL);
	a = mk(c, 0, 0);
	assert_int_equal(fs.registers, 1);
	assert_int_equal(fs.reg_nfds, 1);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * The protocol the daemon speaks decides how a holder hears of its
 * tickets: from version 2 it is registered with NXQD_REQ_NOTIFY and no
 * eventfd (told on the connection); a daemon of version 1 refuses the
 * library's version 2 (-EPROTONOSUPPORT, naming its own) and is given
 * the eventfd, as is one of version 0.
 */
static void test_protocol_fallback(void **state)
{
	static const struct { int proto, nfds; uint16_t flags; } v[] = {
		{ 2, 0, NXQD_REQ_NOTIFY }, { 1, 1, 0 }, { 0, 1, 0 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct nxq_ctx *c;
		struct nxq_arena *a;

		fs.proto = v[i].proto;
		fs_zero();
		c = open_ctx(0, NULL);
		assert_int_equal(((struct sk *)c->kpriv)->proto, v[i].proto);
		a = mk(c, 0, 0);
		assert_int_equal(fs.registers, 1);
		assert_int_equal(fs.reg_nfds, v[i].nfds);
		assert_int_equal(fs.reg_flags, v[i].flags);
		assert_int_equal(nxq_arena_destroy(a), 0);
		assert_int_equal(nxq_ctx_close(c), 0);
	}
	fs.proto = 0;
}

/* ---- STATUS ---- */

/*
 * An older daemon answers STATUS with version 0's bytes only: the fields
 * it does not know are 0, not what the buffer held; version 1's reach
 * the caller as sent.
 */
static void test_status_ver0(void **state)
{
	struct nxq_holder_reg reg = { .size = sizeof(reg), .device = "host0", .eventfd = -1 };
	struct nxq_status s;
	struct nxq_ctx *c;

	c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 8 * MiB, 0, NULL), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 60 * MiB, 0, NULL), -EDQUOT);
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(s.room, 56 * MiB);
	assert_int_equal(s.last_bytes, 60 * MiB);

	fs.status_ver0 = 1;
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(nxq__status(c, reg.holder_id, &s), 0);
	assert_int_equal(fs.statuses, 2);
	assert_int_equal(s.size, sizeof(s));
	assert_int_equal(s.holder_id, reg.holder_id);
	assert_int_equal(s.holder_charge, 8 * MiB);
	assert_int_equal(s.device_capacity, 64 * MiB);
	assert_int_equal(s.room, 0);
	assert_int_equal(s.last_bytes, 0);
	fs.status_ver0 = 0;
	assert_int_equal(c->kops->uncharge(c, reg.holder_id, 8 * MiB), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/* ---- reconnect ---- */

/*
 * The daemon answers -ENOENT for a holder the library holds: it lost it
 * (here, a connection made to a restarted daemon before anyone noticed
 * the old one went): reconnect and restore, then the charge as new.
 */
static void test_enoent_is_lost(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0), *b = mk(c, 0, 0);
	unsigned long k[6];
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

/*
 * The restarted daemon's grace holds back a process it did not list
 * (-EAGAIN to a NOWAIT charge): the restore waits for the grace to end
 * instead of giving the memory back.
 */
static void test_restore_in_grace(void **state)
{
	struct nxq_ctx *c = open_ctx(NXQ_CTX_NO_THREAD, NULL);
	struct nxq_arena *a = mk(c, 0, 0);
	unsigned long k[6];
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_framing_no_tickets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protocol_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_ver0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enoent_is_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_in_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_daemon, setup, teardown),
	};
	int r;

	snprintf(dir, sizeof(dir), "/tmp/nxq-sock-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(fs.path, sizeof(fs.path), "%s/nxquota.sock", dir);
	if (getenv("NXQ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("NXQ_TEST_FILTER"));
	r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(fs.path);
	rmdir(dir);
	return r;
}
