// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad - the nxquota authority where the module cannot load.
 *
 * Built from the module's ledger layers (kmod/event.c, counter.c, waitq.c,
 * pressure.c, objects.c, charge.c) over daemon/compat; this file plays the part of the module's main.c:
 * it wires the ledger's hooks to the daemon's shells (nxqd.h) and starts
 * them.  The client socket (client.c) speaks the ioctls of /dev/nxquota,
 * the control socket (ctl.c) the generic netlink family; devices and
 * budgets persist in the state directory (state.c), with the list of the
 * processes that hold holders (restart.c).
 *
 * Usage: nxquotad [-s SOCKET] [-c CONTROL] [-g GROUP] [-S STATEDIR]
 *                 [-G GRACE_MS] [-C CGROUP2DIR] [-P PER_PROCESS]
 *                 [-U PER_UID] [-v]
 */
#include <linux/types.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "nxqd.h"
#include "ctl.h"

struct nxq_ledger nxqd_ledger;
int nxqd_verbose;

const struct nxq_ledger_ops nxqd_ledger_ops = {
	.key_put	= nxqd_cgroup_key_put,
	.key_dead	= nxqd_cgroup_key_dead,
	.key_path	= nxqd_cgroup_key_name,
	.holder_kill	= nxqd_holder_kill,
	.holder_signal	= nxqd_holder_signal,
	.event		= nxqd_ctl_event,
};

/* A number for an option, 1..INT_MAX (0 too if @zero_ok); -1 if bad. */
static long nxqd_num(const char *s, bool zero_ok)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > INT_MAX || (!v && !zero_ok) ||
	    *s == '-')
		return -1;
	return v;
}

static void nxqd_usage(void)
{
	fprintf(stderr,
		"usage: nxquotad [-s SOCKET] [-c CONTROL] [-g GROUP] [-S STATEDIR]\n"
		"                [-G GRACE_MS] [-C CGROUP2DIR] [-P PER_PROCESS]\n"
		"                [-U PER_UID] [-v]\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL, *ctl = NULL, *group = NULL, *cgdir = NULL;
	const char *statedir = NXQD_STATE_DIR;
	long grace = NXQD_GRACE_MS, n;
	char ctlbuf[PATH_MAX];
	sigset_t set;
	int opt, err, sig;

	while ((opt = getopt(argc, argv, "s:c:g:S:G:C:P:U:v")) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'c':
			ctl = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'S':
			statedir = optarg;
			break;
		case 'G':
			grace = nxqd_num(optarg, true);
			if (grace < 0) {
				nxqd_usage();
				return 2;
			}
			break;
		case 'P':
		case 'U':
			n = nxqd_num(optarg, false);
			if (n < 0) {
				nxqd_usage();
				return 2;
			}
			if (opt == 'P')
				nxqd_conn_per_proc = n;
			else
				nxqd_conn_per_uid = n;
			break;
		case 'C':
			cgdir = optarg;
			break;
		case 'v':
			nxqd_verbose = 1;
			break;
		default:
			nxqd_usage();
			return 2;
		}
	}
	if (optind != argc) {
		nxqd_usage();
		return 2;
	}
	if (!path)
		path = NXQD_SOCKET_PATH;
	/* the control socket sits next to the client socket unless told */
	if (!ctl) {
		const char *slash = strrchr(path, '/');
		int n = slash ? (int)(slash - path) : 1;

		if (snprintf(ctlbuf, sizeof(ctlbuf), "%.*s/control.sock", n,
			     slash ? path : ".") >= (int)sizeof(ctlbuf)) {
			fprintf(stderr, "nxquotad: path too long\n");
			return 2;
		}
		ctl = ctlbuf;
	}

	/* SIGTERM and SIGINT are taken by sigwait() below, in this thread */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = nxqd_cgroup_init(cgdir);
	if (err) {
		fprintf(stderr, "nxquotad: cgroup2 %s: %s\n",
			cgdir ? cgdir : "mount", strerror(-err));
		return 1;
	}
	nxq_ledger_init(&nxqd_ledger, &nxqd_ledger_ops);
	err = nxqd_state_load(statedir);
	if (err) {
		fprintf(stderr, "nxquotad: state %s: %s\n", statedir,
			strerror(-err));
		return 1;
	}
	err = nxqd_restart_init(statedir, grace);
	if (err) {
		fprintf(stderr, "nxquotad: client list in %s: %s\n", statedir,
			strerror(-err));
		return 1;
	}
	/* first the client socket: it tells whether a daemon runs there */
	err = nxqd_client_start(path, group);
	if (err) {
		if (err != -EADDRINUSE)
			fprintf(stderr, "nxquotad: %s: %s\n", path,
				strerror(-err));
		return 1;
	}
	err = nxqd_ctl_start(ctl);
	if (err) {
		fprintf(stderr, "nxquotad: %s: %s\n", ctl, strerror(-err));
		nxqd_client_stop();
		return 1;
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: listening on %s (cgroup2 %s)\n",
			path, nxqd_cgroup_root());
	do {
		if (sigwait(&set, &sig))
			sig = 0;
	} while (sig != SIGTERM && sig != SIGINT);

	/* the client list stays for the next start: a restart restores */
	nxqd_restart_exit();
	nxqd_client_stop();
	nxqd_ctl_stop();
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: stopped\n");
	return 0;
}
