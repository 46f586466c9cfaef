// SPDX-License-Identifier: GPL-2.0
/*
 * bad_ioctl: every command of /dev/nxquota against bad input, each answer
 * checked against Documentation/userspace-api/nxquota.rst: sizes below the
 * first version (EINVAL), above 4096 or with a non-zero unknown tail
 * (E2BIG), unknown flags (EINVAL), unknown commands and wrong directions
 * (ENOTTY), bad holder ids (ENOENT), byte counts near 2^64, bad eventfds
 * (EBADF, EINVAL), bad device keys (ENODEV, EINVAL), bad pointers and
 * read-only output (EFAULT), too many holders (EMFILE).  After every
 * refusal the holder's charge and reclaimable bytes, the device's used and
 * its holders are what they were.  Each refusal has a positive control:
 * the same call, made valid, succeeds -- or, for the ticket commands on a
 * holder with no open ticket, gets as far as EAGAIN / ESTALE.
 *
 * Written with the harness's fixtures (harness.h): the fixture registers
 * the device, opens the two files and the reference holders (h with BASE
 * charged, spare) and maps the three pages, in the test's own process
 * (so the globals below are each test's own); each group of cases is a
 * TEST_F of its own, and the teardown checks what the program's end
 * checked before, now after every group: h still holds BASE and the
 * device's used is BASE; with the files closed, used and holders 0.
 * About the module's ioctl checks (sc_module_only[]): its only variant is
 * the module's.
 */
#include "scen.h"

#define KEY	"t-bad"
#define HUGE	"t-bad-huge"
#define BASE	SC_MIB		/* what holder h keeps charged */
#define PAGE	4096
#define U64MAX	UINT64_MAX

enum { C_VERSION, C_REGISTER, C_UNREGISTER, C_CHARGE, C_UNCHARGE,
       C_RECLAIMABLE, C_STATUS, C_TICKET_READ, C_TICKET_ANSWER, NCMD };

static const struct {
	const char *name;
	unsigned long nr;
	uint32_t ver0;
	int has_flags, has_holder;
	int valid_err;	/* what a valid argument gets: 0, or how far it got */
} cmds[NCMD] = {
	{ "VERSION", NXQ_IOC_VERSION, NXQ_VERSION_SIZE_VER0, 0, 0 },
	{ "HOLDER_REGISTER", NXQ_IOC_HOLDER_REGISTER,
	  NXQ_HOLDER_REG_SIZE_VER0, 1, 0 },
	{ "HOLDER_UNREGISTER", NXQ_IOC_HOLDER_UNREGISTER,
	  NXQ_HOLDER_ID_SIZE_VER0, 1, 1 },
	{ "CHARGE", NXQ_IOC_CHARGE, NXQ_CHARGE_SIZE_VER0, 1, 1 },
	{ "UNCHARGE", NXQ_IOC_UNCHARGE, NXQ_CHARGE_SIZE_VER0, 1, 1 },
	{ "SET_RECLAIMABLE", NXQ_IOC_SET_RECLAIMABLE,
	  NXQ_RECLAIMABLE_SIZE_VER0, 1, 1 },
	{ "STATUS", NXQ_IOC_STATUS, NXQ_STATUS_SIZE_VER0, 1, 1 },
	/* no ticket is open on the reference holder */
	{ "TICKET_READ", NXQ_IOC_TICKET_READ, NXQ_TICKET_SIZE_VER0, 1, 1,
	  EAGAIN },
	{ "TICKET_ANSWER", NXQ_IOC_TICKET_ANSWER, NXQ_TICKET_ANSWER_SIZE_VER0,
	  1, 1, ESTALE },
};
static int ncmd = C_TICKET_READ;	/* NCMD when NXQ_FEAT_TICKETS */

/* Set by the fixture's setup, in each test's process. */
static int fd, fd2;
static uint64_t h;	/* BASE charged, reclaimable 0 */
static uint64_t spare;	/* what UNREGISTER's valid argument removes */
static unsigned char *mem;	/* three pages: RW, RW, PROT_NONE */

/* ---- what must not change ---- */

struct fp {
	uint64_t charge, recl, used, holders;
};

static struct fp fingerprint(void)
{
	struct nxq_status st;
	struct fp f;
	long rc = sc_status(fd, h, &st);

	if (rc < 0)
		FAIL("STATUS of the reference holder: %s", sc_errname(-rc));
	f.charge = st.holder_charge;
	f.recl = st.holder_reclaimable;
	f.used = DEV_U64(KEY, "used");
	f.holders = DEV_U64(KEY, "holders");
	CHECK_EQ(st.device_used, f.used);
	return f;
}

static void same_at(const char *file, int line, const char *what,
		    struct fp a)
{
	struct fp b = fingerprint();

	if (memcmp(&a, &b, sizeof(a)))
		sc_fail_at(file, line, "%s changed state: charge %" PRIu64
			   "->%" PRIu64 " reclaimable %" PRIu64 "->%" PRIu64
			   " used %" PRIu64 "->%" PRIu64 " holders %" PRIu64
			   "->%" PRIu64, what, a.charge, b.charge, a.recl,
			   b.recl, a.used, b.used, a.holders, b.holders);
}

/* ---- valid arguments, and undoing their effect ---- */

static void fill(int c, void *p)
{
	memset(p, 0, 2 * PAGE);
	switch (c) {
	case C_VERSION: {
		struct nxq_version *v = p;

		v->size = sizeof(*v);
		break;
	}
	case C_REGISTER: {
		struct nxq_holder_reg *r = p;

		r->size = sizeof(*r);
		strcpy(r->device, KEY);
		r->eventfd = -1;
		break;
	}
	case C_UNREGISTER: {
		struct nxq_holder_id *i = p;

		i->size = sizeof(*i);
		i->holder_id = spare;
		break;
	}
	case C_CHARGE:
	case C_UNCHARGE: {
		struct nxq_charge *ch = p;

		ch->size = sizeof(*ch);
		ch->holder_id = h;
		ch->bytes = 1;
		break;
	}
	case C_RECLAIMABLE: {
		struct nxq_reclaimable *r = p;

		r->size = sizeof(*r);
		r->holder_id = h;
		break;
	}
	case C_STATUS: {
		struct nxq_status *st = p;

		st->size = sizeof(*st);
		st->holder_id = h;
		break;
	}
	case C_TICKET_READ: {
		struct nxq_ticket *t = p;

		t->size = sizeof(*t);
		t->holder_id = h;
		break;
	}
	case C_TICKET_ANSWER: {
		struct nxq_ticket_answer *a = p;

		a->size = sizeof(*a);
		a->holder_id = h;
		a->generation = 1;
		break;
	}
	}
}

static void undo(int c, void *p)
{
	uint64_t x;

	switch (c) {
	case C_REGISTER:
		CHECK_OK(sc_unregister(fd, ((struct nxq_holder_reg *)p)->holder_id));
		break;
	case C_UNREGISTER:
		CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &spare));
		break;
	case C_CHARGE:
		CHECK_OK(sc_uncharge(fd, h, 1, &x));
		break;
	case C_UNCHARGE:
		CHECK_OK(sc_charge(fd, h, 1, &x));
		break;
	case C_RECLAIMABLE:
		CHECK_EQ(fingerprint().recl,
			 ((struct nxq_reclaimable *)p)->bytes);
		CHECK_OK(sc_set_reclaimable(fd, h, 0));
		break;
	}
}

static void set_size(void *p, uint32_t size)
{
	*(uint32_t *)p = size;
}

static void set_flags(void *p, uint32_t flags)
{
	((uint32_t *)p)[1] = flags;
}

/* Holder ids sit at offset 8 in every struct that has one. */
static void set_holder(void *p, uint64_t id)
{
	memcpy((char *)p + 8, &id, sizeof(id));
}

/*
 * Issue command c with argument p: err 0 means it must succeed (then its
 * effect is undone), else it must fail with err and change nothing.
 */
#define TRY(what, c, p, err) try_at(__FILE__, __LINE__, what, c, p, err)

static void try_at(const char *file, int line, const char *what, int c,
		   void *p, int err)
{
	struct fp before = fingerprint();
	char label[160];
	long rc;

	snprintf(label, sizeof(label), "%s (%s)", cmds[c].name, what);
	rc = sc_ioctl(fd, cmds[c].nr, p);
	if (!err && rc < 0)
		sc_fail_at(file, line, "%s: %s, expected success", label,
			   sc_errname(-rc));
	if (err && rc != -err)
		sc_fail_at(file, line, "%s: expected %s, got %s", label,
			   sc_errname(err), sc_rcname(rc));
	if (!err)
		undo(c, p);
	same_at(file, line, label, before);
}

/* ---- the fixture ---- */

/* The ioctl's own checks: the module only (sc_module_only[]). */
FIXTURE(bad_ioctl) {};

FIXTURE_VARIANT(bad_ioctl) {};

FIXTURE_VARIANT_ADD(bad_ioctl, module) {};

FIXTURE_SETUP(bad_ioctl)
{
	struct nxq_version v;
	uint64_t c = 0;

	mem = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	CHECK(mprotect(mem + 2 * PAGE, PAGE, PROT_NONE) == 0);

	CHECK_OK(sc_dev_register_open(KEY, "1G"));
	fd = sc_open();
	CHECK_OK(fd);
	fd2 = sc_open();
	CHECK_OK(fd2);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &h));
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &spare));
	CHECK_OK(sc_charge(fd, h, BASE, &c));
	CHECK_OK(sc_version(fd, &v));
	if (v.features & NXQ_FEAT_TICKETS)
		ncmd = NCMD;
	else
		sc_log("no NXQ_FEAT_TICKETS: ticket commands not tried");
}

/* What every group of cases must leave: h's BASE, nothing else. */
FIXTURE_TEARDOWN(bad_ioctl)
{
	if (fd2 >= 0)
		CHECK_OK(sc_close(fd2));	/* holder_ids closed it */
	fd2 = -1;
	CHECK_EQ(HOLDER_CHARGE(fd, h), BASE);
	CHECK_EQ(DEV_U64(KEY, "used"), BASE);
	CHECK_OK(sc_close(fd));
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
}

/* ---- the cases ---- */

TEST_F(bad_ioctl, sizes)
{
	unsigned char *p = mem;
	int c;

	for (c = 0; c < ncmd; c++) {
		uint32_t v0 = cmds[c].ver0, full;
		int ok = cmds[c].valid_err;

		fill(c, p);
		TRY("valid", c, p, ok);
		fill(c, p);
		set_size(p, 0);
		TRY("size 0", c, p, EINVAL);
		fill(c, p);
		set_size(p, 4);
		TRY("size 4", c, p, EINVAL);
		fill(c, p);
		set_size(p, v0 - 1);
		TRY("size VER0-1", c, p, EINVAL);
		fill(c, p);
		set_size(p, v0 - 8);
		TRY("size VER0-8", c, p, EINVAL);

		fill(c, p);
		set_size(p, v0 + 8);
		TRY("size VER0+8, zero tail", c, p, ok);
		/* beyond the newest version the header knows */
		full = c == C_STATUS ? NXQ_STATUS_SIZE_VER1 :
		       c == C_CHARGE || c == C_UNCHARGE ? NXQ_CHARGE_SIZE_VER1 :
		       v0;
		fill(c, p);
		set_size(p, full + 8);
		p[full + 7] = 1;
		TRY("size newest+8, non-zero tail", c, p, E2BIG);
		fill(c, p);
		set_size(p, PAGE);
		TRY("size 4096, zero tail", c, p, ok);
		fill(c, p);
		set_size(p, PAGE);
		p[PAGE - 1] = 0x80;
		TRY("size 4096, last byte set", c, p, E2BIG);
		fill(c, p);
		set_size(p, PAGE + 1);
		TRY("size 4097", c, p, E2BIG);
		fill(c, p);
		set_size(p, UINT32_MAX);
		TRY("size 2^32-1", c, p, E2BIG);
	}
}

TEST_F(bad_ioctl, flags)
{
	static const uint32_t bad[] = { 1U << 3, 1U << 4, 1U << 16, 1U << 31,
					~0U };
	unsigned char *p = mem;
	struct nxq_version v;
	struct nxq_charge *ch = (void *)p;
	int c;
	size_t i;

	for (c = 0; c < ncmd; c++) {
		if (!cmds[c].has_flags)
			continue;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char what[32];

			snprintf(what, sizeof(what), "flags %#x", bad[i]);
			fill(c, p);
			set_flags(p, bad[i]);
			TRY(what, c, p, EINVAL);
		}
		if (c != C_CHARGE && c != C_REGISTER) {
			/* The charge flags mean nothing to the others. */
			fill(c, p);
			set_flags(p, NXQ_CHARGE_NOWAIT);
			TRY("flags NOWAIT", c, p, EINVAL);
		}
	}
	/* Register's one flag: a devfd, which must then be open ... */
	{
		struct nxq_holder_reg *r = (void *)p;

		fill(C_REGISTER, p);
		r->flags = NXQ_HOLDER_DEVFD;
		r->devfd = -1;
		TRY("DEVFD, devfd -1", C_REGISTER, p, EBADF);
		fill(C_REGISTER, p);
		r->flags = NXQ_HOLDER_DEVFD;
		r->devfd = 1000;
		TRY("DEVFD, devfd not open", C_REGISTER, p, EBADF);
		/* ... and without it devfd and reserved must be 0. */
		fill(C_REGISTER, p);
		r->devfd = 3;
		TRY("devfd without DEVFD", C_REGISTER, p, EINVAL);
		fill(C_REGISTER, p);
		r->reserved = 1;
		TRY("reserved", C_REGISTER, p, EINVAL);
	}
	fill(C_CHARGE, p);
	ch->flags = NXQ_CHARGE_NOWAIT;
	TRY("NOWAIT", C_CHARGE, p, 0);
	fill(C_CHARGE, p);
	ch->flags = NXQ_CHARGE_NOWAIT | NXQ_CHARGE_WAIT;
	TRY("NOWAIT|WAIT", C_CHARGE, p, EINVAL);
	CHECK_OK(sc_version(fd, &v));
	if (v.features & NXQ_FEAT_CHARGE_PROBE) {
		fill(C_CHARGE, p);
		ch->flags = NXQ_CHARGE_PROBE | NXQ_CHARGE_WAIT;
		ch->timeout_ns = 1000;
		TRY("PROBE|WAIT", C_CHARGE, p, EINVAL);
		fill(C_CHARGE, p);
		ch->flags = NXQ_CHARGE_PROBE;
		TRY("PROBE", C_CHARGE, p, 0);
	}
	/* the other commands know no charge flag */
	for (c = 0; c < ncmd; c++) {
		if (!cmds[c].has_flags || c == C_CHARGE || c == C_REGISTER)
			continue;
		fill(c, p);
		set_flags(p, NXQ_CHARGE_PROBE);
		TRY("flags PROBE", c, p, EINVAL);
	}
	fill(C_CHARGE, p);
	ch->timeout_ns = 1000;
	TRY("timeout without WAIT", C_CHARGE, p, EINVAL);
	fill(C_CHARGE, p);
	ch->flags = NXQ_CHARGE_NOWAIT;
	ch->timeout_ns = U64MAX;
	TRY("NOWAIT, timeout 2^64-1", C_CHARGE, p, EINVAL);
	CHECK_OK(sc_version(fd, &v));
	if (v.features & NXQ_FEAT_CHARGE_WAIT) {
		fill(C_CHARGE, p);
		ch->flags = NXQ_CHARGE_WAIT;
		TRY("WAIT without a timeout", C_CHARGE, p, EINVAL);
	}
	fill(C_UNCHARGE, p);
	ch->timeout_ns = 1;
	TRY("timeout on uncharge", C_UNCHARGE, p, EINVAL);
}

TEST_F(bad_ioctl, unknown_commands)
{
	static const struct {
		const char *what;
		unsigned long nr;
	} bad[] = {
		{ "nr 0x3f", _IOWR(NXQ_IOC_MAGIC, 0x3f, struct nxq_status) },
		{ "nr 0xff", _IOWR(NXQ_IOC_MAGIC, 0xff, struct nxq_status) },
		{ "nr 0x80", _IOW(NXQ_IOC_MAGIC, 0x80, struct nxq_charge) },
		{ "VERSION as _IO", _IO(NXQ_IOC_MAGIC, 0x00) },
		{ "VERSION as _IOR", _IOR(NXQ_IOC_MAGIC, 0x00, struct nxq_version) },
		{ "VERSION as _IOW", _IOW(NXQ_IOC_MAGIC, 0x00, struct nxq_version) },
		{ "CHARGE as _IOW", _IOW(NXQ_IOC_MAGIC, 0x03, struct nxq_charge) },
		{ "UNREGISTER as _IOWR",
		  _IOWR(NXQ_IOC_MAGIC, 0x02, struct nxq_holder_id) },
		{ "other magic", _IOWR(NXQ_IOC_MAGIC + 1, 0x00, struct nxq_version) },
		{ "TCGETS", 0x5401 },
		{ "zero", 0 },
	};
	struct fp before;
	size_t i;
	long rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill(C_STATUS, mem);
		before = fingerprint();
		rc = sc_ioctl(fd, bad[i].nr, mem);
		if (rc != -ENOTTY)
			FAIL("ioctl %s (%#lx): expected ENOTTY, got %s",
			     bad[i].what, bad[i].nr, sc_rcname(rc));
		same_at(__FILE__, __LINE__, bad[i].what, before);
	}
}

TEST_F(bad_ioctl, holder_ids)
{
	uint64_t gone = 0, other = 0;
	unsigned char *p = mem;
	int c;
	size_t i;

	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &gone));
	CHECK_OK(sc_unregister(fd, gone));
	CHECK_ERR(sc_unregister(fd, gone), ENOENT);
	/* Ids may be per file: find one of fd2's that fd does not use. */
	for (i = 0; i < 8 && (!other || other == h || other == spare ||
			      other == gone); i++)
		CHECK_OK(sc_register(fd2, KEY, SC_EFD, 0, &other));
	CHECK(other != h && other != spare && other != gone);
	{
		const uint64_t ids[] = { 0, gone, other, h + 100000, U64MAX,
					 1ULL << 63 };
		const char *names[] = { "id 0", "unregistered id",
					"another file's id", "unused id",
					"id 2^64-1", "id 2^63" };

		for (c = 0; c < ncmd; c++) {
			if (!cmds[c].has_holder)
				continue;
			for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
				if (ids[i] == h || ids[i] == spare)
					continue;
				fill(c, p);
				set_holder(p, ids[i]);
				TRY(names[i], c, p, ENOENT);
			}
		}
	}
	/* The other file's holder is fine on its own file. */
	CHECK_OK(sc_charge(fd2, other, 1, NULL));
	CHECK_OK(sc_close(fd2));
	fd2 = -1;
}

TEST_F(bad_ioctl, byte_counts)
{
	struct nxq_charge *ch = (void *)mem;
	struct nxq_reclaimable *r = (void *)mem;
	struct nxq_status st;
	uint64_t hh = 0, hh2 = 0, c = 0;
	int fdh;

	fill(C_CHARGE, mem);
	ch->bytes = 0;
	TRY("0 bytes", C_CHARGE, mem, EINVAL);
	fill(C_UNCHARGE, mem);
	ch->bytes = 0;
	TRY("0 bytes", C_UNCHARGE, mem, EINVAL);
	fill(C_UNCHARGE, mem);
	ch->bytes = BASE + 1;
	TRY("more than charged", C_UNCHARGE, mem, EINVAL);
	fill(C_UNCHARGE, mem);
	ch->bytes = U64MAX;
	TRY("2^64-1 bytes", C_UNCHARGE, mem, EINVAL);
	fill(C_CHARGE, mem);
	ch->bytes = 1ULL << 63;
	TRY("2^63 bytes", C_CHARGE, mem, ENOSPC);
	/* Charged + bytes overflows 64 bits: refused, whichever errno. */
	fill(C_CHARGE, mem);
	ch->bytes = U64MAX;
	{
		struct fp before = fingerprint();
		long rc = sc_ioctl(fd, NXQ_IOC_CHARGE, mem);

		if (rc != -ENOSPC && rc != -EOVERFLOW)
			FAIL("CHARGE 2^64-1 bytes on top of %llu: expected "
			     "ENOSPC or EOVERFLOW, got %s",
			     (unsigned long long)BASE, sc_rcname(rc));
		same_at(__FILE__, __LINE__, "CHARGE 2^64-1 bytes", before);
	}
	fill(C_RECLAIMABLE, mem);
	r->bytes = BASE + 1;
	TRY("more than charged", C_RECLAIMABLE, mem, EINVAL);
	fill(C_RECLAIMABLE, mem);
	r->bytes = U64MAX;
	TRY("2^64-1", C_RECLAIMABLE, mem, EINVAL);
	fill(C_RECLAIMABLE, mem);
	r->bytes = BASE;
	TRY("all of it", C_RECLAIMABLE, mem, 0);

	/* A device of 2^64-1 bytes: fill it to the last byte, exactly. */
	CHECK_OK(sc_dev_register_open(HUGE, "18446744073709551615"));
	CHECK_EQ(DEV_U64(HUGE, "capacity"), U64MAX);
	fdh = sc_open();
	CHECK_OK(fdh);
	CHECK_OK(sc_register(fdh, HUGE, SC_EFD, 0, &hh));
	CHECK_OK(sc_register(fdh, HUGE, SC_EFD, 0, &hh2));
	CHECK_OK(sc_charge(fdh, hh, U64MAX - 10, &c));
	CHECK_EQ(c, U64MAX - 10);
	CHECK_ERR2(sc_charge(fdh, hh, 11, &c), ENOSPC, EOVERFLOW);
	CHECK_ERR2(sc_charge(fdh, hh2, 11, &c), ENOSPC, EOVERFLOW);
	CHECK_ERR2(sc_charge(fdh, hh2, U64MAX, &c), ENOSPC, EOVERFLOW);
	CHECK_OK(sc_charge(fdh, hh2, 10, &c));
	CHECK_EQ(c, 10);
	CHECK_EQ(DEV_U64(HUGE, "used"), U64MAX);
	CHECK_EQ(NODE_U64(HUGE, CG_ROOT_ID, "current"), U64MAX);
	CHECK_ERR2(sc_charge(fdh, hh2, 1, &c), ENOSPC, EOVERFLOW);
	CHECK_OK(sc_status(fdh, hh, &st));
	CHECK_EQ(st.holder_charge, U64MAX - 10);
	CHECK_EQ(st.device_used, U64MAX);
	CHECK_EQ(st.node_current, U64MAX);
	CHECK_EQ(st.headroom, 0);
	CHECK_OK(sc_set_reclaimable(fdh, hh, U64MAX - 10));
	CHECK_OK(sc_uncharge(fdh, hh, U64MAX - 10, &c));
	CHECK_EQ(c, 0);
	CHECK_OK(sc_status(fdh, hh, &st));
	CHECK_EQ(st.holder_reclaimable, 0);	/* lowered with the charge */
	CHECK_EQ(st.headroom, U64MAX - 10);
	CHECK_EQ(DEV_U64(HUGE, "used"), 10);
	CHECK_OK(sc_close(fdh));
	CHECK_EQ(DEV_U64(HUGE, "used"), 0);
	CHECK_OK(sc_dev_unregister(HUGE));
}

TEST_F(bad_ioctl, eventfds)
{
	struct nxq_holder_reg *r = (void *)mem;
	int efd, pfd[2], closed;

	efd = eventfd(0, EFD_CLOEXEC);
	CHECK(efd >= 0);
	CHECK(pipe(pfd) == 0);
	closed = dup(efd);
	CHECK(closed >= 0);
	close(closed);

	fill(C_REGISTER, mem);
	r->eventfd = efd;
	TRY("eventfd", C_REGISTER, mem, 0);
	fill(C_REGISTER, mem);
	r->eventfd = closed;
	TRY("closed fd as eventfd", C_REGISTER, mem, EBADF);
	fill(C_REGISTER, mem);
	r->eventfd = -2;
	TRY("fd -2", C_REGISTER, mem, EBADF);
	fill(C_REGISTER, mem);
	r->eventfd = INT_MAX;
	TRY("fd INT_MAX", C_REGISTER, mem, EBADF);
	fill(C_REGISTER, mem);
	r->eventfd = pfd[0];
	TRY("pipe as eventfd", C_REGISTER, mem, EINVAL);
	fill(C_REGISTER, mem);
	r->eventfd = fd;
	TRY("/dev/nxquota as eventfd", C_REGISTER, mem, EINVAL);
	close(efd);
	close(pfd[0]);
	close(pfd[1]);
}

TEST_F(bad_ioctl, keys_and_priorities)
{
	struct nxq_holder_reg *r = (void *)mem;

	fill(C_REGISTER, mem);
	strcpy(r->device, "t-no-such-device");
	TRY("unknown device", C_REGISTER, mem, ENODEV);
	fill(C_REGISTER, mem);
	strcpy(r->device, KEY "x");
	TRY("key with a suffix", C_REGISTER, mem, ENODEV);
	fill(C_REGISTER, mem);
	r->device[0] = 0;
	TRY("empty key", C_REGISTER, mem, EINVAL);
	fill(C_REGISTER, mem);
	memset(r->device, 'a', sizeof(r->device));
	TRY("key without NUL", C_REGISTER, mem, EINVAL);
	fill(C_REGISTER, mem);
	memcpy(r->device, KEY, strlen(KEY));	/* NUL-less tail after KEY */
	memset(r->device + strlen(KEY), 'x', sizeof(r->device) - strlen(KEY));
	TRY("KEY and no NUL", C_REGISTER, mem, EINVAL);
	fill(C_REGISTER, mem);
	r->priority = 1;
	TRY("priority above the cgroup's priority_max (0)", C_REGISTER, mem,
	    EPERM);
	CHECK_OK(sc_set_budget(KEY, "/ priority_max=1000"));
	fill(C_REGISTER, mem);
	r->priority = NXQ_PRIORITY_MAX;
	TRY("priority max", C_REGISTER, mem, 0);
	CHECK_OK(sc_clear_budget(KEY, "/"));
	fill(C_REGISTER, mem);
	r->priority = NXQ_PRIORITY_MAX + 1;
	TRY("priority max+1", C_REGISTER, mem, EINVAL);
	fill(C_REGISTER, mem);
	r->priority = UINT32_MAX;
	TRY("priority 2^32-1", C_REGISTER, mem, EINVAL);
}

TEST_F(bad_ioctl, pointers)
{
	unsigned char *edge = mem + 2 * PAGE - 8;	/* 8 bytes before PROT_NONE */
	struct fp before;
	int c;
	long rc;

	for (c = 0; c < ncmd; c++) {
		before = fingerprint();
		rc = sc_ioctl(fd, cmds[c].nr, NULL);
		if (rc != -EFAULT)
			FAIL("%s (NULL): expected EFAULT, got %s", cmds[c].name,
			     sc_rcname(rc));
		rc = sc_ioctl(fd, cmds[c].nr, (void *)1);
		if (rc != -EFAULT)
			FAIL("%s (address 1): expected EFAULT, got %s",
			     cmds[c].name, sc_rcname(rc));
		/* size readable, the rest of the struct is not */
		memset(edge, 0, 8);
		set_size(edge, cmds[c].ver0);
		rc = sc_ioctl(fd, cmds[c].nr, edge);
		if (rc != -EFAULT)
			FAIL("%s (struct across a PROT_NONE page): expected "
			     "EFAULT, got %s", cmds[c].name, sc_rcname(rc));
		same_at(__FILE__, __LINE__, cmds[c].name, before);
	}
}

TEST_F(bad_ioctl, too_many_holders)
{
	uint64_t before = DEV_U64(KEY, "holders"), id = 0;
	int f = sc_open(), i;
	long rc;

	CHECK_OK(f);
	for (i = 0; i < 4096; i++) {
		rc = sc_register(f, KEY, SC_EFD, 0, &id);
		if (rc < 0)
			FAIL("holder %d of 4096 on one file: %s", i + 1,
			     sc_errname(-rc));
	}
	CHECK_EQ(DEV_U64(KEY, "holders"), before + 4096);
	CHECK_ERR(sc_register(f, KEY, SC_EFD, 0, &id), EMFILE);
	CHECK_EQ(DEV_U64(KEY, "holders"), before + 4096);
	CHECK_OK(sc_charge(f, id, 1, NULL));
	CHECK_OK(sc_unregister(f, id));
	CHECK_OK(sc_register(f, KEY, SC_EFD, 0, &id));
	CHECK_OK(sc_close(f));
	CHECK_EQ(DEV_U64(KEY, "holders"), before);
}

TEST_F(bad_ioctl, readonly_args)
{
	struct fp before;
	char what[96];
	int c;
	long rc;

	/*
	 * Read-only memory: the commands that write results back must fail
	 * with EFAULT, and change nothing ("every failing call changes
	 * nothing"); the two that write nothing back must work.
	 */
	for (c = 0; c < ncmd; c++) {
		int writes_back = c != C_UNREGISTER && c != C_RECLAIMABLE;

		if (c == C_TICKET_READ)
			continue;	/* no ticket: EAGAIN before any write */
		fill(c, mem);
		before = fingerprint();
		CHECK(mprotect(mem, PAGE, PROT_READ) == 0);
		rc = sc_ioctl(fd, cmds[c].nr, mem);
		CHECK(mprotect(mem, PAGE, PROT_READ | PROT_WRITE) == 0);
		if (writes_back && rc != -EFAULT)
			FAIL("%s (read-only argument): expected EFAULT, got %s",
			     cmds[c].name, sc_rcname(rc));
		if (!writes_back && rc < 0)
			FAIL("%s (read-only argument): %s, expected success",
			     cmds[c].name, sc_errname(-rc));
		if (!writes_back)
			undo(c, mem);
		snprintf(what, sizeof(what), "%s (read-only argument, %s)",
			 cmds[c].name, sc_rcname(rc));
		same_at(__FILE__, __LINE__, what, before);
	}
}

TEST_HARNESS_MAIN
