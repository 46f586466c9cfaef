// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The ticket thread: an epoll loop over the holders' eventfds (and a
 * stop eventfd), started under S.lock when the first holder with an
 * eventfd registers, stopped by the tests; each signalled holder goes to
 * S.on_ticket with the tag dev_state() registered it with (tickets.c's
 * ticket_event(), set by the constructor, fork.c): this file never calls
 * up into the handlers.
 *
 * Layer 1: calls resolve.c and state.c.
 */
#include "shim.h"

static void *ticket_thread(void *arg)
{
	struct epoll_event ev[8];

	(void)arg;
	for (;;) {
		int n = epoll_wait(S.epfd, ev, 8, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == UINT32_MAX)
				return NULL;
			S.on_ticket(ev[i].data.u32);
		}
	}
	return NULL;
}

/* With S.lock held. */
int ticket_thread_start_locked(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	sigset_t all, old;
	int r;

	if (S.thread_on)
		return 0;
	S.epfd = epoll_create1(EPOLL_CLOEXEC);
	S.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (S.epfd < 0 || S.stopfd < 0 || epoll_ctl(S.epfd, EPOLL_CTL_ADD, S.stopfd, &ev))
		goto fail;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&S.thread, NULL, ticket_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		errno = r;
		goto fail;
	}
	S.thread_on = 1;
	return 0;
fail:
	say("cannot start the ticket thread (%s): pool memory cannot be asked back",
	    strerror(errno));
	if (S.epfd >= 0)
		close(S.epfd);
	if (S.stopfd >= 0)
		close(S.stopfd);
	S.epfd = S.stopfd = -1;
	return -1;
}

void ticket_thread_stop(void)
{
	uint64_t one = 1;

	if (!S.thread_on)
		return;
	if (write(S.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(S.thread, NULL);
	close(S.epfd);
	close(S.stopfd);
	S.epfd = S.stopfd = -1;
	S.thread_on = 0;
}
