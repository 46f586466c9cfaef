// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Charging: charge() and uncharge() on a holder, with the refusal said
 * on stderr (why, and what would help: the node that refused, its
 * guarantee, the credit); the plain holder's batched credit (plain_take(),
 * plain_give(), plain_drop_credit()), what holders owe after a late
 * connection (owed_*()), the frees a ticket collects (collect_add()), and
 * the current device.
 *
 * Layer 3: calls authority.c, track.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- refusals said: why, and what would help ---- */

/*
 * A size for a person: lib/size.c's one rule ("4 GiB", "1.5 MiB",
 * "1023.9 KiB", "1000 B"), "unlimited" for no limit.
 */
static const char *hsize(char *buf, size_t n, uint64_t v)
{
	if (v == NXQ_UNLIMITED) {
		snprintf(buf, n, "unlimited");
		return buf;
	}
	return nxq_size_format(v, NXQ_SIZE_IEC, buf, n);
}

/* This process's cgroup (v2), as /proc/self/cgroup says it ("0::PATH"). */
static void cgroup_path(char *out, size_t n)
{
	char buf[4096], *p;
	ssize_t len;
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

	snprintf(out, n, "(unknown cgroup)");
	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = 0;
	for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "0::", 3)) {
			char *e = strchr(p + 3, '\n');

			if (e)
				*e = 0;
			snprintf(out, n, "%s", p + 3);
			return;
		}
}

static const char *const kind_what[NHKIND] = { "an allocation", "a pool's growth",
						"a CUDA context" };

/* Does device ord's holder of this kind have an eventfd (can it give back)? */
static int holder_evfd(int ord, int kind)
{
	const struct dev *d = &S.dev[ord];

	return (kind == H_POOL ? d->evfd : kind == H_CTX ? d->cevfd : d->plevfd) >= 0;
}

/*
 * The node named in a refusal: its path as the authority gave it (this
 * process's cgroup namespace's view), or where it is when the authority
 * does not name it (above this namespace's root, or gone).
 */
static const char *refused_node(const struct nxq_refusal *why, char *buf, size_t n)
{
	if (why->path[0])
		return why->path;
	snprintf(buf, n, "the cgroup %u level%s up (not named: outside this cgroup namespace)",
		 why->level, why->level == 1 ? "" : "s");
	return buf;
}

/*
 * One line on stderr for a refused charge of bytes (err: the authority's
 * answer, why: what it said refused) by device ord's holder of this kind,
 * for an allocation of asked bytes (0: the catch-up, connect.c): the
 * device, this process's cgroup, the node that refused (levels up), its
 * limit, min and usage, and what would help.  All of it from the refusal
 * itself (struct nxq_charge version 1): no second trip, no path rebuilt
 * here.  At most one line per device per second (the refusals in between
 * are counted in the next); none with NXQUOTA_QUIET.
 */
static void refusal_say(int ord, int kind, uint64_t bytes, uint64_t asked, int err,
			uint64_t waited_ns, const struct nxq_refusal *why)
{
	struct dev *d = &S.dev[ord];
	uint64_t now = now_ns(), last = __atomic_load_n(&d->said_ns, __ATOMIC_RELAXED), more;
	char cg[512], nb[160], hb[32], hl[32], hm[32], hu[32], line[1024 + NXQ_REFUSAL_PATH];
	char wait[160] = "", more_b[64] = "";
	int evfd = holder_evfd(ord, kind), n;
	const char *node, *what = asked ? kind_what[kind] : "what this process allocated while "
			   "no authority answered (charged before any new allocation on the device)";

	if (S.quiet)
		return;
	if ((last && now - last < S.gap_ns) ||
	    !__atomic_compare_exchange_n(&d->said_ns, &last, now, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&d->unsaid, 1, __ATOMIC_RELAXED);
		return;
	}
	more = __atomic_exchange_n(&d->unsaid, 0, __ATOMIC_RELAXED);
	cgroup_path(cg, sizeof(cg));
	hsize(hb, sizeof(hb), asked ? asked : bytes);
	if (asked && asked != bytes)	/* the rest was charged already (the credit) */
		snprintf(more_b, sizeof(more_b), " (%s of it to charge)",
			 hsize(hl, sizeof(hl), bytes));
	if (err == -ETIMEDOUT)
		snprintf(wait, sizeof(wait), " after waiting %llu ms for memory given back",
			 (unsigned long long)(waited_ns / 1000000ULL));
	else if (S.wait_ns && waited_ns < S.wait_ns)
		snprintf(wait, sizeof(wait), " at once, although it may wait %llu ms "
			 "(NXQ_PRELOAD_WAIT_MS): waiting cannot make room for it",
			 (unsigned long long)(S.wait_ns / 1000000ULL));
	n = snprintf(line, sizeof(line), "refused %s%s%s%s on %s for cgroup %s%s: ",
		     what, asked ? " of " : ", ", hb, more_b, d->key, cg, wait);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	if (!(S.ctx->features & NXQ_FEAT_CHARGE_V1)) {
		snprintf(line + n, sizeof(line) - (size_t)n, "%s (the authority does not say "
			 "which budget: no NXQ_FEAT_CHARGE_V1)", strerror(-err));
	} else if (!why->reason) {
		snprintf(line + n, sizeof(line) - (size_t)n, "%s", strerror(-err));
	} else if (why->reason == NXQ_REFUSED_CAPACITY) {
		snprintf(line + n, sizeof(line) - (size_t)n, "the GPU is full (capacity %s, "
			 "charged %s): wait for memory to come back (nxquota-run --wait MS) or "
			 "ask the borrowers on it to give memory back",
			 hsize(hl, sizeof(hl), why->limit), hsize(hu, sizeof(hu), why->usage));
	} else {
		int guarantee = why->reason == NXQ_REFUSED_MIN;

		node = refused_node(why, nb, sizeof(nb));
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s (%u level%s up) is at its "
			      "%s: limit %s, min %s, in use %s; ", node, why->level,
			      why->level == 1 ? "" : "s", guarantee ? "guarantee" : "limit",
			      hsize(hl, sizeof(hl), why->limit),
			      hsize(hm, sizeof(hm), why->min),
			      hsize(hu, sizeof(hu), why->usage));
		if (n < 0 || (size_t)n >= sizeof(line))
			n = (int)sizeof(line) - 1;
		if (guarantee && !why->min)
			snprintf(line + n, sizeof(line) - (size_t)n, "no min is set there or above "
				 "it: set one (annotation nxquota.io/min=SIZE beside nxquota.io/max, "
				 "NVIDIA_GPU_MEMORY_REQUEST, or nxquotactl set %s %s min=SIZE); a "
				 "max alone gives nothing to this process, which cannot give memory "
				 "back and so may charge only within a guarantee", node, d->key);
		else if (!why->limit)
			snprintf(line + n, sizeof(line) - (size_t)n, "nothing may be charged there "
				 "(no budget: a new device's default_max is 0): set one, e.g. "
				 "nxquotactl set %s %s min=SIZE max=SIZE", cg, d->key);
		else if (guarantee)
			snprintf(line + n, sizeof(line) - (size_t)n, "this process cannot give "
				 "memory back, so it may charge only within its guarantee: raise "
				 "the min of %s or use a runtime that answers tickets (libnxquota; "
				 "PyTorch under the shim)", node);
		else if (!evfd)
			snprintf(line + n, sizeof(line) - (size_t)n, "raise the max of %s (and "
				 "its min: this process cannot give memory back, so it may charge "
				 "only within its guarantee)", node);
		else
			snprintf(line + n, sizeof(line) - (size_t)n, "raise the max of %s, or "
				 "free memory below it", node);
	}
	if (more) {
		size_t l = strlen(line);

		snprintf(line + l, sizeof(line) - l, " (and %llu more refused since the last "
			 "line)", (unsigned long long)more);
	}
	CNT(said);
	pthread_mutex_lock(&S.say_mu);
	snprintf(S.last_said, sizeof(S.last_said), "%s", line);
	pthread_mutex_unlock(&S.say_mu);
	say("%s", line);
}

/*
 * A charge of bytes by device ord's holder of this kind, for something of
 * asked bytes (an allocation whose rest the credit covers): 0, or -1
 * refused (counted; said: refusal_say() for the ledger's refusals, once
 * for other errors -- the authority gone, say).
 */
static int charge_said(int ord, int kind, uint64_t holder, uint64_t bytes, uint64_t asked,
		       int quiet)
{
	struct nxq_refusal why;
	uint64_t t0 = 0;
	int r;

	if (!bytes)
		return 0;
	CNT(trips);
	if (S.wait_ns)
		t0 = now_ns();
	r = S.ctx->kops->charge(S.ctx, holder, bytes, S.wait_ns, &why);
	if (!r) {
		CNT(charges);
		return 0;
	}
	CNT(refused);
	if (quiet)
		return -1;
	if (r == -EDQUOT || r == -ENOSPC || r == -ETIMEDOUT)
		refusal_say(ord, kind, bytes, asked, r, S.wait_ns ? now_ns() - t0 : 0, &why);
	else if (S.require)
		SAY_ONCE(S.said_lost, "charge of %llu bytes on %s failed: %s; NXQUOTA_REQUIRE=1: "
			 "allocations that need the authority are refused while it does not "
			 "answer", (unsigned long long)bytes, S.dev[ord].key, strerror(-r));
	else
		SAY_ONCE(S.said_err, "charge of %llu bytes failed: %s; the allocation is "
			 "refused", (unsigned long long)bytes, strerror(-r));
	return -1;
}

int charge(int ord, int kind, uint64_t holder, uint64_t bytes, uint64_t asked)
{
	return charge_said(ord, kind, holder, bytes, asked, 0);
}

void uncharge(uint64_t holder, uint64_t bytes)
{
	int r;

	if (!bytes)
		return;
	CNT(trips);
	r = S.ctx->kops->uncharge(S.ctx, holder, bytes);
	if (r)
		SAY_ONCE(S.said_err, "uncharge of %llu bytes failed: %s",
			 (unsigned long long)bytes, strerror(-r));
	else
		CNT(uncharges);
}

/*
 * The plain holder's credit: bytes charged but held by no allocation, so
 * that repeated allocation/free pairs ask the authority once, not twice
 * per pair, whatever their size.  A charge that needs the authority asks
 * for NXQ_PRELOAD_BATCH more than the allocation needs; a free gives its
 * bytes to the credit, which keeps up to one batch plus the size of the
 * last allocation (so a warm loop of any size stays in the process) and
 * gives the excess back.  A ticket to the device's pool holder gives all
 * of it back.  A charge the authority refuses with the batch is asked
 * again without it, and the credit the process holds counts towards it:
 * the refusal comes exactly where the process's cgroup is full.  The
 * batch is asked as a probe (NXQ_CHARGE_PROBE), whose refusal the
 * authority does not count, report or ask for: a refused allocation is
 * one denial, for its own bytes.  The
 * authority sees the credit as charge (it is: charge, not residency).
 */
int plain_take(int ord, uint64_t bytes)
{
	struct dev *d = &S.dev[ord];
	uint64_t cur, took, need;

	/* what it owes since the catch-up comes first */
	if (owed_first(ord))
		return -1;
	cur = __atomic_load_n(&d->credit, __ATOMIC_RELAXED);
	for (;;) {
		if (cur >= bytes) {
			if (__atomic_compare_exchange_n(&d->credit, &cur, cur - bytes, 0,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				goto granted;
		} else if (__atomic_compare_exchange_n(&d->credit, &cur, 0, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED)) {
			break;
		}
	}
	took = cur;
	need = bytes - took;
	if (S.batch && need + S.batch > need) {
		CNT(trips);
		if (!nxq__charge_probe(S.ctx, d->holder, need + S.batch)) {
			CNT(charges);
			__atomic_add_fetch(&d->credit, S.batch, __ATOMIC_RELAXED);
			goto granted;
		}
	}
	if (!charge(ord, H_PLAIN, d->holder, need, bytes))
		goto granted;
	__atomic_add_fetch(&d->credit, took, __ATOMIC_RELAXED);
	return -1;
granted:
	if (__atomic_load_n(&d->last, __ATOMIC_RELAXED) != bytes)
		__atomic_store_n(&d->last, bytes, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Owed bytes (struct dev's owed, cowed): what a holder holds that the
 * authority has not charged -- allocated while no authority answered,
 * and refused (or not asked yet) at the catch-up (connect.c).  As
 * libnxquota does with what a restore could not take back (unbacked
 * bytes): they are asked for before any new charge on the device
 * (owed_first()), so the process does not grow while it holds memory
 * uncharged; its frees pay them off first (those bytes were never
 * charged); the connector asks for them again in the background.
 * Charges of them one at a time (S.owe_mu); frees pay them lock-free: a
 * charge and frees that paid meanwhile settle by giving the difference
 * back.
 */
uint64_t *owedp(int ord, int kind)
{
	return kind == H_CTX ? &S.dev[ord].cowed : &S.dev[ord].owed;
}

/* Take up to bytes off what holder kind of ord owes: what is left of bytes. */
uint64_t owed_pay(int ord, int kind, uint64_t bytes)
{
	uint64_t *o = owedp(ord, kind), cur = __atomic_load_n(o, __ATOMIC_RELAXED), p;

	while (cur) {
		p = cur < bytes ? cur : bytes;
		if (__atomic_compare_exchange_n(o, &cur, cur - p, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return bytes - p;
	}
	return bytes;
}

/*
 * Charge what holder kind of ord owes (its holder registered): 0 with it
 * charged (*paid: how much), or -1 refused (unless quiet, said as charge()
 * says it: "refused what this process allocated while no authority
 * answered"), nothing changed.
 */
int owed_charge(int ord, int kind, uint64_t holder, uint64_t *paid, int quiet)
{
	uint64_t d, left;
	int r = 0;

	*paid = 0;
	/*
	 * One at a time (the connector's retry and an allocation's): two
	 * charges of the same owed bytes could together exceed a budget that
	 * either fits, and refuse the allocation for nothing.
	 */
	pthread_mutex_lock(&S.owe_mu);
	d = __atomic_load_n(owedp(ord, kind), __ATOMIC_RELAXED);
	if (d && charge_said(ord, kind, holder, d, 0, quiet)) {
		r = -1;
	} else if (d) {
		/* frees paid some of it meanwhile: charged for nothing */
		left = owed_pay(ord, kind, d);
		if (left)
			uncharge(holder, left);
		*paid = d - left;
	}
	pthread_mutex_unlock(&S.owe_mu);
	return r;
}

/* owed_first() (shim.h) when something is owed on ord. */
int owed_first_slow(int ord)
{
	static const int kinds[2] = { H_PLAIN, H_CTX };
	struct dev *d = &S.dev[ord];
	uint64_t paid;

	for (int j = 0; j < 2; j++) {
		int k = kinds[j];

		if (!__atomic_load_n(owedp(ord, k), __ATOMIC_RELAXED))
			continue;
		if (dev_state(ord, k) != DS_CHARGE) {
			__atomic_store_n(owedp(ord, k), 0, __ATOMIC_RELAXED);
			continue;
		}
		if (owed_charge(ord, k, k == H_CTX ? d->cholder : d->holder, &paid, 0))
			return -1;
		__atomic_add_fetch(&S.cnt.repaid, paid, __ATOMIC_RELAXED);
		if (paid && !__atomic_load_n(&d->owed, __ATOMIC_RELAXED) &&
		    !__atomic_load_n(&d->cowed, __ATOMIC_RELAXED))
			say("%s: what this process held uncharged since the authority came is "
			    "charged now (before an allocation)", d->key);
	}
	return 0;
}

/* plain_give() while a ticket collects: 1 when the bytes went to its answer. */
int collect_add(struct dev *d, uint64_t bytes)
{
	int r = 0;

	pthread_mutex_lock(&S.col_mu);
	if (d->collect) {
		d->collected += bytes;
		r = 1;
	}
	pthread_mutex_unlock(&S.col_mu);
	return r;
}

void plain_give(int ord, uint64_t bytes)
{
	struct dev *d = &S.dev[ord];
	uint64_t cur, keep;

	/* bytes the authority never took: they pay off what is owed first */
	if (__builtin_expect(__atomic_load_n(&d->owed, __ATOMIC_RELAXED) != 0, 0)) {
		bytes = owed_pay(ord, H_PLAIN, bytes);
		if (!bytes || !d->holder)
			return;
	}
	/* a ticket is collecting what PyTorch's empty_cache() frees: its answer */
	if (__builtin_expect(__atomic_load_n(&d->collect, __ATOMIC_ACQUIRE), 0) &&
	    collect_add(d, bytes))
		return;
	if (!S.batch) {		/* exact: every free asks the authority */
		uncharge(d->holder, bytes);
		return;
	}
	cur = __atomic_add_fetch(&d->credit, bytes, __ATOMIC_RELAXED);
	keep = S.batch + __atomic_load_n(&d->last, __ATOMIC_RELAXED);
	if (keep < S.batch)
		keep = UINT64_MAX;	/* overflow: keep it all */
	while (cur > keep) {
		if (__atomic_compare_exchange_n(&d->credit, &cur, keep, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			uncharge(d->holder, cur - keep);
			return;
		}
	}
}

/* A ticket reached the device: the plain holder's whole credit goes back. */
void plain_drop_credit(int ord)
{
	struct dev *d = &S.dev[ord];
	uint64_t c;

	if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != DS_CHARGE)
		return;
	c = __atomic_exchange_n(&d->credit, 0, __ATOMIC_RELAXED);
	if (c)
		uncharge(d->holder, c);
}

/*
 * The device of the calling thread's current context, or -1.  A process
 * that sees one device (CUDA_VISIBLE_DEVICES, a one-GPU container: the
 * usual case) allocates on device 0 or, without a context, not at all
 * (the driver's CUDA_ERROR_INVALID_CONTEXT gives the charge back): no
 * driver call per allocation to ask.  The count is asked once (S.one_dev).
 */
int cur_dev(void)
{
	CUresult (*f)(CUdevice *) = (CUresult (*)(CUdevice *))R(R_cuCtxGetDevice);
	int one = __atomic_load_n(&S.one_dev, __ATOMIC_RELAXED);
	CUdevice d;

	if (__builtin_expect(one < 0, 0)) {
		CUresult (*cnt)(int *) = (CUresult (*)(int *))R(R_cuDeviceGetCount);
		int n;

		if (cnt && !cnt(&n)) {	/* not cached if it failed (before cuInit) */
			one = n == 1;
			__atomic_store_n(&S.one_dev, one, __ATOMIC_RELAXED);
		}
	}
	if (one > 0)
		return 0;

	if (!f || f(&d))
		return -1;
	return d;
}

/*
 * One plain allocation's charge: *holderp is 0 when nothing is charged
 * (NXQ_PRELOAD=off, device not under nxquota, no context: the driver says
 * what it says), PENDING while no authority answered (nothing charged, the
 * allocation to be remembered: S.down_rw is held for reading until
 * settle() or plain_undo()).  Returns -1 when refused.
 */
int charge_plain(int ord, uint64_t bytes, uint64_t *holderp)
{
	int st = authority();

	*holderp = 0;
	if (__builtin_expect(st == ST_DOWN, 0) && bytes) {
		if (S.require) {
			CNT(refused);	/* NXQUOTA_REQUIRE and no authority: said once */
			return -1;
		}
		if (ord < 0)
			return 0;
		if (down_begin()) {
			*holderp = PENDING;	/* S.down_rw held until settle() or plain_undo() */
			return 0;
		}
		st = ST_CHARGE;		/* it came meanwhile */
	}
	if (st < 0 || !bytes || ord < 0)
		return 0;
	st = dev_state(ord, H_PLAIN);
	if (st == DS_PASS)
		return 0;
	if (st == DS_REFUSE) {
		CNT(refused);
		return -1;
	}
	if (plain_take(ord, bytes))
		return -1;
	*holderp = S.dev[ord].holder;
	return 0;
}

/* After a plain allocation the driver refused: its charge back (or S.down_rw released). */
void plain_undo(int ord, uint64_t holder, uint64_t bytes)
{
	if (holder == PENDING)
		down_end();
	else if (holder)
		plain_give(ord, bytes);
}

/*
 * After a successful plain allocation: remember it, or undo it.  One the
 * driver made although cur_dev() could not tell on which device (its
 * cuCtxGetDevice failing: with a real driver that means no context, and
 * the driver refuses the allocation itself) is charged nowhere: under
 * NXQUOTA_REQUIRE it is given back and refused, without it passed, said
 * once -- never uncharged and silent.
 */
CUresult settle(int kind, uint64_t key, uint64_t bytes, int ord, uint64_t holder,
		CUresult (*undo)(uint64_t))
{
	int pend = holder == PENDING;

	/* K_PTR: cuMemAlloc, its pitch and managed forms, whose ord is
	 * cur_dev()'s (a handle's is its location's: -1 for host memory) */
	if (!holder && kind == K_PTR && ord < 0 && bytes && authority() != ST_PASS) {
		if (!S.require) {
			SAY_ONCE(S.said_nodev, "the driver allocated on a device no "
				 "context names (cuCtxGetDevice failed): passed "
				 "uncharged");
			return CUDA_SUCCESS;
		}
		SAY_ONCE(S.said_nodev, "the driver allocated on a device no context "
			 "names (cuCtxGetDevice failed): refused (NXQUOTA_REQUIRE)");
		CNT(refused);
		depth++;
		undo(key);
		depth--;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!holder)
		return CUDA_SUCCESS;
	if (!track(kind, key, bytes, ord, NULL, pend)) {
		if (pend)
			down_end();
		return CUDA_SUCCESS;
	}
	SAY_ONCE(S.said_hash, "out of memory tracking an allocation: refused");
	depth++;
	undo(key);
	depth--;
	plain_undo(ord, holder, bytes);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/*
 * An allocation's entry, freed: its bytes back to the plain holder -- not
 * one still pending (never charged), nor where nothing is charged (a
 * device not under nxquota); what is owed is paid first (plain_give()).
 */
void release_tracked(int kind, struct ent *e)
{
	if (!e->pend && e->dev >= 0 && e->dev < MAXDEV &&
	    (S.dev[e->dev].holder || __atomic_load_n(&S.dev[e->dev].owed, __ATOMIC_RELAXED)))
		plain_give(e->dev, e->bytes);
	ent_free(e);
	(void)kind;
}
