// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-probe - can this process reach an nxquota authority?  Run inside a
 * container by tests/vm/containers (built dynamically linked on purpose:
 * it also proves that the container's rootfs has a working loader and
 * libc, which the LD_PRELOAD shim will need).
 *
 * Like libnxquota: /dev/nxquota when it exists, else nxquotad's client
 * socket ($NXQUOTA_SOCKET, default /run/nxquota/client/nxquota.sock).  Asks
 * NXQ_IOC_VERSION and prints one line:
 *   nxq-probe: module /dev/nxquota abi=N features=0xF
 *   nxq-probe: daemon PATH abi=N features=0xF
 *   nxq-probe: none: /dev/nxquota: ERR; PATH: ERR
 * Exit status 0 when an authority answered, 2 when none was reachable,
 * 1 when one was reachable but the request failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/nxquota.h>

#include <linux/nxquotad.h>

static int probe_module(const char *path, struct nxq_version *v)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, NXQ_IOC_VERSION, v) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

static int probe_daemon(const char *path, struct nxq_version *v)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct {
		struct nxqd_req req;
		struct nxq_version v;
	} q;
	struct {
		struct nxqd_rep rep;
		struct nxq_version v;
	} r;
	ssize_t n;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto err;
	memset(&q, 0, sizeof(q));
	q.req.cmd = NXQ_IOC_VERSION;
	q.v = *v;
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) < 0)
		goto err;
	memset(&r, 0, sizeof(r));
	n = recv(fd, &r, sizeof(r), 0);
	if (n < 0)
		goto err;
	close(fd);
	if ((size_t)n < sizeof(r.rep))
		return -EPROTO;
	if (r.rep.err)
		return r.rep.err;
	if ((size_t)n < sizeof(r.rep) + NXQ_VERSION_SIZE_VER0)
		return -EPROTO;
	*v = r.v;
	return 0;
err:
	n = -errno;
	close(fd);
	return (int)n;
}

int main(void)
{
	const char *sock = getenv("NXQUOTA_SOCKET");
	struct nxq_version v = { .size = sizeof(v) };
	int rc, rc2;

	if (!sock || !*sock)
		sock = NXQD_SOCKET_PATH;
	rc = probe_module("/dev/nxquota", &v);
	if (rc == 0) {
		printf("nxq-probe: module /dev/nxquota abi=%u features=0x%llx\n",
		       v.abi_version, (unsigned long long)v.features);
		return 0;
	}
	if (rc != -ENOENT) {
		printf("nxq-probe: module /dev/nxquota: %s\n", strerror(-rc));
		return 1;
	}
	rc2 = probe_daemon(sock, &v);
	if (rc2 == 0) {
		printf("nxq-probe: daemon %s abi=%u features=0x%llx\n", sock,
		       v.abi_version, (unsigned long long)v.features);
		return 0;
	}
	printf("nxq-probe: none: /dev/nxquota: %s; %s: %s\n", strerror(-rc),
	       sock, strerror(-rc2));
	return rc2 == -ENOENT || rc2 == -ECONNREFUSED ? 2 : 1;
}
