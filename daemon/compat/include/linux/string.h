/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/string.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_STRING_H
#define _UK_LINUX_STRING_H
#include <uk/uk.h>
#endif
