// SPDX-License-Identifier: GPL-2.0
/* nxq-pause: the pod sandbox's process (what Kubernetes' pause image
 * does): wait for a signal; SIGTERM or SIGINT ends it. */
#include <signal.h>
#include <unistd.h>

static void done(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	signal(SIGTERM, done);
	signal(SIGINT, done);
	for (;;)
		pause();
}
