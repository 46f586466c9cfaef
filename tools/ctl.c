// SPDX-License-Identifier: GPL-2.0
/*
 * The authority's transport, shared by nxquotactl and nxquota-hook: the
 * module's generic netlink family "nxquota" if it resolves, else
 * nxquotad's control socket, which speaks the same family, one netlink
 * message per SOCK_SEQPACKET message (<linux/nxquotad.h>).  The messages,
 * sequence checks and callbacks are libnl's either way.  See ctl.h.
 * This file connects, builds requests and closes; extack.c reads the
 * replies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"

const char *prog = "nxquotactl";

void warnx_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the family ---------------------------------------------------------- */


/*
 * The daemon's transport under libnl: nl_send_auto() and nl_recvmsgs()
 * call these instead of sendmsg/recvmsg on a netlink socket, so the
 * messages, the sequence checks and the callbacks are libnl's as with the
 * module.  The callbacks get the libnl socket only: each daemon
 * connection's socket is paired with its descriptor here (a process has
 * two at most: `events` looks paths up on a second one).
 */
static struct {
	struct nl_sock *sk;
	int fd;
} ux_conns[4];

static int ux_fd_of(struct nl_sock *sk)
{
	size_t i;

	for (i = 0; i < sizeof(ux_conns) / sizeof(ux_conns[0]); i++)
		if (ux_conns[i].sk == sk)
			return ux_conns[i].fd;
	return -1;
}

static int ux_send(struct nl_sock *sk, struct nl_msg *msg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	int ux_fd = ux_fd_of(sk);
	ssize_t n;

	n = send(ux_fd, h, h->nlmsg_len, MSG_NOSIGNAL);
	if (n < 0)
		return -nl_syserr2nlerr(errno);
	return (int)n;
}

static int ux_recv(struct nl_sock *sk, struct sockaddr_nl *nla,
		   unsigned char **buf, struct ucred **creds)
{
	int ux_fd = ux_fd_of(sk);
	ssize_t n, size;

	if (creds)
		*creds = NULL;
	memset(nla, 0, sizeof(*nla));
	nla->nl_family = AF_NETLINK;
	do
		size = recv(ux_fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	while (size < 0 && errno == EINTR);
	if (size <= 0) {
		if (size == 0)	/* the daemon closed the connection */
			errno = ECONNRESET;
		return -nl_syserr2nlerr(errno);
	}
	*buf = malloc((size_t)size);
	if (!*buf)
		return -NLE_NOMEM;
	do
		n = recv(ux_fd, *buf, (size_t)size, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		free(*buf);
		*buf = NULL;
		if (n == 0)
			errno = ECONNRESET;
		return -nl_syserr2nlerr(errno);
	}
	return (int)n;
}

/* A callback set for one request, on whichever transport. */
struct nl_cb *ctl_cb(struct ctl *n)
{
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);

	if (cb && n->ufd >= 0)
		nl_cb_overwrite_recv(cb, ux_recv);
	return cb;
}

/* Connect to the daemon's control socket at @path: fd, or -errno. */
static int ux_dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Use the daemon at @path: 0, or -errno of the connection. */
static int ctl_connect_daemon(struct ctl *n, const char *path)
{
	struct nl_cb *cb;
	int fd = ux_dial(path);
	size_t i;

	if (fd < 0)
		return fd;
	for (i = 0; i < sizeof(ux_conns) / sizeof(ux_conns[0]); i++)
		if (!ux_conns[i].sk)
			break;
	if (i == sizeof(ux_conns) / sizeof(ux_conns[0])) {
		close(fd);
		return -EMFILE;
	}
	ux_conns[i].sk = n->sk;
	ux_conns[i].fd = fd;
	n->ufd = fd;
	n->family = NXQD_GENL_ID;
	cb = nl_socket_get_cb(n->sk);
	nl_cb_overwrite_send(cb, ux_send);
	nl_cb_overwrite_recv(cb, ux_recv);
	nl_cb_put(cb);
	return 0;
}

static int daemon_denied(const char *path)
{
	warnx_("%s: permission denied (nxquotad's control socket is root's)",
	       path);
	return EX_PERM;
}

int ctl_connect(struct ctl *n)
{
	const char *path = getenv("NXQUOTA_CONTROL");
	int one = 1, err, nl_err = 0;

	n->ufd = -1;
	n->sk = nl_socket_alloc();
	if (!n->sk) {
		warnx_("out of memory");
		return EX_FAIL;
	}
	if (n->control) {
		err = ctl_connect_daemon(n, n->control);
		if (err == -EACCES || err == -EPERM)
			return daemon_denied(n->control);
		if (err) {
			warnx_("no nxquotad control socket at %s: %s",
			       n->control, strerror(-err));
			return EX_NOMOD;
		}
		return EX_OK;
	}
	if (genl_connect(n->sk) < 0) {
		nl_err = errno;
	} else {
		setsockopt(nl_socket_get_fd(n->sk), SOL_NETLINK,
			   NETLINK_EXT_ACK, &one, sizeof(one));
		n->family = genl_ctrl_resolve(n->sk, NXQUOTA_FAMILY_NAME);
		if (n->family >= 0)
			return EX_OK;
		/* Start again on a socket that libnl never connected. */
		nl_socket_free(n->sk);
		n->sk = nl_socket_alloc();
		if (!n->sk) {
			warnx_("out of memory");
			return EX_FAIL;
		}
	}
	if (!path || !path[0])
		path = NXQD_CONTROL_PATH;
	err = ctl_connect_daemon(n, path);
	if (!err)
		return EX_OK;
	if (err == -EACCES || err == -EPERM)
		return daemon_denied(path);
	if (nl_err)
		warnx_("cannot open a generic netlink socket: %s",
		       strerror(nl_err));
	warnx_("no nxquota authority: the module is not loaded (no generic "
	       "netlink family \"%s\"; try: modprobe nxquota) and nxquotad "
	       "does not answer at %s (%s; start it, or set NXQUOTA_CONTROL "
	       "or --control PATH)", NXQUOTA_FAMILY_NAME, path, strerror(-err));
	return EX_NOMOD;
}


/**
 * ctl_close() - drop the connection ctl_connect() made
 */
void ctl_close(struct ctl *n)
{
	size_t i;

	for (i = 0; i < sizeof(ux_conns) / sizeof(ux_conns[0]); i++)
		if (n->sk && ux_conns[i].sk == n->sk)
			ux_conns[i].sk = NULL;
	if (n->sk)
		nl_socket_free(n->sk);
	if (n->ufd >= 0)
		close(n->ufd);
	n->sk = NULL;
	n->ufd = -1;
}
