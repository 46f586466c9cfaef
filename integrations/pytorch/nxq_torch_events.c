// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxq_torch: the pressure events of a managed context (libnxquota's
 * nxq_ctx_opts.on_event), kept for the runtime above.
 *
 *  - A ring of the last NXQ_TORCH_EVENTS events (a ticket read, an answer
 *    sent), each stamped with CLOCK_MONOTONIC when the library's pressure
 *    thread passed it on: one clock for every process of a host, so a
 *    ticket read by one process can be set beside the grant another one
 *    waited for.  nxq_torch_events() drains it; a full ring drops the
 *    oldest event and counts it.
 *  - The ticket being answered: the library emits a ticket's event on its
 *    pressure thread before it runs the reclaim callbacks for it, on the
 *    same thread, so the release hook (nxq_torch_set_release_hook()) can
 *    read the ticket's level and reason with nxq_torch_ticket() -- and give
 *    up memory in use (a runtime's preemption) only when a guarantee is
 *    being called back (NXQ_TICKET_LEVEL_RECALL).
 *
 * Locking: ev_lock protects the ring and its counters; the current ticket
 * is thread-local (the pressure thread's).  Nothing here calls back.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "nxquota.h"
#include "nxq_torch.h"

#define API __attribute__((visibility("default")))

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ring[NXQ_TORCH_EVENTS][NXQ_TORCH_EVENT_WORDS];	/* ev_lock */
static unsigned int head, count;				/* ev_lock */
static uint64_t dropped;					/* ev_lock */
static __thread struct { int set; uint64_t w[NXQ_TORCH_EVENT_WORDS]; } cur;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* nxq_ctx_opts.on_event of the managed context (nxq_torch.c). */
void nxq_torch__on_event(const struct nxq_event *ev, void *user)
{
	uint64_t w[NXQ_TORCH_EVENT_WORDS] = {
		ev->type, now_ns(), ev->generation, ev->bytes_wanted, ev->level, ev->reason,
		ev->released, ev->charged,
	};

	(void)user;
	if (ev->type == NXQ_EVENT_TICKET) {
		memcpy(cur.w, w, sizeof(w));
		cur.set = 1;
	}
	pthread_mutex_lock(&ev_lock);
	if (count == NXQ_TORCH_EVENTS) {
		head = (head + 1) % NXQ_TORCH_EVENTS;
		count--;
		dropped++;
	}
	memcpy(ring[(head + count) % NXQ_TORCH_EVENTS], w, sizeof(w));
	count++;
	pthread_mutex_unlock(&ev_lock);
}

API int nxq_torch_events(uint64_t *out, int max)
{
	int n = 0;

	if (max < 0 || (max && !out))
		return -EINVAL;
	pthread_mutex_lock(&ev_lock);
	while (n < max && count) {
		memcpy(out + (size_t)n * NXQ_TORCH_EVENT_WORDS, ring[head], sizeof(ring[0]));
		head = (head + 1) % NXQ_TORCH_EVENTS;
		count--;
		n++;
	}
	pthread_mutex_unlock(&ev_lock);
	return n;
}

API uint64_t nxq_torch_events_dropped(void)
{
	uint64_t d;

	pthread_mutex_lock(&ev_lock);
	d = dropped;
	pthread_mutex_unlock(&ev_lock);
	return d;
}

API int nxq_torch_ticket(uint64_t *out)
{
	if (!out)
		return -EINVAL;
	if (!cur.set)
		return -ENOENT;
	memcpy(out, cur.w, sizeof(cur.w));
	return 0;
}
