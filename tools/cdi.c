// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl cdi generate: write a CDI spec (kind nxquota.io/gpu) whose
 * devices give a container what it needs to be charged, for podman,
 * CRI-O, containerd >= 1.7 and DRA drivers, which read CDI:
 *
 *  - one CDI device per registered nxquota device (named by its key) and
 *    "all"; each sets NXQUOTA_DEVICE_<KEY>=<key> in the container (what
 *    nxquota-hook reads to know which devices it was given) and brings the
 *    device's node (its dev_t, found through /dev/char) so a holder can
 *    prove access;
 *  - for any of them: the authority (/dev/nxquota where the module is
 *    loaded, else the directory of nxquotad's client socket, read-only,
 *    which must hold that socket alone: never the control socket), the
 *    LD_PRELOAD shim (a read-only mount and LD_PRELOAD), NXQUOTA_REQUIRE
 *    so that no process runs uncharged, and nxquota-hook as createRuntime
 *    and poststop hooks;
 *  - what no process in the container can unset (issue 28: env -i, an
 *    exec with a clean environment, ran uncharged): the preload list
 *    (--preload-list, installed as LIBDIR/nxquota/ld.so.preload, naming
 *    the shim where the container sees it) read-only at /etc/ld.so.preload,
 *    so every dynamically linked process loads the shim, and, with
 *    NXQUOTA_REQUIRE, the same file at /etc/nxquota/require, which the
 *    shim takes for NXQUOTA_REQUIRE=1 whatever the environment says.
 *
 * The directory, not the socket file: a bind mount of the file keeps the
 * inode it found, and nxquotad started again without socket activation
 * (a DaemonSet) binds a new one, which the container would never see:
 * its processes could not reconnect, and what they held was lost from the
 * ledger (issue 29).  In the directory they find the new socket.
 *
 * The spec is JSON (CDI reads .json and .yaml alike), written with json-c
 * rather than by hand.  cdiVersion 0.5.0: what podman 4.3 (CDI v0.5.2)
 * and containerd 1.7 read.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include <linux/nxquotad.h>

#include "cdi.h"
#include "ledger.h"

#include <json-c/json.h>

#ifndef NXQ_SBINDIR
#define NXQ_SBINDIR "/usr/local/sbin"
#endif
#ifndef NXQ_LIBDIR
#define NXQ_LIBDIR "/usr/local/lib"
#endif

/*
 * Where the shim and the directory of the authority's socket appear in a
 * container (the socket keeps its name on the host).
 */
#define CDI_SHIM_PATH	"/usr/lib/nxquota/libnxquota-preload.so"
#define CDI_SOCK_DIR	NXQD_SOCKET_DIR
#define CDI_PRELOAD_LIST	"/etc/ld.so.preload"
#define CDI_REQUIRE_FILE	"/etc/nxquota/require"	/* preload/authority.c */

struct cdi_opts {
	const char *output;	/* NULL or "-": stdout */
	const char *kind;
	const char *hook;	/* NULL: no hooks */
	const char *shim;	/* NULL: no shim */
	const char *list;	/* NULL: no /etc/ld.so.preload */
	bool nodes;		/* bring each device's node */
	bool require;		/* NXQUOTA_REQUIRE=1 */
};

static json_object *cdi_str(const char *s)
{
	json_object *o = json_object_new_string(s);

	if (!o) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return o;
}

static void cdi_add(json_object *obj, const char *key, json_object *val)
{
	if (!val || json_object_object_add(obj, key, val)) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
}

static json_object *cdi_obj(void)
{
	json_object *o = json_object_new_object();

	if (!o) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return o;
}

static json_object *cdi_arr(void)
{
	json_object *o = json_object_new_array();

	if (!o) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return o;
}

static void cdi_push(json_object *arr, json_object *v)
{
	if (!v || json_object_array_add(arr, v)) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
}

static void cdi_pushf(json_object *arr, const char *fmt, const char *a,
		      const char *b)
{
	char buf[PATH_MAX + 128];

	snprintf(buf, sizeof(buf), fmt, a, b);
	cdi_push(arr, cdi_str(buf));
}

/*
 * The environment variable naming @key: NXQUOTA_DEVICE_ and the key with
 * every character but [A-Za-z0-9] as '_', upper case.
 */
static void cdi_env_name(const char *key, char *buf, size_t size)
{
	size_t i, n = snprintf(buf, size, "NXQUOTA_DEVICE_");

	for (i = 0; key[i] && n + 1 < size; i++, n++)
		buf[n] = isalnum((unsigned char)key[i]) ?
			 (char)toupper((unsigned char)key[i]) : '_';
	buf[n] = '\0';
}

/* A CDI device name: [A-Za-z0-9] first, then [A-Za-z0-9_.:-]. */
static bool cdi_name_ok(const char *s)
{
	if (!isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.:-", *s))
			return false;
	return true;
}

/* The node of "MAJOR:MINOR" under /dev (through /dev/char), or false. */
static bool cdi_devt_path(const char *devt, char *buf, size_t size)
{
	char link[64];
	struct stat st;

	snprintf(link, sizeof(link), "/dev/char/%s", devt);
	if (!realpath(link, buf) || strncmp(buf, "/dev/", 5) ||
	    strlen(buf) >= size || stat(buf, &st) || !S_ISCHR(st.st_mode))
		return false;
	return true;
}

/* deviceNodes entry for @path, as the host has it. */
static json_object *cdi_node(const char *path)
{
	json_object *o = cdi_obj();
	struct stat st;

	cdi_add(o, "path", cdi_str(path));
	if (!stat(path, &st)) {
		/* the host's mode and group: who in the container may open */
		cdi_add(o, "fileMode", json_object_new_int(st.st_mode & 0777));
		cdi_add(o, "uid", json_object_new_int64(st.st_uid));
		cdi_add(o, "gid", json_object_new_int64(st.st_gid));
	}
	return o;
}

static json_object *cdi_mount(const char *host, const char *ctr, bool ro)
{
	json_object *o = cdi_obj(), *opts = cdi_arr();

	cdi_add(o, "hostPath", cdi_str(host));
	cdi_add(o, "containerPath", cdi_str(ctr));
	cdi_push(opts, cdi_str("bind"));
	cdi_push(opts, cdi_str(ro ? "ro" : "rw"));
	cdi_push(opts, cdi_str("nosuid"));
	cdi_push(opts, cdi_str("nodev"));
	cdi_add(o, "options", opts);
	return o;
}

static json_object *cdi_hook(const char *path, const char *stage,
			     const char *control)
{
	json_object *o = cdi_obj(), *args = cdi_arr(), *env = cdi_arr();

	cdi_add(o, "hookName", cdi_str(stage));
	cdi_add(o, "path", cdi_str(path));
	cdi_push(args, cdi_str("nxquota-hook"));
	cdi_push(args, cdi_str(stage));
	cdi_add(o, "args", args);
	/* podman runs a poststop hook with this environment and no other */
	cdi_push(env, cdi_str("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	if (control)
		cdi_pushf(env, "NXQUOTA_CONTROL=%s%s", control, "");
	cdi_add(o, "env", env);
	cdi_add(o, "timeout", json_object_new_int(30));
	return o;
}

/*
 * nxquotad's client socket @sock: its directory into @dir and its name into
 * @name, once the directory is seen to hold nothing but that socket
 * (everything in it is the container's too: never the control socket).
 * Says why and exits if not.
 */
static void cdi_sock_dir(const char *sock, char *dir, size_t dsize,
			 char *name, size_t nsize)
{
	const char *slash = strrchr(sock, '/');
	bool found = false;
	struct dirent *e;
	DIR *d;

	if (sock[0] != '/' || !slash[1] || (size_t)(slash - sock) >= dsize ||
	    strlen(slash + 1) >= nsize) {
		warnx_("cdi: %s: not an absolute path to nxquotad's client "
		       "socket (NXQUOTA_SOCKET)", sock);
		exit(EX_FAIL);
	}
	snprintf(dir, dsize, "%.*s", slash == sock ? 1 : (int)(slash - sock), sock);
	snprintf(name, nsize, "%s", slash + 1);
	d = opendir(dir);
	if (!d) {
		warnx_("cdi: %s: %s (the directory of nxquotad's client socket "
		       "%s, which containers are given; NXQUOTA_SOCKET names "
		       "another socket)", dir, strerror(errno), sock);
		exit(EX_FAIL);
	}
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, name)) {
			found = true;
			continue;
		}
		warnx_("cdi: %s holds %s besides nxquotad's client socket %s: a "
		       "container given the directory would have it too; give "
		       "the client socket a directory of its own (nxquotad -s "
		       "%s, the default)", dir, e->d_name, name, NXQD_SOCKET_PATH);
		exit(EX_FAIL);
	}
	if (errno) {
		warnx_("cdi: %s: %s", dir, strerror(errno));
		exit(EX_FAIL);
	}
	closedir(d);
	if (!found)
		warnx_("cdi: warning: no %s (is nxquotad's client socket "
		       "elsewhere? NXQUOTA_SOCKET names it)", sock);
}

/* The edits every device brings: authority, shim, hooks. */
static json_object *cdi_common(struct ctl *n, const struct cdi_opts *o)
{
	json_object *ed = cdi_obj(), *env = cdi_arr(), *nodes = cdi_arr();
	json_object *mounts = cdi_arr(), *hooks = cdi_arr();
	const char *sock = getenv("NXQUOTA_SOCKET");
	const char *control = NULL;
	char dir[PATH_MAX], name[NAME_MAX + 1];

	if (n->ufd < 0) {
		cdi_push(nodes, cdi_node("/dev/nxquota"));
	} else {
		/*
		 * nxquotad: the directory of its client socket, which holds
		 * it alone (the control socket is root's, and a container's
		 * root may be the host's), read-only: a container's root
		 * cannot remove the socket, or put another in its place,
		 * for the other containers.  connect() needs no write access
		 * to the mount.
		 */
		if (!sock || !sock[0])
			sock = NXQD_SOCKET_PATH;
		cdi_sock_dir(sock, dir, sizeof(dir), name, sizeof(name));
		cdi_push(mounts, cdi_mount(dir, CDI_SOCK_DIR, true));
		cdi_pushf(env, "NXQUOTA_SOCKET=%s/%s", CDI_SOCK_DIR, name);
		control = n->control ? n->control : getenv("NXQUOTA_CONTROL");
		if (control && !control[0])
			control = NULL;
	}
	if (o->shim) {
		cdi_push(mounts, cdi_mount(o->shim, CDI_SHIM_PATH, true));
		cdi_pushf(env, "LD_PRELOAD=%s%s", CDI_SHIM_PATH, "");
		if (o->list)
			cdi_push(mounts, cdi_mount(o->list, CDI_PRELOAD_LIST,
						   true));
	}
	if (o->require) {
		cdi_push(env, cdi_str("NXQUOTA_REQUIRE=1"));
		if (o->shim && o->list)
			cdi_push(mounts, cdi_mount(o->list, CDI_REQUIRE_FILE,
						   true));
	}
	if (o->hook) {
		cdi_push(hooks, cdi_hook(o->hook, "createRuntime", control));
		cdi_push(hooks, cdi_hook(o->hook, "poststop", control));
	}
	cdi_add(ed, "env", env);
	cdi_add(ed, "deviceNodes", nodes);
	cdi_add(ed, "mounts", mounts);
	cdi_add(ed, "hooks", hooks);
	return ed;
}

/* One device's edits: its variable, and its node. */
static void cdi_device_edits(const struct dev *d, const struct cdi_opts *o,
			     json_object *env, json_object *nodes)
{
	char name[NXQ_DEVICE_KEY_MAX + 32], path[PATH_MAX];

	cdi_env_name(d->key, name, sizeof(name));
	cdi_pushf(env, "%s=%s", name, d->key);
	if (o->nodes && d->devt[0] && cdi_devt_path(d->devt, path, sizeof(path)))
		cdi_push(nodes, cdi_node(path));
}

static json_object *cdi_spec(struct ctl *n, const struct ledger *l,
			     const struct cdi_opts *o)
{
	json_object *spec = cdi_obj(), *devs = cdi_arr();
	json_object *all_env = cdi_arr(), *all_nodes = cdi_arr(), *all;
	const struct dev *d = l->devs.v;
	char a[NXQ_DEVICE_KEY_MAX + 32], b[NXQ_DEVICE_KEY_MAX + 32];
	size_t i, j;

	cdi_add(spec, "cdiVersion", cdi_str("0.5.0"));
	cdi_add(spec, "kind", cdi_str(o->kind));
	for (i = 0; i < l->devs.n; i++) {
		json_object *dev, *ed, *env, *nodes;

		if (!cdi_name_ok(d[i].key) || !strcmp(d[i].key, "all")) {
			warnx_("%s: not a CDI device name; left out", d[i].key);
			continue;
		}
		cdi_env_name(d[i].key, a, sizeof(a));
		for (j = 0; j < i; j++) {
			cdi_env_name(d[j].key, b, sizeof(b));
			if (!strcmp(a, b)) {
				warnx_("%s and %s give the same variable %s",
				       d[j].key, d[i].key, a);
				exit(EX_FAIL);
			}
		}
		dev = cdi_obj();
		ed = cdi_obj();
		env = cdi_arr();
		nodes = cdi_arr();
		cdi_device_edits(&d[i], o, env, nodes);
		cdi_device_edits(&d[i], o, all_env, all_nodes);
		cdi_add(ed, "env", env);
		cdi_add(ed, "deviceNodes", nodes);
		cdi_add(dev, "name", cdi_str(d[i].key));
		cdi_add(dev, "containerEdits", ed);
		cdi_push(devs, dev);
	}
	all = cdi_obj();
	cdi_add(all, "name", cdi_str("all"));
	{
		json_object *ed = cdi_obj();

		cdi_add(ed, "env", all_env);
		cdi_add(ed, "deviceNodes", all_nodes);
		cdi_add(all, "containerEdits", ed);
	}
	cdi_push(devs, all);
	cdi_add(spec, "devices", devs);
	cdi_add(spec, "containerEdits", cdi_common(n, o));
	return spec;
}

/* Write @text to @path atomically (a temporary file, then rename). */
static int cdi_write(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) || write(fd, text, len) != (ssize_t)len ||
	    write(fd, "\n", 1) != 1 || fsync(fd)) {
		e = -errno;
		close(fd);
		unlink(tmp);
		return e ? e : -EIO;
	}
	if (close(fd) || rename(tmp, path)) {
		e = -errno;
		unlink(tmp);
		return e;
	}
	return 0;
}

static int cdi_usage(void)
{
	warnx_("usage: cdi generate [--output FILE] [--kind VENDOR/CLASS] "
	       "[--hook PATH | --no-hook] [--shim PATH | --no-shim] "
	       "[--preload-list PATH | --no-preload-list] "
	       "[--no-nodes] [--no-require]");
	return EX_USAGE;
}

/*
 * The preload list must name the shim where the container sees it, and
 * nothing else: every process of every container given a GPU loads what
 * it names.  Missing: a warning, as for the shim (the runtime fails the
 * container).  0, or EX_FAIL with the reason said.
 */
static int cdi_list_check(const char *path)
{
	char buf[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		warnx_("cdi: warning: %s: %s (make install puts the preload "
		       "list there; --no-preload-list leaves /etc/ld.so.preload "
		       "alone, and a process with a clean environment "
		       "uncharged)", path, strerror(errno));
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	if (strcmp(buf, CDI_SHIM_PATH "\n") && strcmp(buf, CDI_SHIM_PATH)) {
		warnx_("cdi: %s does not hold exactly \"%s\\n\": every process "
		       "of the containers would load what it names", path,
		       CDI_SHIM_PATH);
		return EX_FAIL;
	}
	return 0;
}

int cmd_cdi(struct ctl *n, int argc, char **argv)
{
	struct cdi_opts o = {
		.kind = "nxquota.io/gpu",
		.hook = NXQ_SBINDIR "/nxquota-hook",
		.shim = NXQ_LIBDIR "/libnxquota-preload.so",
		.list = NXQ_LIBDIR "/nxquota/ld.so.preload",
		.nodes = true,
		.require = true,
	};
	json_object *spec;
	struct ledger l;
	const char *text;
	int i, rc, err;

	if (argc < 1 || strcmp(argv[0], "generate"))
		return cdi_usage();
	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--no-hook")) {
			o.hook = NULL;
		} else if (!strcmp(argv[i], "--no-shim")) {
			o.shim = NULL;
		} else if (!strcmp(argv[i], "--no-preload-list")) {
			o.list = NULL;
		} else if (!strcmp(argv[i], "--no-nodes")) {
			o.nodes = false;
		} else if (!strcmp(argv[i], "--no-require")) {
			o.require = false;
		} else if (v && !strcmp(argv[i], "--output")) {
			o.output = argv[++i];
		} else if (v && !strcmp(argv[i], "--kind")) {
			o.kind = argv[++i];
		} else if (v && !strcmp(argv[i], "--hook")) {
			o.hook = argv[++i];
		} else if (v && !strcmp(argv[i], "--shim")) {
			o.shim = argv[++i];
		} else if (v && !strcmp(argv[i], "--preload-list")) {
			o.list = argv[++i];
		} else {
			return cdi_usage();
		}
	}
	if ((o.hook && o.hook[0] != '/') || (o.shim && o.shim[0] != '/') ||
	    (o.list && o.list[0] != '/')) {
		warnx_("cdi: --hook, --shim and --preload-list take absolute "
		       "paths");
		return EX_USAGE;
	}
	if (o.shim && o.list && cdi_list_check(o.list))
		return EX_FAIL;
	if (o.hook && access(o.hook, X_OK))
		warnx_("cdi: warning: %s: %s (runtimes fail a container whose "
		       "CDI hook is missing)", o.hook, strerror(errno));
	if (o.shim && access(o.shim, R_OK))
		warnx_("cdi: warning: %s: %s", o.shim, strerror(errno));
	rc = read_ledger(n, NULL, &l);
	if (rc)
		return rc;
	spec = cdi_spec(n, &l, &o);
	ledger_free(&l);
	text = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!o.output || !strcmp(o.output, "-")) {
		printf("%s\n", text);
		rc = EX_OK;
	} else {
		err = cdi_write(o.output, text);
		if (err)
			warnx_("cdi: %s: %s", o.output, strerror(-err));
		rc = err ? EX_FAIL : EX_OK;
	}
	json_object_put(spec);
	return rc;
}
