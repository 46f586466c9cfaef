// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An authority that answers late (issue 32).  No authority at the first
 * look -- no module; nxquotad down, restarting, or refusing the
 * connection for one of its bounds -- puts the shim in ST_DOWN, never for
 * life.  One thread, the connector (started then, all signals blocked),
 * looks for one again: 10 ms later, then twice as long each time up to
 * S.gap_ns (1 s) -- at most a connect() a second, no busy loop, no thread
 * per allocation.  Meanwhile allocations wait for it up to the connect
 * wait (authority_down()), then pass and are remembered as pending, or
 * with NXQUOTA_REQUIRE are refused.  When one answers, the catch-up:
 *
 *  1. under S.down_rw for writing (no wrapper is in the middle of an
 *     allocation or a free while down), S.ctx_mu and S.lock: every
 *     pending entry -- pointers, handles (also released ones a mapping
 *     still holds), contexts -- and the pending primary-context bytes are
 *     summed per device into what its plain and context holders owe, no
 *     longer pending; S.ctx is set, ST_CHARGE published, waiters woken;
 *  2. locks released, each device's holders are registered and what they
 *     owe charged in one request each (owed_charge(): what frees paid off
 *     meanwhile given back), each pool's reservation charged
 *     (pool_settle(); a refused one trimmed to what it uses and asked
 *     again);
 *  3. said on stderr: what was charged, what could not be and why.  What
 *     is still owed stays so -- asked for before any new charge on the
 *     device (owed_first()), so the process does not grow while it holds
 *     memory uncharged, and paid off first by its frees -- and is asked for again a gap (1 s) later,
 *     then twice as long each time up to 10 gaps apart, until charged.
 *
 * The connector ends once nothing is owed.  It owns S.conn_on and
 * S.conn_stop (under S.conn_mu); S.conn_cv wakes both the waiting
 * allocations and its sleep.  Lock order: S.down_rw, S.ctx_mu, S.lock,
 * the shard locks (fork_prepare() takes S.lock before the shards too).
 *
 * Layer 7: calls tickets.c, pool.c, charge.c, authority.c, track.c,
 * resolve.c, state.c.
 */
#include "shim.h"

/* Sleep up to ns on S.conn_cv: 1 when told to stop. */
static int conn_sleep(uint64_t ns)
{
	uint64_t until = now_ns() + ns;
	struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ULL),
			       .tv_nsec = (long)(until % 1000000000ULL) };
	int stop;

	pthread_mutex_lock(&S.conn_mu);
	while (!S.conn_stop && now_ns() < until)
		if (pthread_cond_timedwait(&S.conn_cv, &S.conn_mu, &ts))
			break;
	stop = S.conn_stop;
	pthread_mutex_unlock(&S.conn_mu);
	return stop;
}

/* Step 1 (see above); 0 with ST_CHARGE published, or -1 (stopped: ctx closed). */
static int catch_up_locked(struct nxq_ctx *ctx)
{
	uint64_t plain[MAXDEV] = { 0 }, cx[MAXDEV] = { 0 };

	pthread_rwlock_wrlock(&S.down_rw);
	pthread_mutex_lock(&S.ctx_mu);
	pthread_mutex_lock(&S.lock);
	if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) != ST_DOWN ||
	    __atomic_load_n(&S.conn_stop, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&S.lock);
		pthread_mutex_unlock(&S.ctx_mu);
		pthread_rwlock_unlock(&S.down_rw);
		nxq_ctx_close(ctx);
		return -1;
	}
	for (int k = 0; k < NKIND; k++)
		for (unsigned int i = 0; i < (1U << HBITS); i++) {
			pthread_mutex_lock(&shard[i % NSHARD]);
			for (struct ent *e = tab[k][i]; e; e = e->next) {
				/* a mapping: its handle, once (a released one is held by them alone) */
				struct ent *a = k == K_MAP ? e->h : e;

				if (!a->pend)
					continue;
				a->pend = 0;
				if (a->dev < 0 || a->dev >= MAXDEV)
					continue;
				if (k == K_CTX)
					cx[a->dev] += a->bytes;
				else
					plain[a->dev] += a->bytes;
			}
			pthread_mutex_unlock(&shard[i % NSHARD]);
		}
	for (int d = 0; d < MAXDEV; d++) {
		cx[d] += S.dev[d].prim_pend;
		S.dev[d].prim_pend = 0;
		__atomic_store_n(&S.dev[d].owed, plain[d], __ATOMIC_RELAXED);
		__atomic_store_n(&S.dev[d].cowed, cx[d], __ATOMIC_RELAXED);
	}
	S.ctx = ctx;
	__atomic_store_n(&S.state, ST_CHARGE, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	pthread_mutex_unlock(&S.ctx_mu);
	pthread_rwlock_unlock(&S.down_rw);
	pthread_mutex_lock(&S.conn_mu);
	pthread_cond_broadcast(&S.conn_cv);	/* the allocations waiting for it */
	pthread_mutex_unlock(&S.conn_mu);
	return 0;
}

/* What device ord's holders (and pools: reserved above their charge) owe now. */
static uint64_t owed_now(int ord, int pools)
{
	uint64_t n = __atomic_load_n(&S.dev[ord].owed, __ATOMIC_RELAXED) +
		     __atomic_load_n(&S.dev[ord].cowed, __ATOMIC_RELAXED);

	for (int i = 0; pools && i < MAXPOOL; i++) {
		struct pool *p = &S.pool[i];

		if (!__atomic_load_n(&p->pool, __ATOMIC_ACQUIRE) || p->dev != ord)
			continue;
		pthread_mutex_lock(&p->mu);
		if (p->pool && p->dev == ord && p->reserved > p->charged)
			n += p->reserved - p->charged;
		pthread_mutex_unlock(&p->mu);
	}
	return n;
}

/*
 * Step 2 on device ord: register its holders and charge what they owe
 * (the catch-up's refusal is said by charge(): which budget, what would
 * help; the background's retries are quiet).  Returns what is still
 * owed.  first: the catch-up itself -- counted as caught up, not repaid;
 * pools too: each one's reservation, a refused one trimmed and asked
 * again (later a pool's shortfall is charged by its own next allocation,
 * trim or ticket: pool_settle()).  A device not under nxquota owes
 * nothing.
 */
static uint64_t repay(int ord, int first)
{
	struct dev *d = &S.dev[ord];
	static const int kinds[2] = { H_PLAIN, H_CTX };

	for (int j = 0; j < 2; j++) {
		int k = kinds[j], r;
		uint64_t paid;

		if (!__atomic_load_n(owedp(ord, k), __ATOMIC_RELAXED))
			continue;
		if (dev_state(ord, k) != DS_CHARGE) {
			/* not under nxquota (or refused: said): nothing to charge it to */
			__atomic_store_n(owedp(ord, k), 0, __ATOMIC_RELAXED);
			continue;
		}
		r = owed_charge(ord, k, k == H_CTX ? d->cholder : d->holder, &paid, !first);
		if (!r)
			__atomic_add_fetch(first ? &S.cnt.caught_up : &S.cnt.repaid, paid,
					  __ATOMIC_RELAXED);
	}
	for (int i = 0; first && i < MAXPOOL; i++) {
		struct pool *p = &S.pool[i];
		uint64_t before;
		int r;

		if (!__atomic_load_n(&p->pool, __ATOMIC_ACQUIRE) || p->dev != ord)
			continue;
		if (dev_state(ord, H_POOL) != DS_CHARGE)
			break;
		pthread_mutex_lock(&p->mu);
		before = p->charged;
		r = p->pool && p->dev == ord ? pool_settle(p, 1, 0) : 0;
		pthread_mutex_unlock(&p->mu);
		if (r) {
			/*
			 * What its pools reserve unused goes back to the driver
			 * (the charged ones' excess uncharged: no ticket's answer
			 * does it here); then asked again.
			 */
			uint64_t rel = pools_trim(ord);

			if (rel)
				uncharge(d->pholder, rel);
			pthread_mutex_lock(&p->mu);
			r = p->pool && p->dev == ord ? pool_settle(p, 1, 0) : 0;
			pthread_mutex_unlock(&p->mu);
		}
		if (!r && p->charged > before)
			__atomic_add_fetch(&S.cnt.caught_up, p->charged - before,
					   __ATOMIC_RELAXED);
	}
	return owed_now(ord, first);
}

static void *connector(void *arg)
{
	uint64_t delay = 10000000ULL, caught, owed = 0;
	struct nxq_ctx *ctx = NULL;
	char hc[NXQ_SIZE_FMT_LEN], ho[NXQ_SIZE_FMT_LEN];

	(void)arg;
	for (;;) {
		if (conn_sleep(delay))
			goto out;
		CNT(looks);
		if (!authority_open(&ctx))
			break;
		delay = delay * 2 < S.gap_ns ? delay * 2 : S.gap_ns;
	}
	if (catch_up_locked(ctx))
		goto out;
	for (int d = 0; d < MAXDEV; d++)
		owed += repay(d, 1);
	caught = __atomic_load_n(&S.cnt.caught_up, __ATOMIC_RELAXED);
	nxq_size_format(caught, NXQ_SIZE_IEC, hc, sizeof(hc));
	if (!owed)
		say("an nxquota authority answers (%s): CUDA allocations are charged from now "
		    "on; %s this process allocated meanwhile charged", S.ctx->kops->name, hc);
	else
		say("an nxquota authority answers (%s): CUDA allocations are charged from now "
		    "on, but %s of what this process allocated meanwhile could not be charged "
		    "(refused: said above; %s charged): it stays uncharged, this process's "
		    "allocations are refused until it fits (its frees pay it off first), and it "
		    "is asked for again in the background", S.ctx->kops->name,
		    nxq_size_format(owed, NXQ_SIZE_IEC, ho, sizeof(ho)), hc);
	/* what is owed: asked again a gap later (1 s), then twice as long, up to 10 gaps */
	for (delay = S.gap_ns; owed; delay = delay * 2 < 10 * S.gap_ns ? delay * 2
								  : 10 * S.gap_ns) {
		if (conn_sleep(delay))
			goto out;
		owed = 0;
		for (int d = 0; d < MAXDEV; d++)
			owed += repay(d, 0);
		if (!owed)
			say("what this process held uncharged since the nxquota authority came is "
			    "charged now");
	}
out:
	pthread_mutex_lock(&S.conn_mu);
	S.conn_on = 0;
	pthread_cond_broadcast(&S.conn_cv);
	pthread_mutex_unlock(&S.conn_mu);
	return NULL;
}

/*
 * S.on_down (authority.c, with S.lock held, or from an allocation): start
 * the connector unless it runs.  Detached: nothing waits for it but
 * connect_stop().  If it cannot start, said once; authority_down() tries
 * again at most once a gap.
 */
void connect_start(void)
{
	pthread_attr_t at;
	sigset_t all, old;
	pthread_t t;
	int r;

	pthread_mutex_lock(&S.conn_mu);
	if (S.conn_on || S.conn_stop) {
		pthread_mutex_unlock(&S.conn_mu);
		return;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, &at, connector, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (!r)
		S.conn_on = 1;
	pthread_mutex_unlock(&S.conn_mu);
	if (r) {
		__atomic_store_n(&S.retry_ns, now_ns(), __ATOMIC_RELAXED);
		SAY_ONCE(S.said_conn, "cannot start a thread to look for the nxquota authority "
			 "(%s): looked for again at an allocation, at most once a second",
			 strerror(r));
	}
}

/* Tests: end the connector and wait for it (S.lock not held: it takes it). */
void connect_stop(void)
{
	pthread_mutex_lock(&S.conn_mu);
	S.conn_stop = 1;
	pthread_cond_broadcast(&S.conn_cv);
	while (S.conn_on)
		pthread_cond_wait(&S.conn_cv, &S.conn_mu);
	S.conn_stop = 0;
	pthread_mutex_unlock(&S.conn_mu);
}
