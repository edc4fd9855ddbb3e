/* host_site: which frame of a CUDA callback's stack is the program's call
 * site, and what names it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_fake_runtime.h"
#include "host_site.h"

typedef struct probe {
    wrr_host_sites *hs;
    wrr_host_site *site;
    const char *kernel;   /* what a launch callback says is launched */
} probe;

/* In the program but above the CUDA library frame: a recorder callback. */
static void recorder_callback(void *ctx)
{
    probe *p = ctx;
    p->site = wrr_host_site_here(p->hs);
}

static volatile int sink;

/* The program's copy of the CUDA runtime (libcudart_static) by its name. */
__attribute__((noinline)) static void cudaMemcpyLookalike(probe *p)
{
    sink += cufake_call(recorder_callback, p);
}

static int copy_line;

__attribute__((noinline)) static void program_copies(probe *p)
{
    copy_line = __LINE__ + 1;
    cudaMemcpyLookalike(p);
    sink++;
}

__attribute__((noinline)) static void program_copies_elsewhere(probe *p)
{
    cudaMemcpyLookalike(p);
    sink++;
}

static int direct_line;

/* The CUDA library called with no runtime function between. */
__attribute__((noinline)) static void program_calls_the_library(probe *p)
{
    direct_line = __LINE__ + 1;
    sink += cufake_call(recorder_callback, p);
    sink++;
}

static int header_line;

/* A runtime header's inline wrapper, inlined here. */
__attribute__((noinline)) static void program_copies_through_a_header(probe *p)
{
    header_line = __LINE__ + 1;
    sink += copy_through_the_header(recorder_callback, p);
    sink++;
}

/* A launch: <<<>>> calls the host function nvcc generates under the
 * kernel's name, which calls its __device_stub_, which calls the runtime. */
static void launch_callback(void *ctx)
{
    probe *p = ctx;
    p->site = wrr_host_site_launching(p->hs, p->kernel);
}

__attribute__((noinline)) static void __device_stub_saxpy_kernel(probe *p)
{
    sink += cufake_call(launch_callback, p);
}

__attribute__((noinline)) static void saxpy_kernel(probe *p)
{
    __device_stub_saxpy_kernel(p);
    sink++;
}

static inline __attribute__((always_inline)) void axpy_kernel(probe *p)
{
    __device_stub_saxpy_kernel(p);
}

static int launch_line, inlined_launch_line;

__attribute__((noinline)) static void program_launches(probe *p)
{
    launch_line = __LINE__ + 1;
    saxpy_kernel(p);
    sink++;
}

__attribute__((noinline)) static void program_launches_inlined_wrapper(probe *p)
{
    inlined_launch_line = __LINE__ + 1;
    axpy_kernel(p);
    sink++;
}

static wrr_host_sites *sites_with(const char *addr2line)
{
    if (addr2line)
        setenv("WARPRACE_ADDR2LINE", addr2line, 1);
    else
        unsetenv("WARPRACE_ADDR2LINE");
    wrr_host_sites *hs = wrr_host_sites_new();
    cr_assert_not_null(hs);
    return hs;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

Test(host_site, names_the_programs_line_past_the_library_and_runtime_frames)
{
    probe p = {sites_with(NULL), NULL, NULL};
    program_copies(&p);
    cr_assert_not_null(p.site);
    cr_expect_str_eq(base_name(p.site->file), "test_host_site.c");
    /* meson compiles ../tests/...: the debug information says
     * BUILD/../tests/..., the site the path without the detour */
    cr_expect_eq(p.site->file[0], '/', "%s", p.site->file);
    cr_expect_null(strstr(p.site->file, "/../"), "%s", p.site->file);
    cr_expect_null(strstr(p.site->file, "/./"), "%s", p.site->file);
    size_t n = strlen(p.site->file), tail = strlen("/tests/recorder/test_host_site.c");
    cr_expect(n > tail && !strcmp(p.site->file + n - tail, "/tests/recorder/test_host_site.c"),
              "%s", p.site->file);
    cr_expect_eq(p.site->line, (uint32_t)copy_line);
    cr_expect_str_eq(p.site->function, "program_copies");
    cr_expect_str_eq(p.site->module, "test_recorder");
    cr_expect_neq(p.site->pc, 0);
    cr_expect_eq(wrr_host_sites_resolver_failures(p.hs), 0);
    wrr_host_sites_free(p.hs);
}

Test(host_site, a_runtime_headers_inlined_wrapper_is_not_the_site)
{
    probe p = {sites_with(NULL), NULL, NULL};
    program_copies_through_a_header(&p);
    cr_assert_not_null(p.site);
    cr_expect_str_eq(base_name(p.site->file), "test_host_site.c");
    cr_expect_eq(p.site->line, (uint32_t)header_line);
    wrr_host_sites_free(p.hs);
}

Test(host_site, a_launch_is_named_past_the_kernels_wrapper_and_stub)
{
    probe p = {sites_with(NULL), NULL, "saxpy_kernel"};
    program_launches(&p);
    cr_assert_not_null(p.site);
    cr_expect_str_eq(p.site->function, "program_launches");
    cr_expect_eq(p.site->line, (uint32_t)launch_line);
    wrr_host_sites_free(p.hs);
}

Test(host_site, a_launch_through_an_inlined_wrapper_is_named_past_it)
{
    probe p = {sites_with(NULL), NULL, "axpy_kernel"};
    program_launches_inlined_wrapper(&p);
    cr_assert_not_null(p.site);
    cr_expect_eq(p.site->line, (uint32_t)inlined_launch_line);
    wrr_host_sites_free(p.hs);
}

Test(host_site, one_call_site_is_one_site_and_another_is_another)
{
    probe p = {sites_with(NULL), NULL, NULL};
    program_copies(&p);
    wrr_host_site *first = p.site;
    first->site_id = 7;
    program_copies(&p);
    cr_expect_eq(p.site, first);
    cr_expect_eq(p.site->site_id, 7, "the caller's id stays with the site");
    program_copies_elsewhere(&p);
    cr_assert_not_null(p.site);
    cr_expect_neq(p.site, first);
    cr_expect_str_eq(p.site->function, "program_copies_elsewhere");
    cr_expect_neq(p.site->pc, first->pc);
    wrr_host_sites_free(p.hs);
}

Test(host_site, a_stack_without_a_cuda_library_has_no_site)
{
    wrr_host_sites *hs = sites_with(NULL);
    cr_expect_null(wrr_host_site_here(hs));
    void *frames[2] = {NULL, NULL};
    cr_expect_null(wrr_host_site_of(hs, frames, 2));
    cr_expect_null(wrr_host_site_of(NULL, frames, 2));
    wrr_host_sites_free(hs);
}

Test(host_site, without_addr2line_the_site_keeps_its_pc)
{
    probe named = {sites_with(NULL), NULL, NULL}, bare = {sites_with("none"), NULL, NULL};
    program_calls_the_library(&named);
    program_calls_the_library(&bare);
    cr_assert_not_null(named.site);
    cr_assert_not_null(bare.site);
    cr_expect_eq(named.site->line, (uint32_t)direct_line);
    cr_expect_eq(bare.site->pc, named.site->pc, "the pc does not depend on the names");
    cr_expect_str_eq(bare.site->file, "");
    cr_expect_eq(bare.site->line, 0);
    cr_expect_str_eq(bare.site->module, "test_recorder");
    cr_expect_eq(wrr_host_sites_resolver_failures(bare.hs), 0, "switched off is no failure");
    wrr_host_sites_free(named.hs);
    wrr_host_sites_free(bare.hs);
}

Test(host_site, switched_off_no_site_is_looked_up)
{
    setenv("WARPRACE_HOST_SITES", "0", 1);
    probe p = {sites_with(NULL), NULL, "saxpy_kernel"};
    unsetenv("WARPRACE_HOST_SITES");
    program_copies(&p);
    cr_expect_null(p.site);
    program_launches(&p);
    cr_expect_null(p.site);
    wrr_host_sites_free(p.hs);
}

Test(host_site, a_resolver_that_fails_is_counted_and_not_asked_again)
{
    /* starts, reads nothing, exits: every answer is missing */
    probe p = {sites_with("true"), NULL, NULL};
    program_calls_the_library(&p);
    cr_assert_not_null(p.site, "the site stands without names");
    cr_expect_str_eq(p.site->file, "");
    cr_expect_eq(wrr_host_sites_resolver_failures(p.hs), 1);
    program_copies_elsewhere(&p);
    cr_expect_eq(wrr_host_sites_resolver_failures(p.hs), 1);
    wrr_host_sites_free(p.hs);
    probe missing = {sites_with("/nonexistent/addr2line"), NULL, NULL};
    program_calls_the_library(&missing);
    cr_assert_not_null(missing.site);
    cr_expect_eq(wrr_host_sites_resolver_failures(missing.hs), 1);
    wrr_host_sites_free(missing.hs);
}
