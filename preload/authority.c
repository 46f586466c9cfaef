// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The authority: opening the context (NXQ_PRELOAD, NXQUOTA_REQUIRE and
 * the other settings read once), going down (ST_DOWN: the connector
 * started, allocations waiting for it up to the connect wait), each
 * device's key and its three holders (dev_state(): plain, pool and
 * context, registered on first use, an eventfd where someone answers
 * tickets), and forgetting everything (state_drop_locked(): a forked
 * child, a test's reset).
 *
 * Layer 2: calls track.c, python.c, reactor.c, resolve.c, state.c.
 */
#include <sys/stat.h>
#include <sys/un.h>

#include "shim.h"

/* ---- the authority ---- */


/* With S.lock held: forget everything (a forked child, or a test's reset). */
void state_drop_locked(int close_ctx)
{
	/* mappings first: a handle released while mapped is held by them alone */
	for (unsigned int i = 0; i < (1U << HBITS); i++) {
		struct ent *e = tab[K_MAP][i], *n;

		for (; e; e = n) {
			n = e->next;
			if (__atomic_sub_fetch(&e->h->hst, 2, __ATOMIC_RELAXED) == 1)
				free(e->h);
			free(e);
		}
		tab[K_MAP][i] = NULL;
	}
	for (int k = 0; k < NKIND; k++)
		for (unsigned int i = 0; i < (1U << HBITS); i++) {
			struct ent *e = tab[k][i], *n;

			for (; e; e = n) {
				n = e->next;
				free(e);
			}
			tab[k][i] = NULL;
		}
	memset(tracked, 0, sizeof(tracked));
	for (int i = 0; i < MAXDEV; i++) {
		if (S.dev[i].evfd > 0)
			close(S.dev[i].evfd);
		if (S.dev[i].plevfd > 0)
			close(S.dev[i].plevfd);
		if (S.dev[i].cevfd > 0)
			close(S.dev[i].cevfd);
		memset(&S.dev[i], 0, sizeof(S.dev[i]));
	}
	for (int i = 0; i < MAXPOOL; i++) {
		S.pool[i].pool = NULL;
		S.pool[i].charged = 0;
	}
	if (S.ctx) {
		if (close_ctx)
			nxq_ctx_close(S.ctx);
		else
			S.stale = S.ctx;
	}
	S.ctx = NULL;
	S.one_dev = -1;
	__atomic_store_n(&S.wait_until, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&S.retry_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&S.state, 0, __ATOMIC_RELEASE);
}

/*
 * The operator's fail-closed switch that no process can unset: a file at
 * NXQ_REQUIRE_FILE (the CDI spec mounts one read-only in every container
 * it gives a GPU; on a host, root may create it) means NXQUOTA_REQUIRE=1
 * whatever the environment says, so that a process started with an empty
 * or rewritten environment (env -i, an exec) is not let off.
 */
#ifndef NXQ_REQUIRE_FILE
#define NXQ_REQUIRE_FILE	"/etc/nxquota/require"
#endif

static int env_on(const char *name, int dflt)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return dflt;
	return strcmp(v, "0") && strcmp(v, "off") && strcmp(v, "no");
}

/*
 * Open the authority: the tests' fake one if set, else the library's
 * choice (the module, else nxquotad's socket).  0, or a negative errno
 * (nxq_errmsg() says why).
 */
int authority_open(struct nxq_ctx **ctxp)
{
	struct nxq_ctx_opts o = { .size = sizeof(o), .flags = NXQ_CTX_NO_THREAD };

	*ctxp = NULL;
	if (S.test_set && S.test_kops)
		return nxq__ctx_open_kops(&o, S.test_kops, S.test_kpriv, ctxp);
	return nxq_ctx_open(&o, ctxp);
}

/*
 * How long allocations wait for an authority that did not answer at the
 * first look: NXQUOTA_CONNECT_WAIT_MS; by default 5 s where one is
 * expected to come back (nxquotad's socket's directory exists: installed,
 * down or restarting), else 0 (nothing installed to wait for).
 */
static uint64_t connect_wait_ms(void)
{
	const char *sock = getenv("NXQUOTA_SOCKET");
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	const char *slash;
	uint64_t ms;
	struct stat st;

	if (getenv("NXQUOTA_CONNECT_WAIT_MS")) {
		ms = 0;
		if (nxq__env_ms("NXQUOTA_CONNECT_WAIT_MS", &ms) < 0 || ms > 3600000) {
			say("NXQUOTA_CONNECT_WAIT_MS is not a number of milliseconds up to an "
			    "hour: not waiting");
			ms = 0;
		}
		return ms;
	}
	if (!sock)
		sock = nxq__sock_default;
	slash = strrchr(sock, '/');
	if (!*sock || !slash || (size_t)(slash - sock) >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash == sock ? 1 : (int)(slash - sock), sock);
	return !stat(dir, &st) && S_ISDIR(st.st_mode) ? NXQ_PRELOAD_CONNECT_WAIT_MS : 0;
}

int authority_init(void)
{
	const char *env = getenv("NXQ_PRELOAD");
	uint64_t ms = 0;
	int r, st;

	pthread_mutex_lock(&S.lock);
	st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
	if (st != ST_UNKNOWN) {
		pthread_mutex_unlock(&S.lock);
		return st;
	}
	if (S.stale) {		/* a forked child: free our copy of the parent's */
		nxq_ctx_close(S.stale);
		S.stale = NULL;
	}
	S.require = env_on("NXQUOTA_REQUIRE", 0) || !access(NXQ_REQUIRE_FILE, F_OK);
	S.quiet = env_on("NXQUOTA_QUIET", 0);
	S.charge_ctx = env_on("NXQUOTA_CHARGE_CONTEXT", 1);
	S.ctx_max = 1ULL << 30;
	if (nxq__env_size("NXQUOTA_CONTEXT_MAX", &S.ctx_max) < 0) {
		say("NXQUOTA_CONTEXT_MAX is not a size: 1 GiB");
		S.ctx_max = 1ULL << 30;
	}
	if (env && !strcmp(env, "off") && S.require) {
		SAY_ONCE(S.said_none, "NXQ_PRELOAD=off ignored: NXQUOTA_REQUIRE=1 (the operator "
			 "requires a ledger)");
	} else if (env && !strcmp(env, "off")) {
		SAY_ONCE(S.said_none, "NXQ_PRELOAD=off: CUDA allocations of this process "
			 "are not charged");
		st = ST_PASS;
		goto out;
	}
	if (nxq__env_ms("NXQ_PRELOAD_WAIT_MS", &ms) < 0)
		say("NXQ_PRELOAD_WAIT_MS is not a number of milliseconds: not waiting");
	S.wait_ns = ms * 1000000ULL;
	ms = 250;
	if (nxq__env_ms("NXQ_PRELOAD_PY_WAIT_MS", &ms) < 0)
		say("NXQ_PRELOAD_PY_WAIT_MS is not a number of milliseconds: 250");
	S.py_wait_ns = ms * 1000000ULL;
	S.verbose = getenv("NXQ_PRELOAD_VERBOSE") && strcmp(getenv("NXQ_PRELOAD_VERBOSE"), "0");
	S.py_torch = -1;
	S.batch = 2ULL << 20;
	if (nxq__env_size("NXQ_PRELOAD_BATCH", &S.batch) < 0) {
		say("NXQ_PRELOAD_BATCH is not a size: charging each allocation exactly");
		S.batch = 0;
	}
	r = authority_open(&S.ctx);
	if (r) {
		/*
		 * Down, never for life: looked for again in the background
		 * (connect.c); allocations wait for it up to the connect wait,
		 * then pass remembered (charged when it comes) or, required,
		 * are refused until it answers.
		 */
		char wait[160] = "";

		S.ctx = NULL;
		ms = connect_wait_ms();
		__atomic_store_n(&S.wait_until, ms ? now_ns() + ms * 1000000ULL : 0,
				 __ATOMIC_RELAXED);
		if (ms)
			snprintf(wait, sizeof(wait), "wait for one up to %llu ms "
				 "(NXQUOTA_CONNECT_WAIT_MS), then ", (unsigned long long)ms);
		if (S.require)
			SAY_ONCE(S.said_require, "NXQUOTA_REQUIRE=1 and no nxquota authority (%s): "
				 "CUDA allocations of this process %sare refused until one "
				 "answers (looked for in the background)", nxq_errmsg(), wait);
		else
			SAY_ONCE(S.said_none, "no nxquota authority (%s): CUDA allocations of "
				 "this process %sare not charged until one answers (looked for in "
				 "the background; what the process holds then is charged at once)",
				 nxq_errmsg(), wait);
		st = ST_DOWN;
		__atomic_store_n(&S.state, st, __ATOMIC_RELEASE);
		S.on_down();	/* the connector (it takes S.lock once it found one) */
		goto out;
	}
	st = ST_CHARGE;
out:
	__atomic_store_n(&S.state, st, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	return st;
}

/*
 * ST_DOWN: an allocation waits until an authority answers or S.wait_until
 * passed (the process's first look plus the connect wait; 0 once passed:
 * no clock read after).  If the connector could not start, it is tried
 * again, at most once a gap.
 */
int authority_down(void)
{
	uint64_t until = __atomic_load_n(&S.wait_until, __ATOMIC_RELAXED), now;

	if (!__atomic_load_n(&S.conn_on, __ATOMIC_RELAXED)) {
		uint64_t last = __atomic_load_n(&S.retry_ns, __ATOMIC_RELAXED);

		now = now_ns();
		if (now - last >= S.gap_ns &&
		    __atomic_compare_exchange_n(&S.retry_ns, &last, now, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			S.on_down();
	}
	if (!until)
		return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&S.conn_mu);
	while (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == ST_DOWN) {
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ULL),
				       .tv_nsec = (long)(until % 1000000000ULL) };

		if (now_ns() >= until) {
			__atomic_store_n(&S.wait_until, 0, __ATOMIC_RELAXED);
			break;
		}
		pthread_cond_timedwait(&S.conn_cv, &S.conn_mu, &ts);
	}
	pthread_mutex_unlock(&S.conn_mu);
	return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
}

/*
 * A wrapper that follows allocations while ST_DOWN: 1 with S.down_rw
 * held for reading (the catch-up then waits for it: every allocation is
 * either pending before it or charged after it), or 0 (an authority came
 * meanwhile: the caller goes on as ST_CHARGE, nothing held).
 */
int down_begin(void)
{
	pthread_rwlock_rdlock(&S.down_rw);
	if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == ST_DOWN)
		return 1;
	pthread_rwlock_unlock(&S.down_rw);
	return 0;
}

void down_end(void)
{
	pthread_rwlock_unlock(&S.down_rw);
}

int dev_key(int ord, char key[NXQ_DEVICE_KEY_MAX])
{
	CUresult (*uuid)(CUuuid *, CUdevice) = (CUresult (*)(CUuuid *, CUdevice))R(R_cuDeviceGetUuid_v2);
	const unsigned char *b;
	CUuuid u;

	if (!uuid || uuid(&u, ord))
		return -ENODEV;
	b = (const unsigned char *)u.bytes;
	snprintf(key, NXQ_DEVICE_KEY_MAX,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
		 b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

/*
 * Register device ord's holder of the given kind (H_PLAIN, H_POOL,
 * H_CTX) once; the state says what its charges get.  Not registered with
 * the authority (-ENOENT/-ENODEV): not under nxquota, passed through
 * (refused with NXQUOTA_REQUIRE); any other refusal (no budget, no access
 * to the device): refused.
 */
int dev_state(int ord, int kind)
{
	struct dev *d;
	struct nxq_holder_reg reg = { .size = sizeof(reg), .eventfd = -1 };
	int *stp, st, r, evfd = -1;
	static const char *const what[NHKIND] = { "PyTorch's cached", "pool", "context" };

	if (ord < 0 || ord >= MAXDEV)
		return DS_PASS;
	d = &S.dev[ord];
	stp = kind == H_POOL ? &d->pstate : kind == H_CTX ? &d->cstate : &d->state;
	st = __atomic_load_n(stp, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st != DS_UNKNOWN, 1))
		return st;
	pthread_mutex_lock(&S.lock);
	st = *stp;
	if (st != DS_UNKNOWN || !S.ctx)
		goto out;
	if (!d->key[0] && dev_key(ord, d->key)) {
		st = DS_PASS;
		goto out;
	}
	memcpy(reg.device, d->key, sizeof(reg.device));
	/*
	 * An eventfd only where someone will read it and can give something
	 * back: else tickets would wait in vain.  The pool holder: trims.  The
	 * plain holder: only in a PyTorch process, whose cached segments
	 * torch.cuda.empty_cache() releases (py_release()).  The context
	 * holder: as the plain one, so that a PyTorch process that may borrow
	 * may borrow for its context too (it answers its tickets with 0).
	 */
	if ((kind == H_POOL || py_torch_locked() > 0) && (S.ctx->features & NXQ_FEAT_TICKETS) &&
	    !ticket_thread_start_locked()) {
		evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (evfd < 0)
			say("eventfd: %s: %s memory on %s cannot be asked back", strerror(errno),
			    what[kind], d->key);
		reg.eventfd = evfd;
	}
	r = S.ctx->kops->holder_register(S.ctx, &reg);
	if ((r == -ENOENT || r == -ENODEV) && S.require) {
		say("%s is not under nxquota (%s) and NXQUOTA_REQUIRE=1: its allocations are "
		    "refused", d->key, strerror(-r));
		st = DS_REFUSE;
	} else if (r == -ENOENT || r == -ENODEV) {
		say("%s is not under nxquota (%s): its allocations are not charged", d->key,
		    strerror(-r));
		st = DS_PASS;
	} else if (r) {
		say("cannot register a holder for %s (%s): its allocations are refused", d->key,
		    strerror(-r));
		st = DS_REFUSE;
	} else {
		/* MAXDEV + ord: the plain holder's tickets; 2 MAXDEV + ord: the context's */
		uint32_t tag = (uint32_t)(kind == H_POOL ? ord : kind == H_PLAIN ? MAXDEV + ord
					   : 2 * MAXDEV + ord);

		st = DS_CHARGE;
		CNT(holders);
		if (kind == H_POOL) {
			d->pholder = reg.holder_id;
			d->evfd = evfd;
		} else if (kind == H_PLAIN) {
			d->holder = reg.holder_id;
			d->plevfd = evfd;
		} else {
			d->cholder = reg.holder_id;
			d->cevfd = evfd;
		}
		if (evfd >= 0) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

			if (epoll_ctl(S.epfd, EPOLL_CTL_ADD, evfd, &ev))
				say("epoll_ctl: %s: tickets for %s go unanswered", strerror(errno),
				    d->key);
			else if (S.verbose && kind == H_PLAIN)
				say("%s: a PyTorch process: its cached segments are given back "
				    "on a ticket (torch.cuda.empty_cache())", d->key);
		}
		evfd = -1;
	}
	if (evfd >= 0)
		close(evfd);
out:
	if (st == DS_UNKNOWN)
		st = DS_PASS;	/* no context (a reset): pass */
	__atomic_store_n(stp, st, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	return st;
}
