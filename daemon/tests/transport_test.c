// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's socket, tested from outside: the daemon binary ($NXQD_BIN)
 * runs as a child on a socket in a fresh directory; the cases speak the
 * protocol of <linux/nxquotad.h> to it as a client would, hostile ones included.
 */
#include <grp.h>

#include "client_harness.h"

static void nxqd_test_version(struct kunit *test)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct daemon d;
	size_t rlen;
	int fd;

	start(test, &d);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v), &v,
				   &rlen), 0);
	KUNIT_EXPECT_EQ(test, rlen, sizeof(v));
	KUNIT_EXPECT_EQ(test, v.abi_version, NXQ_ABI_VERSION);
	/* the module's features: everything but the module itself */
	KUNIT_EXPECT_EQ(test, v.features,
			(__u64)(NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE |
				NXQ_FEAT_STATUS | NXQ_FEAT_CHARGE_WAIT |
				NXQ_FEAT_TICKETS | NXQ_FEAT_STATUS_V1 |
				NXQ_FEAT_CHARGE_PROBE | NXQ_FEAT_CHARGE_V1));
	/* the protocol's version, in every reply, at either version */
	{
		unsigned char rep[64];
		struct nxqd_rep r;
		struct {
			struct nxqd_req req;
			struct nxq_version v;
		} q = { .req = { .cmd = NXQ_IOC_VERSION, .version = 1 },
			.v = { .size = sizeof(v) } };

		KUNIT_EXPECT_EQ(test, (long)send(fd, &q, sizeof(q), 0),
				(long)sizeof(q));
		KUNIT_EXPECT_EQ(test, (long)recv(fd, rep, sizeof(rep), 0),
				(long)(sizeof(r) + sizeof(v)));
		memcpy(&r, rep, sizeof(r));
		KUNIT_EXPECT_EQ(test, r.err, 0);
		KUNIT_EXPECT_EQ(test, r.version, NXQD_PROTO_VERSION);
		KUNIT_EXPECT_EQ(test, r.flags, 0);
	}

	/* the size bits of the command are ignored, as for the ioctl */
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION & ~(_IOC_SIZEMASK <<
							   _IOC_SIZESHIFT), 0,
				   &v, sizeof(v), NULL, &rlen), 0);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/* The ioctl's argument rules hold over the socket. */
static void nxqd_test_bad_requests(struct kunit *test)
{
	unsigned char big[4200] = { 0 };
	struct nxq_version *v = (void *)big;
	struct daemon d;
	size_t rlen;
	int fd;

	start(test, &d);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	/* unknown command */
	v->size = sizeof(*v);
	KUNIT_EXPECT_EQ(test, call(fd, _IOWR(NXQ_IOC_MAGIC, 0x40,
					     struct nxq_version), 0, v,
				   sizeof(*v), NULL, &rlen), -ENOTTY);
	KUNIT_EXPECT_EQ(test, call(fd, _IOWR(0x42, 0x00, struct nxq_version),
				   0, v, sizeof(*v), NULL, &rlen), -ENOTTY);
	/* the header: flags at version 0, a version not known, flags not
	 * known or not the command's */
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, req_vf(0, 1), v,
				   sizeof(*v), NULL, &rlen), -EINVAL);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION,
				   req_vf(NXQD_PROTO_VERSION + 1, 0), v,
				   sizeof(*v), NULL, &rlen), -EPROTONOSUPPORT);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, req_vf(1, 1U << 15), v,
				   sizeof(*v), NULL, &rlen), -EINVAL);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION,
				   req_vf(1, NXQD_REQ_RESTORE), v, sizeof(*v),
				   NULL, &rlen), -EINVAL);
	/* version 2's flag, on another command */
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION,
				   req_vf(2, NXQD_REQ_NOTIFY), v, sizeof(*v),
				   NULL, &rlen), -EINVAL);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION,
				   req_vf(1, NXQD_REQ_RESTORED), v, sizeof(*v),
				   NULL, &rlen), 0);
	/* smaller than the first version of the struct */
	v->size = NXQ_VERSION_SIZE_VER0 - 4;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, v->size, NULL,
				   &rlen), -EINVAL);
	/* size field and message disagree */
	v->size = sizeof(*v) + 8;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, sizeof(*v), NULL,
				   &rlen), -EINVAL);
	/* a newer caller: unknown bytes zero is fine, non-zero is -E2BIG */
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, v->size, v,
				   &rlen), 0);
	KUNIT_EXPECT_EQ(test, rlen, sizeof(*v));
	v->size = sizeof(*v) + 8;
	big[sizeof(*v) + 3] = 1;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, v->size, NULL,
				   &rlen), -E2BIG);
	big[sizeof(*v) + 3] = 0;
	/* more than a page */
	v->size = sizeof(big);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, sizeof(big),
				   NULL, &rlen), -E2BIG);
	/* too short to hold a size */
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, 2, NULL, &rlen),
			-EINVAL);
	/* and the connection still serves */
	v->size = sizeof(*v);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, v, sizeof(*v), v,
				   &rlen), 0);
	KUNIT_EXPECT_EQ(test, v->abi_version, NXQ_ABI_VERSION);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/* Messages keep their boundaries; a stream socket cannot connect. */
static void nxqd_test_seqpacket(struct kunit *test)
{
	struct nxq_version v = { .size = sizeof(v) };
	unsigned char two[2 * (sizeof(struct nxqd_req) + sizeof(v))];
	struct nxqd_req req = { .cmd = NXQ_IOC_VERSION };
	struct daemon d;
	size_t rlen;
	int fd;

	start(test, &d);
	KUNIT_EXPECT_EQ(test, dial(d.sock, SOCK_STREAM), -EPROTOTYPE);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	/* two requests in one message are one malformed request */
	memcpy(two, &req, sizeof(req));
	memcpy(two + sizeof(req), &v, sizeof(v));
	memcpy(two + sizeof(req) + sizeof(v), &req, sizeof(req));
	memcpy(two + 2 * sizeof(req) + sizeof(v), &v, sizeof(v));
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v), NULL,
				   &rlen), 0);
	KUNIT_EXPECT_EQ(test, (long)send(fd, two, sizeof(two), 0),
			(long)sizeof(two));
	{
		unsigned char rep[256];
		struct nxqd_rep r;

		KUNIT_EXPECT_EQ(test, (long)recv(fd, rep, sizeof(rep), 0),
				(long)sizeof(r));
		memcpy(&r, rep, sizeof(r));
		KUNIT_EXPECT_EQ(test, r.err, -EINVAL);
	}
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/*
 * Identity comes from the kernel: the daemon sees the process that
 * connected (a child here, not the daemon's parent).
 */
static void nxqd_test_peercred(struct kunit *test)
{
	char want[96], buf[4096] = "";
	struct nxq_version v = { .size = sizeof(v) };
	struct daemon d;
	int fd, log, st = 0;
	size_t rlen;
	pid_t child;
	ssize_t n;

	start(test, &d);
	child = fork();
	KUNIT_ASSERT_GE(test, child, 0);
	if (!child) {
		fd = dial(d.sock, SOCK_SEQPACKET);
		_exit(fd < 0 || call(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v),
				     NULL, &rlen) ? 1 : 0);
	}
	KUNIT_ASSERT_EQ(test, waitpid(child, &st, 0), child);
	KUNIT_EXPECT_TRUE(test, WIFEXITED(st) && !WEXITSTATUS(st));
	usleep_range(50000, 51000);	/* its "gone" line */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	log = open(d.log, O_RDONLY);
	KUNIT_ASSERT_GE(test, log, 0);
	n = read(log, buf, sizeof(buf) - 1);
	close(log);
	KUNIT_ASSERT_GT(test, n, 0L);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "client pid %d uid %u gid %u\n",
		 (int)child, getuid(), getgid());
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, want));
	cleanup(test, &d);
}

/* One daemon per socket; a dead one's socket file is taken over. */
/*
 * A daemon whose last thread is still exiting keeps its listening socket
 * (its leader can be reaped, or a zombie, before): a listener that lets go
 * 300 ms after the next daemon starts is waited for, not taken for a live
 * daemon ("already running", exit 1).
 */
static void dying_listener(struct kunit *test, struct daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ready[2], fd = -1, i, status = 0;
	pid_t lp;
	char c;

	strscpy(sa.sun_path, d->sock, sizeof(sa.sun_path));
	KUNIT_ASSERT_EQ(test, pipe(ready), 0);
	lp = fork();
	KUNIT_ASSERT_GE(test, lp, 0);
	if (!lp) {
		int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(l, 8) || write(ready[1], "r", 1) != 1)
			_exit(1);
		usleep(300 * 1000);
		_exit(0);	/* the socket file stays, as after SIGKILL */
	}
	close(ready[1]);
	KUNIT_ASSERT_EQ(test, read(ready[0], &c, 1), 1);
	close(ready[0]);
	d->pid = spawn(test, d);
	KUNIT_EXPECT_EQ(test, waitpid(lp, &status, 0), lp);
	KUNIT_EXPECT_EQ(test, status, 0);
	for (i = 0; i < 500 && fd < 0; i++) {
		/* a daemon that gave up is no longer there to wait for */
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			KUNIT_FAIL(test, "the daemon exited (status %#x) while "
				   "a dying listener held its socket", status);
			return;
		}
		fd = dial(d->sock, SOCK_SEQPACKET);	/* lp is gone */
		if (fd < 0)
			usleep_range(10000, 11000);
	}
	KUNIT_EXPECT_GE(test, fd, 0);
	if (fd >= 0)
		close(fd);
	KUNIT_EXPECT_EQ(test, stop(d, SIGTERM), 0);
}

static void nxqd_test_one_daemon(struct kunit *test)
{
	struct daemon d, d2;
	struct stat st;
	int status = 0;

	start(test, &d);
	d2 = d;
	d2.pid = spawn(test, &d2);
	KUNIT_ASSERT_EQ(test, waitpid(d2.pid, &status, 0), d2.pid);
	KUNIT_EXPECT_TRUE(test, WIFEXITED(status));
	KUNIT_EXPECT_EQ(test, WEXITSTATUS(status), 1);
	KUNIT_EXPECT_EQ(test, dial(d.sock, SOCK_SEQPACKET) >= 0, true);
	/* SIGKILL leaves the socket file behind */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	KUNIT_EXPECT_EQ(test, stat(d.sock, &st), 0);
	KUNIT_EXPECT_EQ(test, dial(d.sock, SOCK_SEQPACKET), -ECONNREFUSED);
	d2.pid = spawn(test, &d2);
	{
		int i, fd = -1;

		for (i = 0; i < 500 && fd < 0; i++) {
			fd = dial(d.sock, SOCK_SEQPACKET);
			if (fd < 0)
				usleep_range(10000, 11000);
		}
		KUNIT_EXPECT_GE(test, fd, 0);
		if (fd >= 0)
			close(fd);
	}
	KUNIT_EXPECT_EQ(test, stat(d.sock, &st), 0);
	/* group "nxquota" if there is one (no -g given), else root only */
	KUNIT_EXPECT_EQ(test, st.st_mode & 0777,
			getgrnam("nxquota") ? 0660U : 0600U);
	/* SIGTERM: exits 0 and removes its socket */
	KUNIT_EXPECT_EQ(test, stop(&d2, SIGTERM), 0);
	KUNIT_EXPECT_NE(test, stat(d.sock, &st), 0);
	dying_listener(test, &d2);
	cleanup(test, &d);
}

/* -g: the client socket's group and mode; a group that is not: exit 1. */
static void nxqd_test_group(struct kunit *test)
{
	const char *const bad[] = { "-g", "no-such-group.nxqd", NULL };
	const char *const root[] = { "-g", "0", NULL };
	struct daemon d;
	struct stat st;
	int status = 0;

	prepare(test, &d);
	d.pid = spawn_args(test, &d, bad);
	KUNIT_ASSERT_EQ(test, waitpid(d.pid, &status, 0), d.pid);
	KUNIT_EXPECT_TRUE(test, WIFEXITED(status) && WEXITSTATUS(status) == 1);
	KUNIT_EXPECT_NE(test, stat(d.sock, &st), 0);
	d.pid = spawn_args(test, &d, root);
	wait_up(test, &d);
	KUNIT_EXPECT_EQ(test, stat(d.sock, &st), 0);
	KUNIT_EXPECT_EQ(test, st.st_mode & 0777, 0660U);
	KUNIT_EXPECT_EQ(test, st.st_gid, 0U);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/*
 * The run directory (issue 29): the client socket's directory and the
 * control socket's, made 0755 where missing, whatever the umask; with the
 * client socket in a directory named "client" the control socket goes to
 * its parent, never into it; a file where a directory must be: exit 1,
 * saying which directory and why.
 */
static void nxqd_test_rundir(struct kunit *test)
{
	char run[80], cdir[96], file[80], want[256];
	struct daemon d;
	struct dirent *e;
	struct stat st;
	int status = 0, n = 0;
	mode_t old;
	DIR *dir;

	prepare(test, &d);
	KUNIT_ASSERT_LT(test, snprintf(run, sizeof(run), "%s/run", d.dir),
			(int)sizeof(run));
	KUNIT_ASSERT_LT(test, snprintf(cdir, sizeof(cdir), "%s/client", run),
			(int)sizeof(cdir));
	KUNIT_ASSERT_LT(test, snprintf(d.sock, sizeof(d.sock), "%s/nxquota.sock", cdir),
			(int)sizeof(d.sock));
	KUNIT_ASSERT_LT(test, snprintf(d.ctl, sizeof(d.ctl), "%s/control.sock", run),
			(int)sizeof(d.ctl));
	old = umask(077);	/* the daemon's */
	d.pid = spawn(test, &d);	/* -s d.sock, no -c */
	umask(old);
	wait_up(test, &d);
	n = dial(d.ctl, SOCK_SEQPACKET);
	KUNIT_EXPECT_GE(test, n, 0);
	if (n >= 0)
		close(n);
	KUNIT_ASSERT_EQ(test, stat(run, &st), 0);
	KUNIT_EXPECT_TRUE(test, S_ISDIR(st.st_mode));
	KUNIT_EXPECT_EQ(test, st.st_mode & 07777, 0755U);
	KUNIT_ASSERT_EQ(test, stat(cdir, &st), 0);
	KUNIT_EXPECT_TRUE(test, S_ISDIR(st.st_mode));
	KUNIT_EXPECT_EQ(test, st.st_mode & 07777, 0755U);
	/* the client socket's directory holds it alone */
	dir = opendir(cdir);
	KUNIT_ASSERT_NOT_NULL(test, dir);
	n = 0;
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			KUNIT_EXPECT_STREQ(test, e->d_name, "nxquota.sock");
			n++;
		}
	closedir(dir);
	KUNIT_EXPECT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	/* the directories stay for the next start: containers mount them */
	KUNIT_EXPECT_EQ(test, rmdir(cdir), 0);
	KUNIT_EXPECT_EQ(test, rmdir(run), 0);

	/* a file where the directory must be */
	KUNIT_ASSERT_LT(test, snprintf(file, sizeof(file), "%s/file", d.dir),
			(int)sizeof(file));
	n = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	KUNIT_ASSERT_GE(test, n, 0);
	close(n);
	KUNIT_ASSERT_LT(test, snprintf(d.sock, sizeof(d.sock), "%s/client/nxquota.sock", file),
			(int)sizeof(d.sock));
	d.pid = spawn(test, &d);
	KUNIT_ASSERT_EQ(test, waitpid(d.pid, &status, 0), d.pid);
	KUNIT_EXPECT_TRUE(test, WIFEXITED(status) && WEXITSTATUS(status) == 1);
	snprintf(want, sizeof(want),
		 "nxquotad: cannot create %s (the directory of %s): %s\n",
		 file, d.sock, strerror(ENOTDIR));
	KUNIT_EXPECT_TRUE(test, log_has(&d, want));
	unlink(file);
	KUNIT_ASSERT_LT(test, snprintf(d.sock, sizeof(d.sock), "%s/nxquota.sock", d.dir),
			(int)sizeof(d.sock));
	KUNIT_ASSERT_LT(test, snprintf(d.ctl, sizeof(d.ctl), "%s/control.sock", d.dir),
			(int)sizeof(d.ctl));
	cleanup(test, &d);
}

static struct kunit_case nxqd_cases[] = {
	KUNIT_CASE(nxqd_test_version),
	KUNIT_CASE(nxqd_test_bad_requests),
	KUNIT_CASE(nxqd_test_seqpacket),
	KUNIT_CASE(nxqd_test_peercred),
	KUNIT_CASE(nxqd_test_one_daemon),
	KUNIT_CASE(nxqd_test_group),
	KUNIT_CASE(nxqd_test_rundir),
	{}
};

static struct kunit_suite nxqd_suite = {
	.name = "nxquotad-transport",
	.test_cases = nxqd_cases,
};

kunit_test_suite(nxqd_suite);
