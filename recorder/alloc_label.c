/* See alloc_label.h. */
#include "alloc_label.h"

#include <stdio.h>
#include <stdlib.h>

const char *wrr_take_alloc_label(char *buf, size_t cap, const char *fallback)
{
    const char *given = getenv(WRR_ALLOC_LABEL_ENV);
    if (!given || !*given || !cap)
        return fallback;
    snprintf(buf, cap, "%s", given);
    unsetenv(WRR_ALLOC_LABEL_ENV);
    return buf;
}
