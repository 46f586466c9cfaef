// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's cgroup glue (the module's kmod/cgroup.c): budget nodes are
 * keyed by cgroup2 directories.
 *
 * A key is the directory's path relative to the cgroup2 mount and its
 * inode number, which on cgroup2 is the cgroup's id (the kernfs node id
 * the module keys nodes by).  Each node owns one key from creation to the
 * key_put hook.  A removed cgroup is seen by key_dead as a missing
 * directory or one with another inode (a cgroup of the same name made
 * since), and its budget is then dropped at the next prune, as the
 * module drops budgets left on offline cgroups.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "nxqd.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

struct nxqd_cg {
	u64 id;
	char path[];		/* "/" or "/a/b" */
};

static char nxqd_cg_root[PATH_MAX];

int nxqd_cgroup_init(const char *dir)
{
	char line[4096], *f[10], *p, *sep;
	struct statfs sfs;
	FILE *mi;
	int i, n;

	if (dir) {
		if (strlen(dir) >= sizeof(nxqd_cg_root))
			return -ENAMETOOLONG;
		strscpy(nxqd_cg_root, dir, sizeof(nxqd_cg_root));
		goto check;
	}
	mi = fopen("/proc/self/mountinfo", "re");
	if (!mi)
		return -errno;
	while (fgets(line, sizeof(line), mi)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPT...] - FSTYPE ... */
		n = 0;
		for (p = strtok(line, "\n "); p && n < 10;
		     p = strtok(NULL, "\n "))
			f[n++] = p;
		sep = NULL;
		for (i = 6; i < n; i++) {
			if (!strcmp(f[i], "-")) {
				sep = f[i];
				break;
			}
		}
		if (!sep || i + 1 >= n || strcmp(f[i + 1], "cgroup2"))
			continue;
		/* mountinfo escapes blanks as \040: not expected here */
		strscpy(nxqd_cg_root, f[4], sizeof(nxqd_cg_root));
		break;
	}
	fclose(mi);
	if (!nxqd_cg_root[0])
		return -ENOENT;
check:
	if (statfs(nxqd_cg_root, &sfs))
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -ENOTDIR;
	/* "/sys/fs/cgroup/" and "/sys/fs/cgroup" are one root */
	n = strlen(nxqd_cg_root);
	while (n > 1 && nxqd_cg_root[n - 1] == '/')
		nxqd_cg_root[--n] = '\0';
	return 0;
}

const char *nxqd_cgroup_root(void)
{
	return nxqd_cg_root;
}

/*
 * Normalize @path into @out ("/" or "/a/b") and return its depth, or
 * -EINVAL, -E2BIG.
 */
static int nxqd_cg_norm(const char *path, char *out, size_t len)
{
	const char *p = path, *e;
	size_t o = 0, n;
	int depth = 0;

	if (!*p)
		return -EINVAL;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		n = e - p;
		if ((n == 1 && p[0] == '.') || (n == 2 && !memcmp(p, "..", 2)))
			return -EINVAL;
		if (o + 1 + n + 1 > len)
			return -E2BIG;
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		depth++;
		p = e;
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
	return depth > NXQD_MAX_DEPTH ? -E2BIG : depth;
}

/* The inode of the cgroup2 directory @norm, or 0 if there is none. */
static u64 nxqd_cg_ino(const char *norm)
{
	char full[PATH_MAX + 8];
	struct stat st;

	if (snprintf(full, sizeof(full), "%s%s", nxqd_cg_root,
		     strcmp(norm, "/") ? norm : "") >= (int)sizeof(full))
		return 0;
	if (lstat(full, &st) || !S_ISDIR(st.st_mode))
		return 0;
	return st.st_ino;
}

static struct nxqd_cg *nxqd_cg_new(const char *norm, u64 id)
{
	size_t n = strlen(norm) + 1;
	struct nxqd_cg *cg = malloc(sizeof(*cg) + n);

	if (!cg)
		return NULL;
	cg->id = id;
	memcpy(cg->path, norm, n);
	return cg;
}

u64 nxqd_cgroup_id(const char *path)
{
	char norm[PATH_MAX];

	if (nxqd_cg_norm(path, norm, sizeof(norm)) < 0)
		return 0;
	return nxqd_cg_ino(norm);
}

int nxqd_cgroup_key(const char *path, void **key)
{
	char norm[PATH_MAX];
	int depth;
	u64 id;

	depth = nxqd_cg_norm(path, norm, sizeof(norm));
	if (depth < 0)
		return depth;
	id = nxqd_cg_ino(norm);
	if (!id)
		return -ENOENT;
	*key = nxqd_cg_new(norm, id);
	return *key ? 0 : -ENOMEM;
}

void nxqd_cgroup_key_put(void *key)
{
	free(key);
}

u64 nxqd_cgroup_key_id(const void *key)
{
	return ((const struct nxqd_cg *)key)->id;
}

const char *nxqd_cgroup_key_path(const void *key)
{
	return ((const struct nxqd_cg *)key)->path;
}

/* key_path: the ledger's messages name the cgroup by its path. */
int nxqd_cgroup_key_name(void *key, char *buf, size_t size)
{
	return snprintf(buf, size, "%s", nxqd_cgroup_key_path(key));
}

/* key_dead: the directory is gone, or is another cgroup now. */
bool nxqd_cgroup_key_dead(void *key)
{
	struct nxqd_cg *cg = key;

	return nxqd_cg_ino(cg->path) != cg->id;
}

struct nxq_node *nxqd_node_for_path(struct nxq_device *dev, const char *path)
{
	struct nxq_node *node = NULL, *parent = NULL;
	char norm[PATH_MAX];
	int depth;
	size_t end = 0;

	lockdep_assert_held(&dev->ledger->lock);
	depth = nxqd_cg_norm(path, norm, sizeof(norm));
	if (depth < 0)
		return ERR_PTR(depth);
	/* the common case: the cgroup has its node already */
	node = nxq_node_find(dev, nxqd_cg_ino(norm));
	if (node && !strcmp(nxqd_cgroup_key_path(node->key), norm))
		return nxq_node_get(dev, node->parent, node->id, NULL);
	node = NULL;
	/* level 0 is the root "/", then each prefix of @norm */
	for (;;) {
		char prefix[PATH_MAX], *e;
		struct nxqd_cg *cg = NULL;
		bool exists;
		u64 id;

		if (!end) {
			strscpy(prefix, "/", sizeof(prefix));
		} else {
			memcpy(prefix, norm, end);
			prefix[end] = '\0';
		}
		id = nxqd_cg_ino(prefix);
		if (!id) {
			node = ERR_PTR(-ENOENT);
			break;
		}
		exists = nxq_node_find(dev, id);
		if (!exists) {
			cg = nxqd_cg_new(prefix, id);
			if (!cg) {
				node = ERR_PTR(-ENOMEM);
				break;
			}
		}
		node = nxq_node_get(dev, parent, id, cg);
		if (IS_ERR(node)) {
			free(cg);
			break;
		}
		if (parent)
			nxq_node_put(parent);
		parent = node;
		if (!strcmp(norm, "/") || end == strlen(norm))
			break;
		e = strchrnul(norm + end + 1, '/');
		end = e - norm;
	}
	if (IS_ERR(node) && parent)
		nxq_node_put(parent);
	return node;
}

/* Clear cgroup @id's budget on @dev (@r NULL), or set @r on @norm's node. */
static int nxqd_budget_apply(struct nxq_device *dev, const char *norm, u64 id,
			     const struct nxq_budget_req *r, char *msg,
			     size_t msg_size)
{
	struct nxq_budget_refusal why;
	struct nxq_node *node;
	int err;

	nxq_device_prune(dev);
	if (!r) {
		node = nxq_node_find(dev, id);
		if (node)
			nxq_node_clear_budget(node);
		return 0;
	}
	node = nxqd_node_for_path(dev, norm);
	if (IS_ERR(node))
		return PTR_ERR(node);
	err = nxq_node_apply(node, r, &why);
	/* the refusal with the nodes' paths: the state is the daemon's */
	if (err && msg && msg_size)
		nxq_refusal_msg(node, &why, msg, msg_size, true);
	nxq_node_put(node);
	return err;
}

int nxqd_budget_set(const char *key, const char *path,
		    const struct nxq_budget_req *r, char *msg, size_t msg_size)
{
	struct nxq_device *dev;
	char norm[PATH_MAX];
	int err;
	u64 id;

	if (msg && msg_size)
		msg[0] = '\0';
	err = nxqd_cg_norm(path, norm, sizeof(norm));
	if (err < 0)
		return err;
	id = nxqd_cg_ino(norm);
	if (!id)
		return -ENOENT;
	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger, key);
	err = dev ? nxqd_budget_apply(dev, norm, id, r, msg, msg_size) :
		    -ENODEV;
	mutex_unlock(&nxqd_ledger.lock);
	return err;
}

int nxqd_cgroup_read(int fd, char *buf, size_t len)
{
	char text[PATH_MAX + 4096], *line, *end;
	ssize_t got;
	size_t n;

	got = pread(fd, text, sizeof(text) - 1, 0);
	if (got < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	text[got] = '\0';
	/* "0::PATH" is the cgroup2 line, among v1 hierarchies' lines */
	for (line = text; line && *line; line = end ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (strncmp(line, "0::", 3))
			continue;
		n = end ? (size_t)(end - line) - 3 : strlen(line + 3);
		if (n >= len || line[3] != '/')
			return -ENAMETOOLONG;
		memcpy(buf, line + 3, n);
		buf[n] = '\0';
		return 0;
	}
	return -ENOENT;
}

int nxqd_cgroup_view(const char *path, const char *root, char *out,
		     size_t len)
{
	size_t rl = strlen(root);

	if (!strcmp(root, "/"))
		rl = 0;
	else if (strncmp(path, root, rl) || (path[rl] && path[rl] != '/'))
		return -ENOENT;
	if (snprintf(out, len, "%s", path[rl] ? path + rl : "/") >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}
