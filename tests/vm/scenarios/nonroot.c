// SPDX-License-Identifier: GPL-2.0
/*
 * nonroot: a process that has become uid 65534 with no capabilities opens
 * /dev/nxquota, registers a holder and charges within its cgroup's max (and
 * is refused past it), and reads sysfs; every file under
 * /sys/kernel/nxquota that has a write bit refuses its writes (EACCES at
 * open or EPERM at write), and the whole readable tree is byte for byte
 * the same afterwards.
 */
#include "scen.h"

#define KEY	"t-user"
#define CG	"/nxq-user"

/* Every readable file under dir, "path=value" lines, into buf. */
static void snapshot(const char *dir, char *buf, size_t size, size_t *len)
{
	char path[512], val[256];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	int n;

	if (!d)
		FAIL("opendir %s: %s", dir, sc_errname(errno));
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) < 0)
			FAIL("lstat %s: %s", path, sc_errname(errno));
		if (S_ISDIR(st.st_mode)) {
			snapshot(path, buf, size, len);
			continue;
		}
		if (!(st.st_mode & 0444))
			continue;
		n = sc_read(path, val, sizeof(val));
		if (n < 0)
			FAIL("read %s: %s", path, sc_errname(-n));
		*len += snprintf(buf + *len, size - *len, "%s=%s\n", path, val);
		if (*len >= size)
			FAIL("snapshot larger than %zu bytes", size);
	}
	closedir(d);
}

static const char *payload(const char *name)
{
	static const char *const p[][2] = {
		{ "register", "t-evil 1G" },
		{ "unregister", KEY },
		{ "capacity", "1" },
		{ "set_budget", CG " max=max min=1G" },
		{ "clear_budget", CG },
		{ "max", "max" },
		{ "min", "1G" },
	};
	size_t i;

	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (!strcmp(name, p[i][0]))
			return p[i][1];
	return "0";
}

static int tried_mask;

/* As nobody: try to write every file with a write bit; all must refuse. */
static int attack(const char *dir)
{
	static const char *const must[] = { "register", "unregister",
		"capacity", "set_budget", "clear_budget", "max", "min" };
	char path[512];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	int fd, tried = 0;
	ssize_t n;
	size_t i;

	CHECK(d != NULL);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		CHECK(lstat(path, &st) == 0);
		if (S_ISDIR(st.st_mode)) {
			tried += attack(path);
			continue;
		}
		if (!(st.st_mode & 0222))
			continue;
		tried++;
		for (i = 0; i < sizeof(must) / sizeof(must[0]); i++)
			if (!strcmp(e->d_name, must[i]))
				tried_mask |= 1 << i;
		fd = open(path, O_WRONLY);
		if (fd < 0) {
			if (errno != EACCES && errno != EPERM)
				FAIL("open %s for writing as nobody: %s, "
				     "expected EACCES", path, sc_errname(errno));
			continue;
		}
		n = write(fd, payload(e->d_name), strlen(payload(e->d_name)));
		if (n >= 0)
			FAIL("write \"%s\" to %s as nobody succeeded",
			     payload(e->d_name), path);
		if (errno != EPERM && errno != EACCES)
			FAIL("write to %s as nobody: %s, expected EPERM",
			     path, sc_errname(errno));
		close(fd);
	}
	closedir(d);
	return tried;
}

/* Print the lines of a that b lacks. */
static void show_missing(const char *tag, const char *a, const char *b)
{
	char line[600];
	const char *p, *nl;

	for (p = a; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		snprintf(line, sizeof(line), "%.*s", (int)(nl - p + 1), p);
		if (!strstr(b, line))
			sc_log("%s %s", tag, line);
	}
}

static int p2c[2], c2p[2];

static int child(void *arg)
{
	uint64_t h = 0, c = 0, cgid = (uint64_t)(uintptr_t)arg;
	struct nxq_version v;
	struct nxq_status st;
	int fd, tried;

	close(p2c[1]);
	close(c2p[0]);
	CHECK_OK(sc_cg_enter(CG));
	sc_drop_to_nobody();

	fd = sc_open();
	if (fd < 0)
		FAIL("open %s as nobody: %s", SC_DEVNODE, sc_errname(-fd));
	CHECK_OK(sc_version(fd, &v));
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_charge(fd, h, 256 * SC_KIB, &c));
	CHECK_EQ(c, 256 * SC_KIB);
	CHECK_ERR(sc_charge(fd, h, 300 * SC_KIB, &c), EDQUOT);
	CHECK_OK(sc_uncharge(fd, h, 56 * SC_KIB, &c));
	CHECK_EQ(c, 200 * SC_KIB);
	CHECK_OK(sc_status(fd, h, &st));
	CHECK_EQ(st.cgroup_id, cgid);
	CHECK_EQ(st.node_max, 512 * SC_KIB);
	/* Everyone reads the device's totals; a node's files are root's. */
	CHECK_EQ(DEV_U64(KEY, "used"), 200 * SC_KIB);
	{
		char nb[64];

		CHECK_ERR(sc_read(sc_node_path(KEY, cgid, "current"), nb,
				  sizeof(nb)), EACCES);
		CHECK_ERR(sc_read(sc_node_path(KEY, cgid, "path"), nb,
				  sizeof(nb)), EACCES);
	}

	CHECK_OK(sc_send(c2p[1], 1));
	RECV(p2c[0]);
	tried = attack(SC_SYSFS);
	CHECK_EQ(tried_mask, 0x7f);	/* every command and budget file */
	CHECK_OK(sc_send(c2p[1], tried));
	RECV(p2c[0]);
	/* Its holder still works after all that. */
	CHECK_OK(sc_charge(fd, h, 1, &c));
	CHECK_EQ(c, 200 * SC_KIB + 1);
	return 0;
}

/* The modes of the module's sysfs files: the module only (sc_module_only[]). */
FIXTURE(nonroot) {
	uint64_t cgid;
};

FIXTURE_VARIANT(nonroot) {};

FIXTURE_VARIANT_ADD(nonroot, module) {};

FIXTURE_SETUP(nonroot)
{
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK_OK(sc_cg_create(CG));
	self->cgid = CG_ID(CG);
	CHECK_OK(sc_set_budget(KEY, CG " max=512K"));
	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);
}

FIXTURE_TEARDOWN(nonroot)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(nonroot, tenant_refused_sysfs_unchanged)
{
	uint64_t cgid = self->cgid;
	static char before[1 << 16], after[1 << 16];
	size_t lb = 0, la = 0;
	uint64_t tried;
	pid_t pid;

	pid = sc_spawn(child, (void *)(uintptr_t)cgid);
	close(p2c[0]);	/* a dead child is then EOF, not a timeout */
	close(c2p[1]);
	RECV(c2p[0]);
	snapshot(SC_SYSFS, before, sizeof(before), &lb);
	CHECK_OK(sc_send(p2c[1], 1));
	tried = RECV(c2p[0]);
	snapshot(SC_SYSFS, after, sizeof(after), &la);
	if (strcmp(before, after)) {
		show_missing("-", before, after);
		show_missing("+", after, before);
		FAIL("sysfs changed while nobody wrote to %" PRIu64 " files",
		     tried);
	}
	sc_log("%" PRIu64 " writable files refused nobody; sysfs unchanged",
	       tried);
	CHECK(!sc_dev_exists("t-evil"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), SC_MIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "max"), 512 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, cgid, "min"), 0);

	CHECK_OK(sc_send(p2c[1], 1));
	CHECK_CHILD_OK(pid);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
