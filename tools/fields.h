/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The budget table as the spec has it (NXQ_BUDGET_FIELDS, the uapi
 * header; fields.c): pure, no libnl, for nxquotactl and the hook alike.
 */
#ifndef NXQ_TOOLS_FIELDS_H
#define NXQ_TOOLS_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/nxquota.h>

/*
 * One field: name ("kill_on_ignore"; nxquotactl's words say
 * "kill-on-ignore"), netlink attribute, unit and parse (enum nxq_unit,
 * enum nxq_parse), who may set it (enum nxq_who), its enum nxq_limit or
 * -1, whether a node keeps it, its bounds and default.
 */
struct field_def {
	const char *name;
	int attr, unit, parse, who, lim;
	bool kept;
	uint64_t lo, hi, dflt;
};
extern const struct field_def field_defs[NXQ_NR_BUDGET_FIELDS];

/*
 * The device table likewise (NXQ_DEVICE_FIELDS): the same columns where
 * they fit (lim -1, kept true), and which of device-add and device-set
 * take it.  The dfield_* functions are the field_* ones for it.
 */
struct dfield_def {
	struct field_def d;
	bool add, set;
};
extern const struct dfield_def dfield_defs[NXQ_NR_DEVICE_FIELDS];

const char *dfield_word(int f, char *buf, size_t n);
/* The device field a word names ("default-max"); -1 for none. */
int dfield_of_name(const char *w);
const char *dfield_value_hint(int f);
int dfield_parse(int f, const char *val, uint64_t *v, char *why, size_t n);

/* A field's name as nxquotactl's words spell it ('-' for '_'), into buf. */
const char *field_word(int f, char *buf, size_t n);
/*
 * The field of a word: "kill-on-ignore=1" (*val: "1"), a flag's name
 * alone ("overcommit", *val NULL); -1 for none.
 */
int field_of_word(const char *w, const char **val);
/* What a field's value is written as in a usage line: "SIZE", "0|1",
 * "N", "MS"; NULL for a flag. */
const char *field_value_hint(int f);
/*
 * Read val as field f's parse says, within its bounds (a size's are the
 * ledger's): 0, or -EINVAL with why (n bytes) saying what was wrong.
 */
int field_parse(int f, const char *val, uint64_t *v, char *why, size_t n);
/* A value for people (NXQ_FMT_SIZE_LEN bytes): a size as status shows
 * it ("max" where the field reads it), else the number. */
const char *field_text(int f, uint64_t v, char *buf);
/* "NAME=VALUE" as nxquotactl reads it back (exact bytes, "max"), into buf. */
const char *field_arg(int f, uint64_t v, char *buf, size_t n);

#endif /* NXQ_TOOLS_FIELDS_H */
