// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's tickets: each holder that can be asked for memory passed an
 * eventfd, and the ledger's holder_signal hook adds 1 to it -- in the
 * module, eventfd_signal(), which never blocks.  Here the file is the
 * tenant's too: it may clear O_NONBLOCK on it and fill its counter, and
 * a write would then wait.  So no eventfd is written by the loop or under
 * a ledger lock: the hook queues the holder's struct nxqd_efd (once, while
 * queued) and this file's thread writes it, with O_NONBLOCK set again and
 * POLLOUT checked first; a write that waits all the same (the tenant won
 * the race between the check and the write) is cut short by a timer
 * signal after NXQD_SIGNAL_US, and that file is never written again (its
 * tickets stay readable: NXQ_IOC_TICKET_READ).  What a tenant can cost the
 * others is then one cut-short write per holder it registered.
 *
 * The cut is short (1 ms; 5 ms before issue 32) because it costs no honest
 * tenant anything: an eventfd write sleeps only when the counter cannot
 * take the 1 (full, and O_NONBLOCK cleared -- the tenant's doing), so the
 * timer interrupts nothing else; a write that is merely slow (the thread
 * preempted on a busy host) is not sleeping and finishes.  The timer
 * repeats until it is disarmed, so that one that fired before the write
 * began (the thread preempted between arming it and writing) still cuts
 * the write: a single shot would have been spent, and the thread would
 * wait for as long as the tenant liked.
 *
 * Lifetimes: an efd is referenced by its holder (freed after an RCU grace
 * period, nxqd_free_priv() in client_obj.c) and by the queue while queued.
 * sig.m guards the queue and the flags.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"

/* The longest an eventfd write may wait before it is cut short. */
#define NXQD_SIGNAL_US		1000

struct nxqd_efd {
	int fd;
	int refs;			/* atomic */
	bool queued;			/* sig.m */
	bool refused;			/* sig.m: never written again */
	struct list_head link;		/* sig.m: in sig.queue */
};

static struct {
	pthread_mutex_t m;
	pthread_cond_t more, drained;
	struct list_head queue;
	bool stop, running;
	pthread_t thread;
	unsigned long refused;
	u64 added, done;		/* queued, and written (or dropped) */
} sig = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
	.drained = PTHREAD_COND_INITIALIZER,
	.queue = LIST_HEAD_INIT(sig.queue),
};

struct nxqd_efd *nxqd_efd_new(int fd)
{
	struct nxqd_efd *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->fd = fd;
	e->refs = 1;
	INIT_LIST_HEAD(&e->link);
	return e;
}

void nxqd_efd_put(struct nxqd_efd *e)
{
	if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_SEQ_CST))
		return;
	close(e->fd);
	free(e);
}

void nxqd_efd_signal(struct nxqd_efd *e)
{
	pthread_mutex_lock(&sig.m);
	if (!e->queued && !e->refused && !sig.stop) {
		e->queued = true;
		__atomic_add_fetch(&e->refs, 1, __ATOMIC_SEQ_CST);
		list_add_tail(&e->link, &sig.queue);
		sig.added++;
		pthread_cond_signal(&sig.more);
	}
	pthread_mutex_unlock(&sig.m);
}

/*
 * Wait until every eventfd queued so far is written: an answer that
 * follows (a budget change's ack) comes after the tickets it caused, as
 * the module's eventfd_signal() does before its write returns.  Each
 * write is cut short after NXQD_SIGNAL_MS, so this waits at most that
 * long for each queued holder; a holder's eventfd is queued once at a
 * time.
 */
void nxqd_signal_flush(void)
{
	u64 want;

	pthread_mutex_lock(&sig.m);
	want = sig.added;
	while (sig.running && sig.done < want)
		pthread_cond_wait(&sig.drained, &sig.m);
	pthread_mutex_unlock(&sig.m);
}

unsigned long nxqd_signal_refused(void)
{
	unsigned long n;

	pthread_mutex_lock(&sig.m);
	n = sig.refused;
	pthread_mutex_unlock(&sig.m);
	return n;
}

static void nxqd_signal_alarm(int signo)
{
	/* only to end a write with EINTR */
}

/* Add 1; false if the write had to be cut short. */
static bool nxqd_efd_write(struct nxqd_efd *e, timer_t timer)
{
	struct itimerspec arm = {
		.it_value.tv_nsec = NXQD_SIGNAL_US * NSEC_PER_USEC,
		.it_interval.tv_nsec = NXQD_SIGNAL_US * NSEC_PER_USEC,
	}, off = { 0 };
	struct pollfd pf = { .fd = e->fd, .events = POLLOUT };
	u64 one = 1;
	ssize_t n;
	int fl;

	fl = fcntl(e->fd, F_GETFL);
	if (fl < 0)
		return true;
	if (!(fl & O_NONBLOCK))
		fcntl(e->fd, F_SETFL, fl | O_NONBLOCK);
	/* a full counter: a signal is pending there already */
	if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT))
		return true;
	timer_settime(timer, 0, &arm, NULL);
	n = write(e->fd, &one, sizeof(one));
	timer_settime(timer, 0, &off, NULL);
	if (n < 0 && errno == EINTR)
		return false;
	if (n < 0 && errno != EAGAIN && nxqd_verbose)
		fprintf(stderr, "nxquotad: eventfd write: %s\n",
			strerror(errno));
	return true;
}

static void *nxqd_signal_main(void *unused)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGRTMIN };
	struct sigaction sa = { .sa_handler = nxqd_signal_alarm };
	struct nxqd_efd *e;
	sigset_t set;
	timer_t timer;
	bool ok, skip;

	/* SIGRTMIN, not restarted, for this thread only */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		abort();
	pthread_mutex_lock(&sig.m);
	for (;;) {
		while (list_empty(&sig.queue) && !sig.stop)
			pthread_cond_wait(&sig.more, &sig.m);
		if (list_empty(&sig.queue))
			break;
		e = list_first_entry(&sig.queue, struct nxqd_efd, link);
		list_del_init(&e->link);
		/*
		 * Unqueued before the write, not after: a ticket opened while
		 * it is written (the tenant already woken, drained and gone
		 * back to sleep) queues it again.  Marked after the write, that
		 * signal was skipped and the ticket never read (bench/serve's
		 * lost RECALL ticket).
		 */
		e->queued = false;
		skip = e->refused;	/* queued again before its cut */
		pthread_mutex_unlock(&sig.m);
		ok = skip || nxqd_efd_write(e, timer);
		pthread_mutex_lock(&sig.m);
		sig.done++;
		pthread_cond_broadcast(&sig.drained);
		if (!ok) {
			e->refused = true;
			sig.refused++;
			if (nxqd_verbose)
				fprintf(stderr,
					"nxquotad: an eventfd write waited: that file is not written again\n");
		}
		pthread_mutex_unlock(&sig.m);
		nxqd_efd_put(e);
		pthread_mutex_lock(&sig.m);
	}
	pthread_mutex_unlock(&sig.m);
	timer_delete(timer);
	return NULL;
}

int nxqd_signal_start(void)
{
	sigset_t set, old;
	int err;

	/* every other thread keeps SIGRTMIN blocked */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	err = pthread_create(&sig.thread, NULL, nxqd_signal_main, NULL);
	if (err)
		return -err;
	sig.running = true;
	return 0;
}

void nxqd_signal_stop(void)
{
	struct nxqd_efd *e, *tmp;
	LIST_HEAD(left);

	if (!sig.running)
		return;
	pthread_mutex_lock(&sig.m);
	sig.stop = true;
	/* what is still queued is not written */
	list_splice_init(&sig.queue, &left);
	list_for_each_entry(e, &left, link) {
		e->queued = false;
		sig.done++;
	}
	pthread_cond_broadcast(&sig.drained);
	pthread_cond_signal(&sig.more);
	pthread_mutex_unlock(&sig.m);
	pthread_join(sig.thread, NULL);
	sig.running = false;
	list_for_each_entry_safe(e, tmp, &left, link) {
		list_del_init(&e->link);
		nxqd_efd_put(e);
	}
}
