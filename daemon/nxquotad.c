// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad - the nxquota authority where the module cannot load.
 *
 * Built from the module's ledger layers (kmod/event.c, counter.c, waitq.c,
 * pressure.c, objects.c, charge.c) and the ABI both authorities share
 * (kmod/abi.c) over daemon/compat; this file plays the part of the
 * module's main.c: it wires the ledger's hooks to the daemon's shells
 * (nxqd.h), starts them on the event loop, tells systemd it is ready
 * (Type=notify) and stops them on SIGTERM.  The client socket (client.c)
 * speaks the ioctls of /dev/nxquota, the control socket (ctl.c) the
 * generic netlink family; devices and budgets persist in the state
 * directory (state.c), with the record of what each holder held
 * (restart.c).
 *
 * Usage: nxquotad [-s SOCKET] [-c CONTROL] [-g GROUP] [-S STATEDIR]
 *                 [-G GRACE_MS] [-R RECORD_MS] [-C CGROUP2DIR]
 *                 [-N CONNS] [-K PER_CGROUP] [-U PER_UID] [-P PER_PROCESS]
 *                 [-Q RESERVE] [-B BUSY_US] [-b BACKSTOP_MS]
 *                 [-x ALLOWANCE] [-k] [-M ADDR] [-v]
 *        nxquotad --help
 */
#include <linux/types.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nxqd.h"
#include "metrics.h"

struct nxq_ledger nxqd_ledger;
int nxqd_verbose;

/*
 * The module's shells behind struct nxq_ledger_ops, here: a holder's
 * kill, ticket signal and cgroup move (client.c), events and whether
 * anyone listens (ctl.c), node keys (dcgroup.c).  No sysfs: nothing is told of devices
 * and nodes coming and going.
 */
const struct nxq_ledger_ops nxqd_ledger_ops = {
	.holder_kill	= nxqd_holder_kill,
	.holder_signal	= nxqd_holder_signal,
	.holder_follow	= nxqd_holder_follow,
	.event		= nxqd_ctl_event,
	.listening	= nxqd_ctl_listening,
	NXQD_CGROUP_KEY_OPS,
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

/* A byte count for an option (digits, a K, M, G or T suffix): 0 or -1. */
static int nxqd_bytes(const char *s, u64 *out)
{
	static const char sfx[] = "KMGT";
	unsigned long long v;
	const char *p;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end) {
		p = strchr(sfx, *end);
		if (!p || end[1] || v > (~0ULL >> (10 * (p - sfx + 1))))
			return -1;
		v <<= 10 * (p - sfx + 1);
	}
	*out = v;
	return 0;
}

static void nxqd_usage_to(FILE *f)
{
	fprintf(f,
		"usage: nxquotad [-s SOCKET] [-c CONTROL] [-g GROUP] [-S STATEDIR]\n"
		"                [-G GRACE_MS] [-R RECORD_MS] [-C CGROUP2DIR]\n"
		"                [-N CONNS] [-K PER_CGROUP] [-U PER_UID]\n"
		"                [-P PER_PROCESS] [-Q RESERVE] [-B BUSY_US]\n"
		"                [-b BACKSTOP_MS] [-x ALLOWANCE] [-k] [-M ADDR] [-v]\n"
		"       nxquotad --help\n");
}

static void nxqd_usage(void)
{
	nxqd_usage_to(stderr);
}

/* --help: the options in a line each, on stdout (nxquotad(8) has more). */
static void nxqd_help(void)
{
	nxqd_usage_to(stdout);
	printf("\nThe nxquota authority where the kernel module cannot load.\n\n"
	       "  -s SOCKET       the client socket (%s)\n"
	       "  -c CONTROL      the control socket (next to SOCKET)\n"
	       "  -g GROUP        the group that may connect to SOCKET\n"
	       "  -S STATEDIR     devices, budgets and the record (%s)\n"
	       "  -G GRACE_MS     the restart's grace window for restores\n"
	       "  -R RECORD_MS    how often the record is written\n"
	       "  -C CGROUP2DIR   the cgroup2 root the node keys are under\n"
	       "  -N, -K, -U, -P  connections in all, per cgroup, per uid,\n"
	       "                  per process\n"
	       "  -Q RESERVE      connections kept per subtree\n"
	       "  -B BUSY_US      busy polling of the loop (0: off)\n"
	       "  -b BACKSTOP_MS  NVML's backstop period (0: off)\n"
	       "  -x ALLOWANCE    bytes a process may hold past its charge\n"
	       "  -k              the backstop kills what escaped the ledger\n"
	       "  -M, --metrics=ADDR\n"
	       "                  serve Prometheus' /metrics on ADDR: PORT or\n"
	       "                  127.0.0.1:PORT (loopback), [::1]:PORT,\n"
	       "                  HOST:PORT, or /PATH (a unix socket, 0600);\n"
	       "                  off unless given\n"
	       "  -v              say more on stderr\n"
	       "  -h, --help      this text\n",
	       NXQD_SOCKET_PATH, NXQD_STATE_DIR);
}

/*
 * As many descriptors as the hard limit allows: each connection is one
 * (and each holder's eventfd); the bound on connections (-N) says how
 * many the daemon lets the tenants have.
 */
static void nxqd_raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The directory of the socket @sock and its missing parents, made 0755
 * (the sockets' own modes say who may connect; a client must be able to
 * reach its socket through them): /run is a fresh tmpfs at boot, and a
 * DaemonSet's hostPath may be empty.  Directories that exist are left as
 * they are.  Return: 0, or -1 having said why.
 */
static int nxqd_mkdirs(const char *sock)
{
	const char *slash = strrchr(sock, '/');
	char dir[PATH_MAX], *p, c;
	struct stat st;
	int err;

	if (!slash || slash == sock)
		return 0;
	if ((size_t)(slash - sock) >= sizeof(dir)) {
		fprintf(stderr, "nxquotad: %s: %s\n", sock, strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(dir, sock, slash - sock);
	dir[slash - sock] = '\0';
	for (p = dir + 1;; p++) {
		if (*p && *p != '/')
			continue;
		c = *p;
		*p = '\0';
		if (!mkdir(dir, 0755)) {
			/* 0755 whatever the umask */
			err = chmod(dir, 0755) ? errno : 0;
		} else {
			err = errno;
			if (err == EEXIST)
				err = stat(dir, &st) ? errno :
				      S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
		}
		if (err) {
			fprintf(stderr, "nxquotad: cannot create %s (the directory of %s): %s\n",
				dir, sock, strerror(err));
			return -1;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

/*
 * Where the control socket goes when -c does not say: next to the client
 * socket, or in the parent of its directory when that is named "client"
 * (NXQD_SOCKET_DIR: a directory of its own, which containers are given,
 * so the control socket must not be in it).
 */
static int nxqd_ctl_default(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/'), *base;
	int len;

	if (!slash)
		return snprintf(buf, size, "control.sock") >= (int)size;
	/* @base: the last component of the directory, [base, slash) */
	for (base = slash; base > path && base[-1] != '/'; base--)
		;
	len = slash - path;
	if (slash - base == 6 && !strncmp(base, "client", 6))
		len = base - path;	/* the parent, with its '/' */
	else
		len++;			/* the directory and its '/' */
	return snprintf(buf, size, "%.*scontrol.sock", len, path) >= (int)size;
}

static void nxqd_on_signal(int sig)
{
	if (sig == SIGTERM || sig == SIGINT)
		nxqd_loop_stop();
}

int main(int argc, char **argv)
{
	const char *path = NULL, *ctl = NULL, *group = NULL, *cgdir = NULL;
	const char *statedir = NXQD_STATE_DIR, *metrics = NULL;
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "metrics", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	long grace = NXQD_GRACE_MS, record = NXQD_RECORD_MS, n;
	char ctlbuf[PATH_MAX], status[128];
	int opt, err;

	while ((opt = getopt_long(argc, argv, "s:c:g:S:G:R:C:N:K:P:U:Q:B:b:x:kM:vh",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			nxqd_help();
			return 0;
		case 'M':
			metrics = optarg;
			break;
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
		case 'R':
			n = nxqd_num(optarg, opt == 'G');
			if (n < 0) {
				nxqd_usage();
				return 2;
			}
			if (opt == 'G')
				grace = n;
			else
				record = n;
			break;
		case 'N':
		case 'K':
		case 'P':
		case 'U':
			n = nxqd_num(optarg, false);
			if (n < 0) {
				nxqd_usage();
				return 2;
			}
			if (opt == 'N')
				nxqd_conns_max = n;
			else if (opt == 'K')
				nxqd_conn_per_cgroup = n;
			else if (opt == 'P')
				nxqd_conn_per_proc = n;
			else
				nxqd_conn_per_uid = n;
			break;
		case 'Q':
			/* room kept per subtree beyond -U and -N (0: none) */
			n = nxqd_num(optarg, true);
			if (n < 0) {
				nxqd_usage();
				return 2;
			}
			nxqd_conn_reserve = n;
			break;
		case 'B':
			n = nxqd_num(optarg, true);
			if (n < 0 || n > 10000) {
				nxqd_usage();
				return 2;
			}
			nxqd_busy_us = n;
			break;
		case 'b':
			/* the backstop's period, 10 ms to an hour (0: off) */
			n = nxqd_num(optarg, true);
			if (n < 0 || (n && n < 10) || n > 3600000) {
				nxqd_usage();
				return 2;
			}
			nxqd_backstop_ms = n;
			break;
		case 'x':
			if (nxqd_bytes(optarg, &nxqd_backstop_allow)) {
				nxqd_usage();
				return 2;
			}
			break;
		case 'k':
			nxqd_backstop_kill = true;
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
	if (!ctl) {
		if (nxqd_ctl_default(path, ctlbuf, sizeof(ctlbuf))) {
			fprintf(stderr, "nxquotad: path too long\n");
			return 2;
		}
		ctl = ctlbuf;
	}
	/* a socket systemd passes is there already; else make its directory */
	if ((nxqd_listen_fds("client") < 0 && nxqd_mkdirs(path)) ||
	    (nxqd_listen_fds("control") < 0 && nxqd_mkdirs(ctl)))
		return 1;

	signal(SIGPIPE, SIG_IGN);
	nxqd_raise_nofile();
	/* before any thread: they all keep SIGTERM, SIGINT blocked */
	err = nxqd_loop_init();
	if (err) {
		fprintf(stderr, "nxquotad: event loop: %s\n", strerror(-err));
		return 1;
	}
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
	err = nxqd_signal_start();
	if (err) {
		fprintf(stderr, "nxquotad: signal thread: %s\n",
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
	err = nxqd_restart_init(statedir, grace, record,
				nxqd_client_restart());
	if (err) {
		fprintf(stderr, "nxquotad: record in %s: %s\n", statedir,
			strerror(-err));
		nxqd_client_stop();
		return 1;
	}
	err = nxqd_ctl_start(ctl);
	if (err) {
		fprintf(stderr, "nxquotad: %s: %s\n", ctl, strerror(-err));
		nxqd_client_stop();
		return 1;
	}
	err = nxqd_backstop_start();
	if (err) {
		fprintf(stderr, "nxquotad: backstop: %s\n", strerror(-err));
		nxqd_ctl_stop();
		nxqd_client_stop();
		return 1;
	}
	/* its own thread, a client of the control socket (metrics.c) */
	if (metrics && nxqd_metrics_start(metrics, ctl)) {
		nxqd_backstop_stop();
		nxqd_ctl_stop();
		nxqd_client_stop();
		return 1;
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: listening on %s (cgroup2 %s)\n",
			path, nxqd_cgroup_root());
	snprintf(status, sizeof(status),
		 "READY=1\nSTATUS=serving %s\nMAINPID=%d", path, (int)getpid());
	nxqd_notify(status);

	nxqd_loop_run(nxqd_on_signal);

	nxqd_notify("STOPPING=1");
	/* what each holder holds stays for the next start: it restores */
	nxqd_record_final();
	nxqd_metrics_stop();
	nxqd_backstop_stop();
	nxqd_ctl_stop();
	nxqd_client_stop();
	nxqd_restart_exit();
	nxqd_signal_stop();
	nxqd_loop_exit();
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: stopped\n");
	return 0;
}
