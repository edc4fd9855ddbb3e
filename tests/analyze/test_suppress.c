/* Suppression files (analyzer/suppress.h): what a rule matches, and that a
 * bad line is refused with the file and line named. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suppress.h"

static wr_suppressions *parse(const char *text, char *err, size_t errlen)
{
    return wr_suppressions_parse("s.supp", text, strlen(text), err, errlen);
}

Test(suppress, rules_comments_and_blanks)
{
    char err[256] = "";
    wr_suppressions *s = parse("# a comment\n\n  site:*thrust*  \r\n\tkernel:reduce_*\n"
                               "   # another\nrace:*benign*", err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(wr_suppressions_count(s), 3);
    unsigned line;
    cr_expect_str_eq(wr_suppressions_rule(s, 0, &line), "site:*thrust*");
    cr_expect_eq(line, 3);
    cr_expect_str_eq(wr_suppressions_rule(s, 1, &line), "kernel:reduce_*");
    cr_expect_eq(line, 4);
    cr_expect_str_eq(wr_suppressions_rule(s, 2, &line), "race:*benign*");
    cr_expect_eq(line, 6);
    cr_expect_null(wr_suppressions_rule(s, 3, &line));
    wr_suppressions_free(s);
}

Test(suppress, what_each_kind_of_rule_matches)
{
    char err[256] = "";
    wr_suppressions *s = parse("kernel:reduce_*\nsite:*/thrust/*\nrace:*benign*\n", err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    /* kernel: either side's kernel, the whole name */
    cr_expect_eq(wr_suppressions_match(s, "reduce_sum", "other", "a.cu:1:f", "a.cu:2:f"), 0);
    cr_expect_eq(wr_suppressions_match(s, "other", "reduce_max", "a.cu:1:f", "a.cu:2:f"), 0);
    cr_expect_eq(wr_suppressions_match(s, "my_reduce_sum", "x", "a.cu:1:f", "a.cu:2:f"), -1);
    /* a kernel: rule does not look at sites */
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "reduce_sum", "a.cu:2:f"), -1);
    /* site: either side's site; '*' also crosses '/' */
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "a.cu:1:f", "/usr/include/thrust/detail/x.h:9:g"), 1);
    cr_expect_eq(wr_suppressions_match(s, "thrust", "k", "a.cu:1:f", "a.cu:2:f"), -1);
    /* race: kernel or site */
    cr_expect_eq(wr_suppressions_match(s, "benign_init", "k", "a.cu:1:f", "a.cu:2:f"), 2);
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "a.cu:1:f", "a.cu:7:benign_flag"), 2);
    /* missing names match nothing; an unknown site is "?" */
    cr_expect_eq(wr_suppressions_match(s, NULL, NULL, NULL, NULL), -1);
    cr_expect_eq(wr_suppressions_match(NULL, "reduce_sum", "k", "a", "b"), -1);
    wr_suppressions_free(s);
    s = parse("site:?\nkernel:host\n", err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "a.cu:1:f", "?"), 0, "a side whose site is unknown");
    cr_expect_eq(wr_suppressions_match(s, "k", "host", "a.cu:1:f", "a.cu:2:f"), 1, "a host copy");
    wr_suppressions_free(s);
}

Test(suppress, the_first_matching_rule_wins)
{
    char err[256] = "";
    wr_suppressions *s = parse("site:a.cu:*\nsite:*:f\n", err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "b.cu:1:f", "a.cu:2:g"), 0);
    cr_expect_eq(wr_suppressions_match(s, "k", "k", "b.cu:1:f", "c.cu:2:g"), 1);
    wr_suppressions_free(s);
}

/* Each bad file, and the message it must give: file, line, why. */
Test(suppress, bad_lines_are_refused_with_their_line)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"site:ok\nfoo bar\n", "s.supp:2: 'foo bar' is not a rule"},
        {"kernel:\n", "s.supp:1: 'kernel:' has an empty pattern"},
        {"# c\n\nsites:x\n", "s.supp:3: 'sites:x' is not a rule"},
        {"Site:x\n", "s.supp:1: 'Site:x' is not a rule"},
        {":x\n", "s.supp:1: ':x' is not a rule"},
        {"site:a\0b\n", "s.supp:1: a NUL byte in the line"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        size_t len = strlen(bad[i].text);
        if (i == 5)
            len = 9;
        wr_suppressions *s = wr_suppressions_parse("s.supp", bad[i].text, len, err, sizeof err);
        cr_expect_null(s, "case %zu parsed", i);
        cr_expect(!strncmp(err, bad[i].msg, strlen(bad[i].msg)), "case %zu: '%s'", i, err);
        wr_suppressions_free(s);
    }
}

Test(suppress, load_names_the_file)
{
    char err[256] = "";
    cr_expect_null(wr_suppressions_load("/nonexistent/x.supp", err, sizeof err));
    cr_expect(strstr(err, "/nonexistent/x.supp: cannot open the suppressions"), "%s", err);
    err[0] = '\0';
    cr_expect_null(wr_suppressions_load("/", err, sizeof err));
    cr_expect(!strncmp(err, "/: ", 3), "a directory: %s", err);
    char path[] = "/tmp/wr-supp-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char text[] = "# ok\nkernel:k*\nrace:\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    err[0] = '\0';
    cr_expect_null(wr_suppressions_load(path, err, sizeof err));
    char want[64];
    snprintf(want, sizeof want, "%s:3: 'race:' has an empty pattern", path);
    cr_expect_str_eq(err, want);
    unlink(path);
}
