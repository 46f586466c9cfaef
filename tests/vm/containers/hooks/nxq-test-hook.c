// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-test-hook STAGE [TAG] - the container smoke tests' OCI hook (VM side;
 * built static by tests/vm/containers/run.sh into
 * /usr/libexec/nxq/nxq-test-hook).  A program rather than a script: a shell
 * hook forks some thirty processes, seconds per container under TCG.
 *
 * Records what a hook sees, for tests/vm/containers/scenarios to check:
 * writes $NXQ_HOOK_LOG (default /run/nxq-hook)/<container id>.<STAGE>[.<TAG>]
 * (atomically: a temporary file renamed) with one "key=value" per line:
 *   stage, tag, state (the OCI state JSON read from stdin, on one line),
 *   id, pid (from the state; "none" when it has none), status,
 *   cgroup (/proc/PID/cgroup of the state's pid: the container's cgroup as
 *   the host sees it; "none" without a pid, "gone" when the process no
 *   longer exists), self_cgroup (the hook's own), parent_cgroup (its
 *   parent's), bundle, config_cgroups_path (linux.cgroupsPath of the
 *   bundle's config.json, or "no-config.json"), config_cgroup (exists|gone:
 *   that cgroup under /sys/fs/cgroup, when the path is absolute),
 *   ns_cgroup/ns_pid/ns_mnt/ns_net ("host" when the hook shares that
 *   namespace with PID 1 of the VM, else the namespace's link), uid, ppid,
 *   parent (the parent's command line), cwd, argv, then env:NAME=VALUE for
 *   each variable of the environment it was given.
 * Exits 0, or 1 when <log dir>/fail-STAGE exists (to test failures), 2 when
 * it cannot write its record.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/*
 * The whole of fd or path, NUL-terminated, its length in *lenp (if not
 * NULL); NULL on error.
 */
static char *slurp_fd(int fd, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nb;
	ssize_t n;

	if (!buf)
		return NULL;
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	buf[len] = 0;
	if (lenp)
		*lenp = len;
	return buf;
}

static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		return NULL;
	s = slurp_fd(fd, NULL);
	close(fd);
	return s;
}

/* Newlines (and NULs, for cmdline) to spaces, trailing space cut. */
static void flatten(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] == '\n' || s[i] == '\r' || s[i] == 0)
			s[i] = ' ';
	while (len && s[len - 1] == ' ')
		s[--len] = 0;
}

/*
 * The value of "key" in a JSON text: a string (unescaped only as far as
 * the ids and paths of OCI states need: none) or a number, copied to out.
 * The first occurrence of "key" followed by ':' wins.  0, or -1 if absent.
 */
static int json_get(const char *js, const char *key, char *out, size_t size)
{
	char pat[128];
	const char *p = js, *v, *e;
	size_t n;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	while ((p = strstr(p, pat))) {
		v = p + strlen(pat);
		while (isspace((unsigned char)*v))
			v++;
		if (*v != ':') {
			p++;
			continue;
		}
		v++;
		while (isspace((unsigned char)*v))
			v++;
		if (*v == '"') {
			e = strchr(++v, '"');
			if (!e)
				return -1;
		} else {
			for (e = v; *e == '-' || isdigit((unsigned char)*e); e++)
				;
			if (e == v)
				return -1;
		}
		n = (size_t)(e - v) < size - 1 ? (size_t)(e - v) : size - 1;
		memcpy(out, v, n);
		out[n] = 0;
		return 0;
	}
	return -1;
}

/* "host" if /proc/self/ns/NAME is PID 1's, else the link. */
static void ns_line(FILE *f, const char *name)
{
	char a[PATH_MAX], b[PATH_MAX], pa[64], pb[64];
	ssize_t na, nb;

	snprintf(pa, sizeof(pa), "/proc/self/ns/%s", name);
	snprintf(pb, sizeof(pb), "/proc/1/ns/%s", name);
	na = readlink(pa, a, sizeof(a) - 1);
	nb = readlink(pb, b, sizeof(b) - 1);
	a[na < 0 ? 0 : na] = 0;
	b[nb < 0 ? 0 : nb] = 0;
	fprintf(f, "ns_%s=%s\n", name, na > 0 && !strcmp(a, b) ? "host" : a);
}

static void file_line(FILE *f, const char *key, const char *path,
		      const char *missing)
{
	char *s = slurp(path);

	if (!s) {
		fprintf(f, "%s=%s\n", key, missing);
		return;
	}
	flatten(s, strlen(s));
	fprintf(f, "%s=%s\n", key, s);
	free(s);
}

int main(int argc, char **argv)
{
	const char *stage = argc > 1 ? argv[1] : "unknown";
	const char *tag = argc > 2 ? argv[2] : "";
	const char *dir = getenv("NXQ_HOOK_LOG");
	char id[256], pid[32], status[64], bundle[PATH_MAX], cgp[PATH_MAX];
	char path[PATH_MAX], tmp[PATH_MAX + 8], buf[PATH_MAX];
	char *state, *cfg, *cmd;
	struct stat st;
	FILE *f;
	int i, fd;
	size_t n;

	if (!dir || !*dir)
		dir = "/run/nxq-hook";
	mkdir(dir, 0755);
	state = slurp_fd(0, NULL);
	if (!state)
		return 2;
	flatten(state, strlen(state));

	if (json_get(state, "id", id, sizeof(id)) || !*id || strchr(id, '/'))
		strcpy(id, "no-id");
	if (json_get(state, "pid", pid, sizeof(pid)))
		strcpy(pid, "none");
	if (json_get(state, "status", status, sizeof(status)))
		status[0] = 0;
	if (json_get(state, "bundle", bundle, sizeof(bundle)))
		bundle[0] = 0;

	snprintf(path, sizeof(path), "%s/%s.%s%s%s", dir, id, stage,
		 *tag ? "." : "", tag);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return 2;
	fprintf(f, "stage=%s\ntag=%s\nstate=%s\nid=%s\npid=%s\nstatus=%s\n",
		stage, tag, state, id, pid, status);
	if (!strcmp(pid, "none") || !strcmp(pid, "0")) {
		fprintf(f, "cgroup=none\n");
	} else {
		snprintf(buf, sizeof(buf), "/proc/%s/cgroup", pid);
		file_line(f, "cgroup", buf, "gone");
	}
	file_line(f, "self_cgroup", "/proc/self/cgroup", "");
	snprintf(buf, sizeof(buf), "/proc/%d/cgroup", (int)getppid());
	file_line(f, "parent_cgroup", buf, "");
	fprintf(f, "bundle=%s\n", bundle);
	snprintf(buf, sizeof(buf), "%s/config.json", bundle);
	cfg = *bundle ? slurp(buf) : NULL;
	if (!cfg) {
		fprintf(f, "config_cgroups_path=no-config.json\n");
	} else {
		if (json_get(cfg, "cgroupsPath", cgp, sizeof(cgp)))
			cgp[0] = 0;
		fprintf(f, "config_cgroups_path=%s\n", cgp);
		if (cgp[0] == '/') {
			snprintf(buf, sizeof(buf), "/sys/fs/cgroup%s", cgp);
			fprintf(f, "config_cgroup=%s\n",
				stat(buf, &st) == 0 ? "exists" : "gone");
		}
		free(cfg);
	}
	ns_line(f, "cgroup");
	ns_line(f, "pid");
	ns_line(f, "mnt");
	ns_line(f, "net");
	fprintf(f, "uid=%d\nppid=%d\n", (int)getuid(), (int)getppid());
	snprintf(buf, sizeof(buf), "/proc/%d/cmdline", (int)getppid());
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	cmd = fd >= 0 ? slurp_fd(fd, &n) : NULL;
	if (fd >= 0)
		close(fd);
	if (cmd) {
		flatten(cmd, n);	/* NUL-separated arguments */
		fprintf(f, "parent=%.200s\n", cmd);
		free(cmd);
	} else {
		fprintf(f, "parent=\n");
	}
	fprintf(f, "cwd=%s\n", getcwd(buf, sizeof(buf)) ? buf : "");
	fprintf(f, "argv=");
	for (i = 0; i < argc; i++)
		fprintf(f, "%s%s", i ? " " : "", argv[i]);
	fprintf(f, "\n");
	for (i = 0; environ && environ[i]; i++)
		fprintf(f, "env:%s\n", environ[i]);
	if (fclose(f) || rename(tmp, path))
		return 2;

	snprintf(buf, sizeof(buf), "%s/fail-%s", dir, stage);
	return access(buf, F_OK) == 0 ? 1 : 0;
}
