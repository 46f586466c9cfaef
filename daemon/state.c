// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's persistent state: the devices and budgets root set, in
 * STATE_DIR/state (NXQD_STATE_DIR, nxquotad -S DIR), rewritten after every
 * change made through the control socket and read once at start.  The
 * values are checked by the ABI's rules (kmod/abi.c), as when they came
 * through the control socket.
 *
 * The file is text, one object a line, written whole to state.tmp,
 * fsync()ed, renamed over state, and the directory fsync()ed: a crash at
 * any point leaves the old file or the new one, never a mix.
 *
 *   nxquotad-state 1
 *   device KEY devt=MAJ:MIN|- FIELD=VALUE...
 *   budget KEY PATH FIELD=VALUE|-...
 *
 * (one line each).  A device's FIELDs are the spec's device table
 * (NXQ_DEVICE_FIELDS: capacity, default_max, ticket_timeout_ms), each
 * read as the table says (nxq_abi_dfield_parse()), in any order, each at
 * most once, capacity required, one absent the table's default; the
 * format before, "device KEY capacity=.. devt=.. default_max=..
 * ticket_timeout_ms=..", reads as it did.  PATH is the cgroup's path from the cgroup2 root with
 * '%', bytes up to ' ' and from 0x7f written as %XX.  FIELD is each field
 * of the spec's budget table a node keeps (NXQ_BUDGET_FIELDS: max, min,
 * kill_on_ignore, holders_max, ...), its VALUE written and read as the
 * table says (nxq_abi_budget_word(): a size, "max", 0 or 1, a number), in
 * any order, each at most once; one that is "-" or absent is none of the
 * node's own (no max, inherited limits): a file written before a field
 * was added to the spec reads as it did, and so does one of the format
 * before this, where max was absent rather than "-".  Only nodes with
 * something set are written.  Loading replays the lines through
 * the same functions the control socket uses (nxq_device_add(),
 * nxqd_budget_set()); a budget whose cgroup does not exist (yet) is
 * reported and skipped -- the module also forgets the budget of a removed
 * cgroup -- and the next save no longer has it.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nxqd.h"

#define STATE_MAGIC	"nxquotad-state 1"
/* The most words of a line: a budget's, "budget KEY PATH" and its fields. */
#define STATE_WORDS	(3 + NXQ_NR_BUDGET_FIELDS)

static char *state_dir;		/* NULL: nothing is persisted */

static void put_path(FILE *f, const char *p)
{
	for (; *p; p++) {
		unsigned char ch = *p;

		if (ch <= ' ' || ch >= 0x7f || ch == '%')
			fprintf(f, "%%%02X", ch);
		else
			fputc(ch, f);
	}
}

/* Undo put_path() in place; -EINVAL for a malformed escape. */
static int get_path(char *s)
{
	char *w = s, hex[3] = { 0 };

	for (; *s; s++) {
		if (*s != '%') {
			*w++ = *s;
			continue;
		}
		if (!isxdigit((unsigned char)s[1]) ||
		    !isxdigit((unsigned char)s[2]))
			return -EINVAL;
		hex[0] = s[1];
		hex[1] = s[2];
		*w = (char)strtoul(hex, NULL, 16);
		if (!*w)
			return -EINVAL;
		w++;
		s += 2;
	}
	*w = '\0';
	return 0;
}

static void put_dev(FILE *f, struct nxq_device *dev)
{
	u64 v[NXQ_NR_DEVICE_FIELDS];
	int i;

	spin_lock(&dev->lock);
	for (i = 0; i < NXQ_NR_DEVICE_FIELDS; i++)
		v[i] = nxq_abi_dev_get(dev, i);
	spin_unlock(&dev->lock);
	fprintf(f, "device %s devt=", dev->key);
	if (dev->devt)
		fprintf(f, "%u:%u", major(dev->devt), minor(dev->devt));
	else
		fputc('-', f);
	/* each field of the device table, by its name */
	for (i = 0; i < NXQ_NR_DEVICE_FIELDS; i++) {
		if (nxq_abi_dfields[i].parse == NXQ_PARSE_SIZE_MAX &&
		    v[i] == NXQ_UNLIMITED)
			fprintf(f, " %s=max", nxq_abi_dfields[i].name);
		else
			fprintf(f, " %s=%llu", nxq_abi_dfields[i].name,
				(unsigned long long)v[i]);
	}
	fputc('\n', f);
}

static void put_node(FILE *f, struct nxq_node *node)
{
	struct nxq_budget_req r;
	const char *path;
	bool any;
	u64 v;
	int i;

	spin_lock(&node->dev->lock);
	any = nxq_abi_node_req(node, &r);
	spin_unlock(&node->dev->lock);
	path = nxqd_cgroup_key_path(node->key);
	if (!any || !path)
		return;
	fprintf(f, "budget %s ", node->dev->key);
	put_path(f, path);
	/* each field of the budget table a node keeps, by its name */
	for (i = 0; i < NXQ_NR_BUDGET_FIELDS; i++) {
		const struct nxq_abi_field *d = &nxq_abi_fields[i];

		if (!d->kept)
			continue;
		if (!nxq_abi_req_get(&r, i, &v))
			fprintf(f, " %s=-", d->name);
		else if (d->parse == NXQ_PARSE_SIZE_MAX && v == NXQ_UNLIMITED)
			fprintf(f, " %s=max", d->name);
		else
			fprintf(f, " %s=%llu", d->name, (unsigned long long)v);
	}
	fputc('\n', f);
}

/* The whole state as text, read under the ledger lock; @skip left out. */
static char *state_text(size_t *len, const char *skip)
{
	struct nxq_device *dev;
	struct nxq_node *node;
	unsigned long id;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	fprintf(f, "%s\n", STATE_MAGIC);
	mutex_lock(&nxqd_ledger.lock);
	list_for_each_entry(dev, &nxqd_ledger.devices, link)
		if (!skip || strcmp(skip, dev->key))
			put_dev(f, dev);
	list_for_each_entry(dev, &nxqd_ledger.devices, link)
		if (!skip || strcmp(skip, dev->key))
			xa_for_each(&dev->nodes, id, node)
				put_node(f, node);
	mutex_unlock(&nxqd_ledger.lock);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

const char *nxqd_state_dir(void)
{
	return state_dir;
}

/**
 * nxqd_state_save() - write the devices and budgets to the state file
 * @skip: a device to leave out (its removal is about to happen), or NULL
 *
 * tmp + fsync + rename + fsync of the directory, on the loop: a change
 * and its save are one turn, which no charge interleaves.  Each save
 * writes what the ledger holds when it runs.
 *
 * Return: 0 (also when nothing is persisted), or the negative errno of
 * the step that failed, also printed; the old file is left as it was.
 * The control socket refuses (and undoes) a change whose save failed.
 */
int nxqd_state_save(const char *skip)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd = -1, dfd, err = 0;
	size_t len = 0;
	char *text;

	if (!state_dir)
		return 0;
	text = state_text(&len, skip);
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", state_dir);
	snprintf(dst, sizeof(dst), "%s/state", state_dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		err = -errno;
	else
		err = write_all(fd, text, len);
	if (!err && fsync(fd))
		err = -errno;
	free(text);
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, dst))
		err = -errno;
	if (err) {
		unlink(tmp);
		goto out;
	}
	dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd))
			err = -errno;
		close(dfd);
	}
out:
	if (err)
		fprintf(stderr, "nxquotad: cannot save the state in %s: %s\n",
			state_dir, strerror(-err));
	return err;
}

/*
 * "device KEY WORD...": devt=MAJ:MIN|- and each field of the device table
 * as NAME=VALUE (nxq_abi_dfield_parse()), in any order, each at most once;
 * a field absent is the table's default.  The format before the table,
 * "device KEY capacity=.. devt=.. default_max=.. ticket_timeout_ms=..",
 * is one such line.
 */
static int load_device(char **w, int n)
{
	u64 v[NXQ_NR_DEVICE_FIELDS];
	unsigned long seen = 0;
	struct nxq_device *dev;
	const char *devt_s = NULL;
	dev_t devt = 0;
	int i, f, err = 0;

	if (n < 2)
		return -EINVAL;
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		v[f] = nxq_abi_dfields[f].dflt;
	for (i = 2; i < n; i++) {
		const char *eq = strchr(w[i], '=');

		if (eq && eq - w[i] == 4 && !strncmp(w[i], "devt", 4) &&
		    !devt_s) {
			devt_s = eq + 1;
			continue;
		}
		f = eq ? nxq_abi_dfield_find(w[i], eq - w[i]) : -EINVAL;
		if (f < 0 || (seen & BIT(f)) ||
		    nxq_abi_dfield_parse(f, eq + 1, &v[f]))
			return -EINVAL;
		seen |= BIT(f);
	}
	if (!devt_s || !(seen & BIT(NXQ_DF_CAPACITY)))
		return -EINVAL;		/* the device's identity and size */
	if (strcmp(devt_s, "-")) {
		unsigned int maj, min;

		if (nxq_abi_parse_devt(devt_s, &maj, &min))
			return -EINVAL;
		devt = makedev(maj, min);
	}
	dev = nxq_device_add(&nxqd_ledger, w[1], v[NXQ_DF_CAPACITY], devt);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	mutex_lock(&nxqd_ledger.lock);
	dev = nxq_device_find(&nxqd_ledger, w[1]);
	for (f = 0; dev && f < NXQ_NR_DEVICE_FIELDS && !err; f++)
		if (f != NXQ_DF_CAPACITY)
			err = nxq_abi_dev_put(dev, f, v[f]);
	mutex_unlock(&nxqd_ledger.lock);
	return dev ? err : -ENODEV;
}

static int load_budget(char **w, int n, const char *file, int line)
{
	/* What was accepted once is restored as it was, in any order. */
	struct nxq_budget_req r = { .overcommit = true };
	unsigned long seen = 0;
	int i, f, err;

	if (n < 4 || get_path(w[2]) || w[2][0] != '/')
		return -EINVAL;
	/*
	 * The fields a node keeps, by the budget table's names and rules
	 * (nxq_abi_budget_word()), in any order, each at most once; one that
	 * is "-" or absent is none of its own.
	 */
	for (i = 3; i < n; i++) {
		const char *eq = strchr(w[i], '=');

		f = eq ? nxq_abi_field_find(w[i], eq - w[i]) : -EINVAL;
		if (f < 0 || !nxq_abi_fields[f].kept || (seen & BIT(f)))
			return -EINVAL;
		seen |= BIT(f);
		if (strcmp(eq, "=-") && nxq_abi_budget_word(w[i], &r))
			return -EINVAL;
	}
	err = nxqd_budget_set(w[1], w[2], &r, NULL, 0);
	if (err == -ENOENT) {
		fprintf(stderr,
			"nxquotad: %s:%d: no cgroup %s: its budget on %s is dropped\n",
			file, line, w[2], w[1]);
		return 0;
	}
	return err;
}

/**
 * nxqd_state_load() - read the state file and apply it; remember @dir
 * @dir: the state directory (created 0700 if missing), or NULL to persist
 *	nothing
 *
 * Called once at start, before any socket is served and with no device
 * registered.  A missing file is an empty state.
 *
 * Return: 0, or a negative errno after printing the file, line and reason
 * (a malformed file is -EINVAL: the daemon should not start on a state it
 * cannot read, and overwrite it).
 */
int nxqd_state_load(const char *dir)
{
	char file[PATH_MAX], *line = NULL, *w[STATE_WORDS + 1], *save;
	size_t cap = 0;
	int lineno = 0, err = 0, n;
	FILE *f;

	if (!dir)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		fprintf(stderr, "nxquotad: %s: %s\n", dir, strerror(errno));
		return err;
	}
	free(state_dir);
	state_dir = strdup(dir);
	if (!state_dir)
		return -ENOMEM;
	snprintf(file, sizeof(file), "%s/state", dir);
	f = fopen(file, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		err = -errno;
		fprintf(stderr, "nxquotad: %s: %s\n", file, strerror(errno));
		return err;
	}
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (lineno == 1) {
			if (strcmp(line, STATE_MAGIC))
				err = -EINVAL;
			if (err)
				break;
			continue;
		}
		n = 0;
		for (w[n] = strtok_r(line, " ", &save); w[n] && n < STATE_WORDS;
		     w[n] = strtok_r(NULL, " ", &save))
			n++;
		if (!n)
			continue;
		if (w[n])
			err = -EINVAL;	/* more words than any line has */
		else if (!strcmp(w[0], "device"))
			err = load_device(w, n);
		else if (!strcmp(w[0], "budget"))
			err = load_budget(w, n, file, lineno);
		else
			err = -EINVAL;
		if (err)
			break;
	}
	if (!err && lineno == 0)
		err = -EINVAL;	/* an empty file is not one we wrote */
	if (err)
		fprintf(stderr, "nxquotad: %s:%d: %s\n", file, lineno,
			err == -EINVAL ? "malformed line" : strerror(-err));
	free(line);
	fclose(f);
	return err;
}
