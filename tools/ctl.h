/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The authority's transport, shared by nxquotactl and nxquota-hook
 * (ctl.c, and extack.c for the replies): connect to the module's generic
 * netlink family, else to nxquotad's control socket, and send requests
 * whose replies come back through one set of libnl callbacks on either
 * transport.
 */
#ifndef NXQ_TOOLS_CTL_H
#define NXQ_TOOLS_CTL_H

#include <stdbool.h>
#include <stdint.h>

struct nl_sock;
struct nl_msg;
struct nl_cb;
struct nlattr;

/* <linux/nxquotad.h>'s control socket */
#define NXQD_CONTROL_PATH	"/run/nxquota/control.sock"
#define NXQD_GENL_ID		0x7ffe

#ifndef NXQ_VERSION
#define NXQ_VERSION "unknown"
#endif

/* Exit statuses of the tools. */
enum { EX_OK, EX_FAIL, EX_USAGE, EX_NOMOD, EX_PERM };

/* The program's name in messages ("nxquotactl" unless set). */
extern const char *prog;

/* "PROG: MESSAGE\n" on stderr. */
void __attribute__((format(printf, 1, 2))) warnx_(const char *fmt, ...);

struct ctl {
	struct nl_sock *sk;
	int family;
	int events_grp;
	int ufd;		/* the daemon's control socket, -1: netlink */
	const char *control;	/* --control PATH, or NULL */
};

/* What one request got back. */
struct reply {
	int error;		/* the authority's negative errno, 0 */
	char msg[256];		/* its extended-ack message */
	bool done;
	bool intr;		/* a dump part was flagged NLM_F_DUMP_INTR */
	int (*data)(struct nlattr **tb, void *arg);
	void *arg;
	int maxattr;
};

/*
 * Connect: n->control's daemon only if set; else the module's family,
 * else the daemon at $NXQUOTA_CONTROL or NXQD_CONTROL_PATH.  Says why on
 * stderr when it fails.  Returns EX_OK, EX_FAIL, EX_NOMOD or EX_PERM.
 */
int ctl_connect(struct ctl *n);
void ctl_close(struct ctl *n);
/* A callback set for one request on n's transport (nl_cb_put it). */
struct nl_cb *ctl_cb(struct ctl *n);
/* A new request (exits on ENOMEM). */
struct nl_msg *ctl_new(struct ctl *n, uint8_t cmd, int flags);
/* Send msg (freed) and read until the ack or the dump's end: r->error. */
int ctl_request(struct ctl *n, struct nl_msg *msg, struct reply *r);
int ctl_report(const char *what, struct reply *r);

#endif /* NXQ_TOOLS_CTL_H */
