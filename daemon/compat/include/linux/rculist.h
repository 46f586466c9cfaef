/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/rculist.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_RCULIST_H
#define _UK_LINUX_RCULIST_H
#include <uk/uk.h>
#endif
