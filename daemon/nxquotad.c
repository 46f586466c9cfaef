// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad - the nxquota authority where the module cannot load (skeleton).
 *
 * Built from the module's ledger layers (kmod/ledger.c, kmod/charge.c) over
 * daemon/compat.  So far: the SOCK_SEQPACKET socket, one thread per client
 * whose identity is taken from SO_PEERCRED at accept, the ioctl's argument
 * rules (size, unknown bytes, unknown commands) and NXQ_IOC_VERSION.  It
 * reports no features: holders and charges are not served yet.
 *
 * Usage: nxquotad [-s SOCKET] [-v]
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ledger.h"
#include "proto.h"

static struct nxq_ledger nxqd_ledger;
static const struct nxq_ledger_ops nxqd_ops;	/* none needed yet */
static int nxqd_verbose;

struct nxqd_client {
	int fd;
	struct ucred cred;	/* from the kernel, at accept */
};

/* The commands served, and the size of the struct the daemon knows. */
struct nxqd_cmd {
	__u32 cmd;
	size_t ksize, ver0;
	bool out;
	int (*fn)(struct nxqd_client *c, void *arg);
};

static int nxqd_version(struct nxqd_client *c, void *arg)
{
	struct nxq_version *v = arg;

	(void)c;
	v->abi_version = NXQ_ABI_VERSION;
	v->features = 0;	/* no holders, no charges yet */
	return 0;
}

static const struct nxqd_cmd nxqd_cmds[] = {
	{ NXQ_IOC_VERSION, sizeof(struct nxq_version), NXQ_VERSION_SIZE_VER0,
	  true, nxqd_version },
};

#define NXQD_CMD(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

/*
 * One request: @msg, @len bytes.  Returns the reply's errno and sets
 * *@outlen to the bytes of @arg to send back.
 */
static int nxqd_handle(struct nxqd_client *c, const unsigned char *msg,
		       size_t len, void *arg, size_t *outlen)
{
	const struct nxqd_req *req = (const void *)msg;
	const struct nxqd_cmd *op = NULL;
	size_t i, alen;
	__u32 usize;
	int err;

	*outlen = 0;
	if (len < sizeof(*req) + sizeof(__u32) || req->reserved)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(nxqd_cmds); i++)
		if (NXQD_CMD(req->cmd) == NXQD_CMD(nxqd_cmds[i].cmd))
			op = &nxqd_cmds[i];
	if (!op)
		return -ENOTTY;
	alen = len - sizeof(*req);
	memcpy(&usize, msg + sizeof(*req), sizeof(usize));
	if (usize != alen)
		return -EINVAL;	/* the message is the struct, all of it */
	if (usize < op->ver0)
		return -EINVAL;
	if (usize > NXQD_ARG_MAX)
		return -E2BIG;
	/* copy_struct_from_user()'s rule: what we do not know must be 0 */
	for (i = op->ksize; i < usize; i++)
		if (msg[sizeof(*req) + i])
			return -E2BIG;
	memset(arg, 0, op->ksize);
	memcpy(arg, msg + sizeof(*req), min_t(size_t, usize, op->ksize));
	err = op->fn(c, arg);
	if (!err && op->out)
		*outlen = min_t(size_t, usize, op->ksize);
	return err;
}

static void *nxqd_client_main(void *p)
{
	struct nxqd_client *c = p;
	unsigned char msg[sizeof(struct nxqd_req) + NXQD_ARG_MAX + 1];
	union {
		struct nxq_version version;
		unsigned char bytes[NXQD_ARG_MAX];
	} arg;
	unsigned char rep[sizeof(struct nxqd_rep) + sizeof(arg)];
	struct nxqd_rep *r = (void *)rep;
	size_t outlen;
	ssize_t n;

	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d uid %u gid %u\n",
			c->cred.pid, c->cred.uid, c->cred.gid);
	for (;;) {
		n = recv(c->fd, msg, sizeof(msg), MSG_TRUNC);
		if (n <= 0)
			break;	/* 0: the peer is gone */
		memset(r, 0, sizeof(*r));
		if ((size_t)n > sizeof(msg)) {
			r->err = -E2BIG;
			outlen = 0;
		} else {
			r->err = nxqd_handle(c, msg, (size_t)n, &arg, &outlen);
		}
		memcpy(rep + sizeof(*r), &arg, outlen);
		if (send(c->fd, rep, sizeof(*r) + outlen, MSG_NOSIGNAL) < 0)
			break;
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: client pid %d gone\n", c->cred.pid);
	close(c->fd);
	free(c);
	return NULL;
}

static int nxqd_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, probe;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "nxquotad: socket path too long: %s\n", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno != EADDRINUSE) {
			close(fd);
			return -1;
		}
		/* A socket file left by a daemon that died, or a live one? */
		probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "nxquotad: already running on %s\n",
				path);
			close(probe);
			close(fd);
			errno = EADDRINUSE;
			return -1;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			return -1;
		}
	}
	/* Who may connect: set like the device's group (item 2, not yet). */
	if (chmod(path, 0660) || listen(fd, 64)) {
		close(fd);
		return -1;
	}
	return fd;
}

static volatile sig_atomic_t nxqd_stop;

static void nxqd_on_signal(int sig)
{
	(void)sig;
	nxqd_stop = 1;
}

int main(int argc, char **argv)
{
	const char *path = getenv("NXQUOTA_SOCKET");
	struct sigaction sa = { .sa_handler = nxqd_on_signal };
	struct pollfd pfd;
	int opt, lfd;

	if (!path)
		path = NXQD_SOCKET_PATH;
	while ((opt = getopt(argc, argv, "s:v")) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'v':
			nxqd_verbose = 1;
			break;
		default:
			fprintf(stderr, "usage: nxquotad [-s SOCKET] [-v]\n");
			return 2;
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	nxq_ledger_init(&nxqd_ledger, &nxqd_ops);
	lfd = nxqd_listen(path);
	if (lfd < 0) {
		if (errno != EADDRINUSE)
			fprintf(stderr, "nxquotad: %s: %s\n", path,
				strerror(errno));
		return 1;
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: listening on %s\n", path);
	pfd.fd = lfd;
	pfd.events = POLLIN;
	while (!nxqd_stop) {
		struct nxqd_client *c;
		socklen_t len;
		pthread_t tid;
		int fd;

		if (poll(&pfd, 1, -1) < 0)
			continue;	/* EINTR: a signal, maybe the stop */
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		c = calloc(1, sizeof(*c));
		len = sizeof(struct ucred);
		if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred,
				     &len)) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		if (pthread_create(&tid, NULL, nxqd_client_main, c)) {
			free(c);
			close(fd);
			continue;
		}
		pthread_detach(tid);
	}
	close(lfd);
	unlink(path);
	nxq_ledger_destroy(&nxqd_ledger);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: stopped\n");
	return 0;
}
