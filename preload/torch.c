// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * PyTorch: a plain holder's ticket in a PyTorch process answered by
 * torch.cuda.empty_cache() run in the main thread (Py_AddPendingCall),
 * waited for a bounded time (py_release()); the reasons are below.
 *
 * Layer 5: calls charge.c, python.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- PyTorch's cached segments: torch.cuda.empty_cache() on a ticket ---- */

/*
 * PyTorch's native caching allocator keeps the segments it got from
 * cudaMalloc (cuMemAlloc_v2; cuMemCreate with expandable segments) after
 * their tensors are gone; only its emptyCache() gives them back, and the
 * shim sees those frees (cuMemFree_v2, cuMemRelease).  How the ticket
 * thread gets emptyCache() run, and why this way (preload/README.md,
 * "PyTorch's cache", has the whole argument):
 *
 *  - not the C++ allocator object (c10::cuda::CUDACachingAllocator::
 *    allocator, an atomic pointer to a class whose emptyCache is a virtual
 *    call): calling it from C relies on a vtable slot, which changes with
 *    PyTorch's version, and runs it on a thread PyTorch never expects;
 *  - not PyGILState_Ensure() on the ticket thread: the main thread may hold
 *    the GIL inside a CUDA call that waits for this very ticket's answer
 *    (an allocation with NXQ_PRELOAD_WAIT_MS, or torch code that calls
 *    CUDA without releasing the GIL): a deadlock, or an answer as late as
 *    that call;
 *  - Py_AddPendingCall() (CPython's stable ABI; documented as callable from
 *    any thread without the GIL): the callback runs in the main thread, with
 *    the GIL, at its next bytecode boundary -- exactly as if the program had
 *    called torch.cuda.empty_cache() between two of its statements, which
 *    is PyTorch's public, supported use.  The main thread is then inside
 *    no PyTorch call; other threads' allocations are serialised against
 *    emptyCache() by the allocator's own lock, as for any user call.
 *
 * The ticket thread does not wait for the callback beyond NXQ_PRELOAD_PY_
 * WAIT_MS (250 ms; at most half the time to the ticket's deadline): a main
 * thread that reaches no bytecode boundary (a long C call, blocked in
 * read()) gets its ticket answered with what was released so far (the
 * credit, possibly 0); when its callback runs later, those frees are
 * uncharged on their own (and the credit with them).
 *
 * Everything is found with dlsym(RTLD_DEFAULT): a process that is not
 * Python has none of these symbols and is untouched.  A Python process is
 * a PyTorch process when libc10_cuda.so (PyTorch's CUDA allocator) is
 * loaded at its plain holder's registration (no GIL needed to ask the
 * loader); the callback itself empties the cache only if sys.modules has
 * torch.cuda and the current stream is not capturing a CUDA graph.
 */

/* The pending call: in the main thread, with the GIL, between two bytecodes. */
static int py_cb(void *arg)
{
	void *mods = P.moddict(), *m, *r;
	int late = 1;

	(void)arg;
	m = mods ? P.dict_get(mods, "torch.cuda") : NULL;	/* borrowed; NULL: not imported */
	if (m) {
		r = P.call_method(m, "is_current_stream_capturing", NULL);
		if (r && !P.is_true(r)) {
			P.decref(r);
			r = P.call_method(m, "empty_cache", NULL);
		}
		if (r)
			P.decref(r);
		else
			P.err_clear();	/* ours, not the program's: none was pending here */
	}
	pthread_mutex_lock(&S.py_mu);
	S.py_pending = 0;
	S.py_done++;
	pthread_cond_broadcast(&S.py_cv);
	pthread_mutex_unlock(&S.py_mu);
	CNT(py_calls);
	/* no ticket collected the frees (it was answered before): uncharge them */
	for (int i = 0; i < MAXDEV; i++)
		if (__atomic_load_n(&S.dev[i].collect, __ATOMIC_ACQUIRE))
			late = 0;
	if (late)
		for (int i = 0; i < MAXDEV; i++)
			if (S.dev[i].plevfd > 0)
				plain_drop_credit(i);
	return 0;
}

/*
 * A ticket to device ord's plain holder (a PyTorch process): the bytes to
 * answer with -- the credit, and what the plain holder's frees give back
 * while the callback runs (or until the wait ends).  No trip to the
 * authority: the answer itself uncharges them.
 */
uint64_t py_release(int ord, const struct nxq_ticket *t)
{
	struct dev *d = &S.dev[ord];
	uint64_t start = now_ns(), until, done0, released, credit;
	struct timespec ts;
	int ran, queued = 1;

	pthread_mutex_lock(&S.col_mu);
	credit = __atomic_exchange_n(&d->credit, 0, __ATOMIC_RELAXED);
	d->collected = credit;
	__atomic_store_n(&d->collect, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.col_mu);

	until = start + S.py_wait_ns;
	if (t->deadline_ns > start && (t->deadline_ns - start) / 2 < S.py_wait_ns)
		until = start + (t->deadline_ns - start) / 2;
	pthread_mutex_lock(&S.py_mu);
	done0 = S.py_done;
	if (!S.py_pending) {
		if (P.is_init() && !P.add_pending(py_cb, NULL))
			S.py_pending = 1;
		else
			queued = 0;
	}
	while (queued && S.py_done == done0) {
		uint64_t now = now_ns();

		if (now >= until)
			break;
		ts.tv_sec = (time_t)(until / 1000000000ULL);
		ts.tv_nsec = (long)(until % 1000000000ULL);
		pthread_cond_timedwait(&S.py_cv, &S.py_mu, &ts);
	}
	ran = S.py_done != done0;
	pthread_mutex_unlock(&S.py_mu);

	pthread_mutex_lock(&S.col_mu);
	__atomic_store_n(&d->collect, 0, __ATOMIC_RELEASE);
	released = d->collected;
	d->collected = 0;
	pthread_mutex_unlock(&S.col_mu);
	if (!ran)
		CNT(py_late);
	if (S.verbose)
		say("ticket on %s's plain holder: %llu bytes asked; answer %llu bytes (credit "
		    "%llu, empty_cache %s) after %llu ms", d->key, (unsigned long long)t->bytes,
		    (unsigned long long)released, (unsigned long long)credit,
		    !queued ? "not queued" : ran ? "ran" : "not run yet",
		    (unsigned long long)((now_ns() - start) / 1000000ULL));
	else if (!queued)
		SAY_ONCE(S.said_py, "Py_AddPendingCall failed: a ticket is answered with the "
			 "credit only");
	return released;
}
