// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_abi: random ioctls and random netlink messages, as root and as a
 * tenant, at once; no splat and the ledger exact afterwards.
 *
 *   NXQ_FUZZ_IOCTLS  ioctls in all (default 400000, about 10-40 s under
 *                    TCG; issue 10's 1000000: NXQ_FUZZ_IOCTLS=1000000
 *                    NXQ_TEST_TIMEOUT=290 NXQ_SCEN_TIMEOUT=300
 *                    tests/vm/run.sh fuzz_abi)
 *   NXQ_FUZZ_NL      netlink messages in all (default 40000)
 *   NXQ_FUZZ_SEED    the seed (default: from the clock; printed)
 *
 * Four processes share device t-fz (256M): root (/fz-r) and a tenant
 * (uid 65534, /fz-t) each send half the ioctls on two files of
 * /dev/nxquota; root and the tenant each send half the netlink messages.
 * ioctls: commands around the magic NXQ_IOC_MAGIC (numbers 0..15 in any direction
 * and size bits, other numbers, other magics), arguments that are random
 * bytes or the real structs with random fields (sizes around the known
 * ones, flags, known and random holder ids, byte counts small and near
 * 2^64, short waits, eventfds, device keys), placed at the start of a
 * page, across a guard page, on a read-only page, or bad pointers.
 * A 20 ms interval timer interrupts waits.  Now and then a file is closed
 * and reopened.  netlink: the family's commands and others, do and dump,
 * 0..6 attributes of any type, length and payload (valid u64/u32/strings
 * too; device operations never name t-fz, and no kill policy is set:
 * it would kill the fuzzers).
 * Afterwards, with the fuzzers stopped but their files open: each finds
 * its holders by STATUS; their charges sum to the devices' used and
 * their number to their holders (t-fz's, and those of devices the root
 * netlink fuzzer added, on which holders may have been registered).  Then all files closed: used, holders
 * and every node's current 0.
 *
 * Written with the harness's fixtures (harness.h): the node's admin
 * setup (the device node's group, t-fz, the two cgroups, their budgets
 * and limits) and the shared results are the fixture's setup, t-fz's
 * and the cgroups' removal its teardown; the run and the checks one
 * TEST_F.  It keeps the harness's default limit (30 s, or
 * NXQ_TEST_TIMEOUT), as the race_* do, so that a larger NXQ_FUZZ_IOCTLS
 * is given time with NXQ_TEST_TIMEOUT.  About the module's ioctls and
 * the kernel's netlink socket (sc_module_only[]): its only variant is
 * the module's.
 */
#include "scen.h"
#include "tenant.h"
#include "nl_genl.h"

#define KEY	"t-fz"
#define CR	"/fz-r"
#define CT	"/fz-t"
#define M	SC_MIB
#define NFD	2
#define NIDS	64

struct result {
	uint64_t n, ok, err[160], sum_charge, nholders, usecs;
	int done;
};
static struct result *res;	/* [0] root ioctl, [1] tenant ioctl,
				 * [2] root nl, [3] tenant nl */
static volatile int *go_check, *go_close;

static void on_alarm(int sig)
{
	(void)sig;
}

static void timer_on(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: waits see EINTR */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void timer_off(void)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
}

static const size_t sizes[] = {
	sizeof(struct nxq_version), sizeof(struct nxq_holder_reg),
	sizeof(struct nxq_holder_id), sizeof(struct nxq_charge),
	sizeof(struct nxq_charge), sizeof(struct nxq_reclaimable),
	sizeof(struct nxq_status), sizeof(struct nxq_ticket),
	sizeof(struct nxq_ticket_answer),
};
static const unsigned int dirs[] = {
	_IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE, _IOC_WRITE,
	_IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE, _IOC_WRITE,
	_IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	_IOC_READ | _IOC_WRITE,
};

static uint64_t pick_u64(uint64_t *s)
{
	switch (sc_rand(s) % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return UINT64_MAX - (sc_rand(s) % 4096);
	case 3: return sc_rand(s);
	case 4: return 1ULL << (sc_rand(s) % 64);
	default: return sc_rand(s) % (16 * M) + 1;
	}
}

static char *page;	/* [0] rw, [1] none, [2] read-only */
static long psz;

static void ioctl_fuzzer(int who, uint64_t n, uint64_t seed)
{
	struct result *r = &res[who];
	uint64_t s = seed, ids[NFD][NIDS], t0;
	int fds[NFD], nid[NFD], efds[2], i, k;
	uint64_t maxid[NFD] = { 0 };

	memset(nid, 0, sizeof(nid));
	page = mmap(NULL, 3 * psz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	CHECK(mprotect(page + psz, psz, PROT_NONE) == 0);
	memset(page + 2 * psz, 0, psz);
	((uint32_t *)(page + 2 * psz))[0] = sizeof(struct nxq_status);
	CHECK(mprotect(page + 2 * psz, psz, PROT_READ) == 0);
	efds[0] = sc_eventfd();
	efds[1] = sc_eventfd();
	for (k = 0; k < NFD; k++) {
		fds[k] = sc_open();
		CHECK_OK(fds[k]);
		for (i = 0; i < 4; i++)
			CHECK_OK(sc_register(fds[k], KEY, efds[i & 1], 0,
					     &ids[k][nid[k]++]));
	}
	timer_on();
	t0 = sc_now_us();
	for (r->n = 0; r->n < n; r->n++) {
		unsigned int nr, dir, size, cmd;
		uint64_t x = sc_rand(&s);
		char *buf = page;
		size_t len;
		long rc;

		k = x & 1;
		if (x % 4096 == 7) {		/* close and reopen a file */
			close(fds[k]);
			fds[k] = sc_open();
			CHECK_OK(fds[k]);
			nid[k] = 0;
			maxid[k] = 0;
			continue;
		}
		nr = sc_rand(&s) % 10;
		dir = dirs[nr < 9 ? nr : 0];
		size = nr < 9 ? sizes[nr] : 16;
		switch (sc_rand(&s) % 20) {
		case 0: nr = sc_rand(&s) % 256; break;
		case 1: dir = sc_rand(&s) % 4; break;
		case 2: size = sc_rand(&s) % (1 << 14); break;
		}
		cmd = _IOC(dir, NXQ_IOC_MAGIC, nr, size);
		switch (sc_rand(&s) % 40) {
		case 0: cmd = _IOC(sc_rand(&s) % 4, 0xB5 + sc_rand(&s) % 5,
				   sc_rand(&s) % 256, sc_rand(&s) % 512);
			break;
		case 1: cmd = (unsigned int)sc_rand(&s); break;
		}
		/* the argument: random bytes, then maybe a struct */
		for (i = 0; i < 128; i += 8)
			*(uint64_t *)(page + i) = sc_rand(&s);
		len = nr < 9 ? sizes[nr] : 16;
		if (sc_rand(&s) % 5) {
			uint32_t *w = (uint32_t *)page;
			uint64_t *q = (uint64_t *)page;
			uint64_t id = nid[k] && sc_rand(&s) % 4 ?
				ids[k][sc_rand(&s) % nid[k]] : pick_u64(&s);

			switch (sc_rand(&s) % 10) {
			case 0: w[0] = sc_rand(&s) % 256; break;
			case 1: w[0] = len + 8 * (sc_rand(&s) % 4); break;
			case 2: w[0] = psz + sc_rand(&s) % 2; break;
			default: w[0] = len;
			}
			if (w[0] > len && w[0] <= 256 && sc_rand(&s) % 2)
				memset(page + len, 0, w[0] - len);
			w[1] = sc_rand(&s) % 4 ? 0 : sc_rand(&s) % 8;
			switch (nr) {
			case 1: {
				struct nxq_holder_reg *g = (void *)page;

				snprintf(g->device, sizeof(g->device), "%s",
					 sc_rand(&s) % 8 ? KEY : "t-fz2");
				g->eventfd = sc_rand(&s) % 4 ?
					efds[sc_rand(&s) & 1] :
					(int)(sc_rand(&s) % 40) - 2;
				g->priority = sc_rand(&s) % 4 ? 0 :
					sc_rand(&s) % 1200;
				if (sc_rand(&s) % 4)
					memset(&g->holder_id, 0,
					       len - offsetof(struct
							      nxq_holder_reg,
							      holder_id));
				break;
			}
			case 3: case 4: {
				struct nxq_charge *c = (void *)page;

				c->holder_id = id;
				c->bytes = pick_u64(&s);
				c->timeout_ns = nr == 3 && w[1] & NXQ_CHARGE_WAIT
					? sc_rand(&s) % 50000000 : 0;
				break;
			}
			case 0:
				break;
			default:
				q[1] = id;
				if (nr == 5 || nr == 8)
					q[2] = pick_u64(&s);
				if (nr == 8)
					q[3] = pick_u64(&s);
			}
		}
		switch (sc_rand(&s) % 25) {
		case 0: buf = page + psz - 8 - sc_rand(&s) % 48; /* guard */
			memmove(buf, page, 8);
			break;
		case 1: buf = page + 2 * psz; break;	/* read-only */
		case 2: buf = NULL; break;
		case 3: buf = (char *)0xffff888000000000ULL; break;
		case 4: buf = page + psz; break;	/* no access */
		}
		rc = sc_ioctl(fds[k], cmd, buf);
		if (!rc)
			r->ok++;
		else if (-rc < 160)
			r->err[-rc]++;
		if (!rc && cmd == NXQ_IOC_HOLDER_REGISTER && buf == page) {
			uint64_t id = ((struct nxq_holder_reg *)page)->holder_id;

			if (id > maxid[k])
				maxid[k] = id;
			if (nid[k] < NIDS)
				ids[k][nid[k]++] = id;
			else
				ids[k][sc_rand(&s) % NIDS] = id;
		}
	}
	timer_off();
	r->usecs = sc_now_us() - t0;
	/* stopped: find every holder of ours by STATUS */
	r->done = 1;
	while (!*go_check)
		usleep(10000);
	for (k = 0; k < NFD; k++) {
		uint64_t id;

		for (id = 1; id < maxid[k] + 8192; id++) {
			struct nxq_status st;

			if (sc_status(fds[k], id, &st) == 0) {
				r->nholders++;
				r->sum_charge += st.holder_charge;
			}
		}
	}
	r->done = 2;
	while (!*go_close)
		usleep(10000);
	for (k = 0; k < NFD; k++)
		close(fds[k]);
	r->done = 3;
}

static const char *const keys[] = { "t-fz2", "t-fz3", "", "x/y", "t-fz9" };
static const char *const paths[] = { CR, CT, "/", "/nope", "", "//", "..",
				     "/fz-r/../fz-t" };

static void nl_fuzzer(int who, uint64_t n, uint64_t seed)
{
	struct result *r = &res[who];
	struct timeval tv = { 0, 200000 };
	uint64_t s = seed, t0 = sc_now_us();
	struct nl_msg m;
	int fd = NL_OPEN();

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (r->n = 0; r->n < n; r->n++) {
		uint8_t cmd = sc_rand(&s) % 14;
		int na = sc_rand(&s) % 7, i, rc, good = sc_rand(&s) % 2;
		int dev_cmd, get;
		uint16_t flags;

		if (good)
			cmd = 1 + sc_rand(&s) % NXQUOTA_CMD_HOLDER_GET;
		dev_cmd = cmd >= NXQUOTA_CMD_DEVICE_ADD &&
			  cmd <= NXQUOTA_CMD_DEVICE_SET;
		get = cmd == NXQUOTA_CMD_DEVICE_GET ||
		      cmd == NXQUOTA_CMD_BUDGET_GET ||
		      cmd == NXQUOTA_CMD_HOLDER_GET;
		flags = sc_rand(&s) % 3 ? 0 : NLM_F_DUMP;
		if (good)
			flags = get && sc_rand(&s) % 4 ? NLM_F_DUMP : 0;
		nl_init(&m, sc_rand(&s) % 30 ? nl_family_id :
			(uint16_t)sc_rand(&s), flags, cmd);
		((struct genlmsghdr *)NLMSG_DATA(&m.nlh))->version =
			good ? 1 : sc_rand(&s) % 4;
		if (good) {
			/* typed attributes of the command's set */
			int dev = dev_cmd || cmd == NXQUOTA_CMD_DEVICE_GET;

			if (dev) {
				nl_put_str(&m, NXQUOTA_A_DEVICE_KEY,
					   keys[sc_rand(&s) % 5]);
				if (sc_rand(&s) % 2)
					nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY,
						   pick_u64(&s));
				if (sc_rand(&s) % 3 == 0)
					nl_put(&m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS,
					       &(uint32_t){ sc_rand(&s) % 100000 },
					       4);
			} else {
				nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE,
					   sc_rand(&s) % 4 ? KEY :
					   keys[sc_rand(&s) % 5]);
				if (sc_rand(&s) % 4)
					nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH,
						   paths[sc_rand(&s) % 8]);
				if (sc_rand(&s) % 2)
					nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX,
						   pick_u64(&s));
				if (sc_rand(&s) % 2)
					nl_put_u64(&m, NXQUOTA_A_BUDGET_MIN,
						   pick_u64(&s));
			}
			na = sc_rand(&s) % 3;
		}
		for (i = 0; i < na; i++) {
			uint16_t type = sc_rand(&s) % 24;
			char pay[96];
			size_t len;

			/* no kill policy: it would kill the fuzzers */
			if (type == NXQUOTA_A_BUDGET_KILL_ON_IGNORE)
				type = 0;
			if (sc_rand(&s) % 16 == 0)
				type |= NLA_F_NESTED;
			switch (sc_rand(&s) % 6) {
			case 0:
				nl_put_u64(&m, type, pick_u64(&s));
				continue;
			case 1: {
				uint32_t v = sc_rand(&s);

				nl_put(&m, type, &v, 4);
				continue;
			}
			case 2:
				nl_put_str(&m, type, keys[sc_rand(&s) % 5]);
				continue;
			case 3:
				nl_put_str(&m, type, paths[sc_rand(&s) % 8]);
				continue;
			case 4:
				if (!dev_cmd) {
					nl_put_str(&m, type, KEY);
					continue;
				}
				break;
			}
			len = sc_rand(&s) % sizeof(pay);
			for (size_t j = 0; j < len; j++)
				pay[j] = sc_rand(&s);
			nl_put(&m, type, pay, len);
		}
		/* never name t-fz in a device operation */
		if (dev_cmd && memmem(m.buf, m.nlh.nlmsg_len, KEY,
				      sizeof(KEY))) {
			r->n--;
			continue;
		}
		rc = nl_talk(fd, &m, NULL, NULL, NULL);
		if (rc >= 0)
			r->ok++;
		else if (-rc < 160)
			r->err[-rc]++;
	}
	r->usecs = sc_now_us() - t0;
	close(fd);
	r->done = 3;
}

static int run_fuzzer(void *arg)
{
	int who = (int)(uintptr_t)arg;
	uint64_t seed = tn_knob("NXQ_FUZZ_SEED", 0) + who * 7919 + 1;
	uint64_t ni = tn_knob("NXQ_FUZZ_IOCTLS", 400000);
	uint64_t nn = tn_knob("NXQ_FUZZ_NL", 40000);

	CHECK_OK(sc_cg_enter(who & 1 ? CT : CR));
	if (who & 1)
		tn_drop(1, 0);
	if (who < 2)
		ioctl_fuzzer(who, ni / 2, seed);
	else
		nl_fuzzer(who, nn / 2, seed);
	return 0;
}

static void report(int who, const char *what)
{
	struct result *r = &res[who];
	char top[256] = "";
	size_t off = 0;
	int e, shown = 0;

	for (e = 1; e < 160 && shown < 6; e++)
		if (r->err[e] * 50 > r->n) {
			off += snprintf(top + off, sizeof(top) - off, " %s:%llu",
					sc_errname(e),
					(unsigned long long)r->err[e]);
			shown++;
		}
	sc_log("%s: %llu in %.1f s (%.1f us each), %llu ok;%s", what,
	       (unsigned long long)r->n, r->usecs / 1e6,
	       r->n ? (double)r->usecs / r->n : 0.0,
	       (unsigned long long)r->ok, top);
}

static void wait_done(int who, int state)
{
	uint64_t end = sc_now_ms() + 600000;

	while (res[who].done < state) {
		if (sc_now_ms() > end)
			FAIL("fuzzer %d never reached state %d", who, state);
		usleep(20000);
	}
}

/* The module's ioctls and netlink socket: the module only. */
FIXTURE(fuzz_abi) {};

FIXTURE_VARIANT(fuzz_abi) {};

FIXTURE_VARIANT_ADD(fuzz_abi, module) {};

FIXTURE_SETUP(fuzz_abi)
{
	psz = sysconf(_SC_PAGESIZE);
	tn_devnode_admin();
	res = sc_shared(4 * sizeof(*res) + 64);
	go_check = (volatile int *)(res + 4);
	go_close = go_check + 1;
	CHECK_OK(sc_dev_register(KEY, "256M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CR));
	CHECK_OK(sc_cg_create(CT));
	CHECK_OK(sc_set_budget(KEY, CR " max=128M"));
	CHECK_OK(sc_set_budget(KEY, CT " max=128M"));
	TN_LIMITS(KEY, CT " holders_max=100000");
	TN_LIMITS(KEY, CR " holders_max=100000");
}

FIXTURE_TEARDOWN(fuzz_abi)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CR));
	CHECK_OK(sc_cg_remove(CT));
}

TEST_F(fuzz_abi, ioctls_and_netlink_ledger_exact)
{
	uint64_t seed = tn_knob("NXQ_FUZZ_SEED", 0), used, holders;
	static const char *const names[] = { "root ioctls", "tenant ioctls",
		"root netlink", "tenant netlink" };
	char dir[256], key[64];
	struct dirent *e;
	pid_t p[4];
	DIR *d;
	int i;

	if (!seed)
		seed = sc_now_ns() % 1000000007;
	{
		char sb[32];

		snprintf(sb, sizeof(sb), "%llu", (unsigned long long)seed);
		setenv("NXQ_FUZZ_SEED", sb, 1);
	}
	sc_log("seed %llu (NXQ_FUZZ_SEED), %llu ioctls, %llu netlink messages",
	       (unsigned long long)seed,
	       (unsigned long long)tn_knob("NXQ_FUZZ_IOCTLS", 400000),
	       (unsigned long long)tn_knob("NXQ_FUZZ_NL", 40000));

	for (i = 0; i < 4; i++)
		p[i] = sc_spawn(run_fuzzer, (void *)(uintptr_t)i);
	for (i = 0; i < 4; i++)
		wait_done(i, i < 2 ? 1 : 3);
	CHECK_CHILD_OK(p[2]);
	CHECK_CHILD_OK(p[3]);
	*go_check = 1;
	wait_done(0, 2);
	wait_done(1, 2);
	for (i = 0; i < 4; i++)
		report(i, names[i]);
	/* holders may be on t-fz2..., devices the netlink fuzzer added */
	used = holders = 0;
	d = opendir(SC_DEVICES);
	CHECK(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && e->d_type == DT_DIR) {
			/*
			 * A key has at most 63 characters; the bound tells
			 * gcc so (-Wformat-truncation in sc_dev_path(), once
			 * this is inlined into a TEST_F's body, not main()).
			 */
			snprintf(key, sizeof(key), "%.63s", e->d_name);
			used += DEV_U64(key, "used");
			holders += DEV_U64(key, "holders");
		}
	closedir(d);
	sc_log("stopped: devices' used %llu holders %llu; the fuzzers found "
	       "%llu + %llu holders charged %llu + %llu",
	       (unsigned long long)used, (unsigned long long)holders,
	       (unsigned long long)res[0].nholders,
	       (unsigned long long)res[1].nholders,
	       (unsigned long long)res[0].sum_charge,
	       (unsigned long long)res[1].sum_charge);
	CHECK_EQ(holders, res[0].nholders + res[1].nholders);
	CHECK_EQ(used, res[0].sum_charge + res[1].sum_charge);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), DEV_U64(KEY, "used"));
	*go_close = 1;
	CHECK_CHILD_OK(p[0]);
	CHECK_CHILD_OK(p[1]);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);
	snprintf(dir, sizeof(dir), SC_DEVICES "/%s/nodes", KEY);
	d = opendir(dir);
	CHECK(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			CHECK_EQ(NODE_U64(KEY, strtoull(e->d_name, NULL, 10),
					  "current"), 0);
	closedir(d);
	/* devices the root netlink fuzzer may have added */
	d = opendir(SC_DEVICES);
	CHECK(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] != '.' && strcmp(e->d_name, KEY) &&
		    e->d_type == DT_DIR)
			CHECK_OK(sc_dev_unregister(e->d_name));
	}
	closedir(d);
}

TEST_HARNESS_MAIN
