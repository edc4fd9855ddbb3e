/* The allocation label both recording paths read (alloc_label.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_label.h"

Test(alloc_label, names_exactly_the_next_allocation)
{
    char buf[16];
    unsetenv(WRR_ALLOC_LABEL_ENV);
    cr_assert_str_eq(wrr_take_alloc_label(buf, sizeof buf, "cudaMalloc"), "cudaMalloc");
    cr_assert_null(wrr_take_alloc_label(buf, sizeof buf, NULL));

    setenv(WRR_ALLOC_LABEL_ENV, "data", 1);
    cr_assert_str_eq(wrr_take_alloc_label(buf, sizeof buf, "cudaMalloc"), "data");
    cr_assert_null(getenv(WRR_ALLOC_LABEL_ENV), "the label must be consumed");
    cr_assert_str_eq(wrr_take_alloc_label(buf, sizeof buf, "cudaMalloc"), "cudaMalloc");

    setenv(WRR_ALLOC_LABEL_ENV, "", 1);   /* empty: as if not given */
    cr_assert_str_eq(wrr_take_alloc_label(buf, sizeof buf, "managed"), "managed");
}

Test(alloc_label, a_long_label_is_cut_to_the_buffer)
{
    char buf[8];
    setenv(WRR_ALLOC_LABEL_ENV, "a_rather_long_label", 1);
    const char *got = wrr_take_alloc_label(buf, sizeof buf, "x");
    cr_assert_eq(got, buf);
    cr_assert_str_eq(got, "a_rathe");
    cr_assert_null(getenv(WRR_ALLOC_LABEL_ENV));
}
