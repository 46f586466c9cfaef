// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The arena's side of the module's tickets (see arena.h for the objects):
 * reclaim callbacks, and pressure tickets (charge.c holds the charges and
 * reports themselves).  Each arena registers with its context's pressure
 * reactor (nxq__ledger_attach(): its eventfd, handle_tickets(),
 * report_changed()).  A ticket is handled by the reactor (pressure.c,
 * holding ctx->plock): streams fenced and completed frees collected, retained
 * handles, then idle segments (whole handles: the answer overshoots by
 * less than one handle), then the callbacks (lock dropped around each),
 * then what they made idle; in_pressure defers retention meanwhile so
 * that everything released is counted in the one answer.  Only idle
 * segments are ever unmapped.
 *
 * Layer 4: calls err.c, block.c, charge.c, mapping.c and pressure.c (it
 * registers each arena there as a client; pressure.c never calls back
 * except through the client).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

/* ---- pressure: reclaim callbacks and tickets ---- */

NXQ_API int nxq_arena_add_reclaim(struct nxq_arena *a, nxq_reclaim_fn cb, void *user)
{
	struct reclaim_node *n, *x;

	if (!a || !cb)
		return nxq__err(-EINVAL, "nxquota: NULL arena or callback");
	n = calloc(1, sizeof(*n));
	if (!n)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	n->fn = cb;
	n->user = user;
	pthread_mutex_lock(&a->lock);
	STAILQ_FOREACH(x, &a->cbs, link)
		if (x->fn == cb && x->user == user && !x->dead) {
			pthread_mutex_unlock(&a->lock);
			free(n);
			return nxq__err(-EEXIST, "nxquota: this callback and user pointer are "
					"already registered");
		}
	STAILQ_INSERT_TAIL(&a->cbs, n, link);	/* callbacks run in registration order */
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* Unlink and free dead nodes; the caller holds plock (or there is no handler). */
static void reap_dead(struct nxq_arena *a)
{
	struct reclaim_node *n, *nx;

	for (n = STAILQ_FIRST(&a->cbs); n; n = nx) {
		nx = STAILQ_NEXT(n, link);
		if (n->dead) {
			STAILQ_REMOVE(&a->cbs, n, reclaim_node, link);
			free(n);
		}
	}
}

/* Destroy: free every node (no handler can run: the arena is detached). */
void nxq__reclaim_fini(struct nxq_arena *a)
{
	struct reclaim_node *n;

	while ((n = STAILQ_FIRST(&a->cbs))) {
		STAILQ_REMOVE_HEAD(&a->cbs, link);
		free(n);
	}
}

NXQ_API int nxq_arena_remove_reclaim(struct nxq_arena *a, nxq_reclaim_fn cb, void *user)
{
	struct nxq_ctx *ctx;
	int found = 0, inside;

	if (!a || !cb)
		return nxq__err(-EINVAL, "nxquota: NULL arena or callback");
	ctx = a->ctx;
	inside = nxq__in_handler(ctx);
	/* Wait for a handling pass in progress, unless this is it. */
	if (ctx->pressure && !inside)
		pthread_mutex_lock(&ctx->plock);
	pthread_mutex_lock(&a->lock);
	struct reclaim_node *n;

	STAILQ_FOREACH(n, &a->cbs, link)
		if (n->fn == cb && n->user == user && !n->dead) {
			n->dead = 1;
			found = 1;
			break;
		}
	if (!inside)
		reap_dead(a);	/* else the handler reaps after its walk */
	pthread_mutex_unlock(&a->lock);
	if (ctx->pressure && !inside)
		pthread_mutex_unlock(&ctx->plock);
	return found ? 0 : nxq__err(-ENOENT, "nxquota: no such reclaim callback");
}

static struct reclaim_node *next_live(struct reclaim_node *n)
{
	while (n && n->dead)
		n = STAILQ_NEXT(n, link);
	return n;
}

/*
 * Release towards want (bytes, counting what is already owed): streams
 * fenced and completed frees collected, retained handles, idle segments,
 * then each callback followed by a release of what it made idle.  Everything released is added to a->owed; the module is told
 * by the answer.  Called with plock held and the arena lock not held.
 */
static void release_for(struct nxq_arena *a, uint64_t want)
{
	struct reclaim_node *n;

	pthread_mutex_lock(&a->lock);
	if (a->owed >= want)
		goto out;
	a->in_pressure = 1;
	nxq__fence_streams(a, NULL);
	nxq__poll_pending(a, 1);	/* completed stream frees become idle */
	/* 1. retained physical handles: nothing mapped, nothing to wait for */
	a->owed += nxq__release_pool(a, want - a->owed);
	/* 2. idle segments (FREE only, whole handles) */
	if (a->owed < want)
		a->owed += nxq__release_idle(a, want - a->owed, 0);
	/*
	 * 3. the application's callbacks, in registration order.  What they
	 * free comes back in whole handles: if a pass freed memory but left
	 * the ask uncovered (a handle still partly in use), they are asked
	 * again for the rest, a few passes at most.
	 */
	for (int pass = 0; pass < 4 && a->owed < want; pass++) {
		uint64_t busy0 = a->in_use;

		for (n = next_live(STAILQ_FIRST(&a->cbs)); n && a->owed < want;
		     n = next_live(STAILQ_NEXT(n, link))) {
			nxq_reclaim_fn fn = n->fn;
			void *user = n->user;
			uint64_t ask = want - a->owed;
			int r;

			a->reclaim_calls++;
			pthread_mutex_unlock(&a->lock);
			r = fn(a, ask, user);
			pthread_mutex_lock(&a->lock);
			if (r < 0)
				a->reclaim_errors++;
			nxq__fence_streams(a, NULL);
			nxq__poll_pending(a, 1);
			if (a->owed < want)
				a->owed += nxq__release_idle(a, want - a->owed, 0);
		}
		if (a->in_use >= busy0)
			break;		/* nothing freed: asking again would not help */
	}
	a->in_pressure = 0;
	reap_dead(a);
out:
	pthread_mutex_unlock(&a->lock);
}

static void emit_answer(struct nxq_arena *a, const struct nxq_ticket *t, uint64_t released,
			uint64_t charged, int err)
{
	struct nxq_event ev = { .size = sizeof(ev), .type = NXQ_EVENT_ANSWER, .arena = a,
				.generation = t->generation, .released = released,
				.charged = charged, .error = err };

	nxq__emit(a->ctx, &ev);
}

/* The pressure client's handle(): plock held, arena lock not held. */
static int handle_tickets(void *arg)
{
	struct nxq_arena *a = arg;
	const struct nxq_kops *k = a->ctx->kops;
	int handled = 0, stale = 0;

	for (;;) {
		struct nxq_ticket t;
		struct nxq_event ev = { .size = sizeof(ev), .type = NXQ_EVENT_TICKET, .arena = a };
		uint64_t released, charged = 0;
		int r;

		r = k->ticket_read(a->ctx, a->holder, &t);
		if (r) {
			pthread_mutex_lock(&a->lock);
			if (r != -EAGAIN)
				a->kernel_errors++;
			if (a->owed) {
				/* The ticket went away (its asker gave up) after we
				 * released: give the bytes back with a plain uncharge. */
				nxq__k_uncharge(a, a->owed);
				a->owed = 0;
			}
			nxq__enforce_retention(a);
			nxq__report_reclaimable(a);
			pthread_mutex_unlock(&a->lock);
			break;
		}
		handled++;
		pthread_mutex_lock(&a->lock);
		a->tickets++;
		a->last_gen = t.generation;
		pthread_mutex_unlock(&a->lock);
		ev.generation = t.generation;
		ev.bytes_wanted = t.bytes;
		ev.deadline_ns = t.deadline_ns;
		ev.reason = t.reason;
		ev.level = t.level;
		nxq__emit(a->ctx, &ev);

		release_for(a, t.bytes);
		pthread_mutex_lock(&a->lock);
		released = a->owed;
		pthread_mutex_unlock(&a->lock);
		r = k->ticket_answer(a->ctx, a->holder, t.generation, released, &charged);
		pthread_mutex_lock(&a->lock);
		if (r == -ESTALE && ++stale <= 64) {
			/* Raised (or closed) since we read it: nothing was uncharged;
			 * read it again and answer the new generation with all of it. */
			a->stale_answers++;
			pthread_mutex_unlock(&a->lock);
			continue;
		}
		if (r) {
			a->kernel_errors++;
			nxq__k_uncharge(a, a->owed);
		} else {
			a->charged -= released;
			a->answers++;
			a->answered_bytes += released;
		}
		a->owed = 0;
		charged = a->charged;
		nxq__report_reclaimable(a);
		pthread_mutex_unlock(&a->lock);
		emit_answer(a, &t, released, charged, r);
	}
	return handled;
}

/* The pressure client's report(): plock held, arena lock not held. */
static void report_changed(void *arg)
{
	struct nxq_arena *a = arg;

	pthread_mutex_lock(&a->lock);
	/* finished stream frees become FREE (and idle) without waiting for an allocation */
	nxq__fence_streams(a, NULL);
	nxq__poll_pending(a, 1);
	nxq__report_reclaimable(a);
	pthread_mutex_unlock(&a->lock);
}

int nxq__ledger_attach(struct nxq_arena *a)
{
	a->pclient = (struct nxq_pclient){ .fd = a->evfd, .handle = handle_tickets,
					   .report = report_changed, .arg = a };
	return nxq__pressure_attach(a->ctx, &a->pclient);
}

int nxq__ledger_detach(struct nxq_arena *a)
{
	return nxq__pressure_detach(a->ctx, &a->pclient);
}
