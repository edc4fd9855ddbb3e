/* handle_ids: the ids a trace names streams and events by (FORMAT.md,
 * "Stream ids"). */
#include <criterion/criterion.h>
#include <pthread.h>

#include "handle_ids.h"
#include "warprace/event.h"

/* Streams at these addresses report their flags: 0x100 non-blocking, 0x200
 * blocking, 0x300 a failure; every call is counted. */
static unsigned flag_calls;

static int fake_flags(void *stream, unsigned *flags)
{
    flag_calls++;
    if (stream == (void *)0x300)
        return -1;
    *flags = stream == (void *)0x100 ? WRR_STREAM_FLAG_NON_BLOCKING : 0;
    return 0;
}

Test(handle_ids, legacy_blocking_and_non_blocking_streams)
{
    wrr_handle_ids t = {0};
    flag_calls = 0;
    cr_assert_eq(wrr_stream_id(&t, NULL, fake_flags), WR_STREAM_LEGACY);
    cr_assert_eq(wrr_stream_id(&t, WRR_STREAM_HANDLE_LEGACY, fake_flags), WR_STREAM_LEGACY,
                 "CU_STREAM_LEGACY is the legacy default stream");
    cr_assert_eq(flag_calls, 0);
    uint32_t nb = wrr_stream_id(&t, (void *)0x100, fake_flags);
    cr_assert_eq(nb, WR_STREAM_NON_BLOCKING | 1);
    cr_assert_eq(wrr_stream_id(&t, (void *)0x200, fake_flags), 2, "blocking: no mark");
    cr_assert_eq(wrr_stream_id(&t, (void *)0x300, fake_flags), 3, "flags unknown: taken for blocking");
    uint32_t pt = wrr_stream_id(&t, WRR_STREAM_HANDLE_PER_THREAD, fake_flags);
    cr_assert_eq(pt, 4, "the per-thread default stream is a blocking stream of its own");
    cr_assert_eq(flag_calls, 3, "no flags asked of the per-thread handle");
    cr_assert_eq(wrr_stream_id(&t, (void *)0x100, fake_flags), nb, "a handle keeps its id");
    cr_assert_eq(flag_calls, 3, "and its flags are asked once");
    cr_assert_eq(wrr_event_id(&t, (void *)0x100), 1, "events are numbered apart");
    cr_assert_eq(wrr_event_id(&t, (void *)0x500), 2);
    cr_assert_eq(wrr_event_id(&t, (void *)0x500), 2);
    wrr_handle_ids_free(&t);
    cr_assert_eq(t.n, 0);
}

Test(handle_ids, many_handles_and_no_flags_function)
{
    wrr_handle_ids t = {0};
    for (uintptr_t h = 1; h <= 1000; h++)
        cr_assert_eq(wrr_stream_id(&t, (void *)(h << 4), NULL), h, "stream %zu", (size_t)h);
    for (uintptr_t h = 1000; h >= 1; h--)
        cr_assert_eq(wrr_stream_id(&t, (void *)(h << 4), NULL), h);
    wrr_handle_ids_free(&t);
}

/* The recorder's own ids (a graph node's stream and event) never take a
 * program handle's, and its streams are non-blocking. */
Test(handle_ids, ids_of_no_handle_are_new_and_non_blocking)
{
    wrr_handle_ids t = {0};
    uint32_t a = wrr_stream_id(&t, (void *)0x10, NULL);
    uint32_t own = wrr_new_stream_id(&t);
    cr_assert_neq(own & ~WR_STREAM_NON_BLOCKING, a);
    cr_assert(own & WR_STREAM_NON_BLOCKING);
    uint32_t b = wrr_stream_id(&t, (void *)0x20, NULL);
    cr_assert_neq(b & ~WR_STREAM_NON_BLOCKING, own & ~WR_STREAM_NON_BLOCKING);
    uint32_t e = wrr_event_id(&t, (void *)0x10), f = wrr_new_event_id(&t);
    cr_assert_neq(e, f);
    cr_assert_neq(wrr_event_id(&t, (void *)0x30), f);
    wrr_handle_ids_free(&t);
}

/* Each host thread's default stream is a blocking stream of its own, kept
 * apart from program handles with the same value. */
Test(handle_ids, each_threads_default_stream_is_its_own)
{
    wrr_handle_ids t = {0};
    uint32_t a = wrr_stream_id_of_thread(&t, 1), b = wrr_stream_id_of_thread(&t, 2);
    cr_assert_neq(a, b);
    cr_assert_eq(a & WR_STREAM_NON_BLOCKING, 0, "blocking");
    cr_assert_neq(a, WR_STREAM_LEGACY);
    cr_assert_eq(wrr_stream_id_of_thread(&t, 1), a, "a thread keeps its stream");
    uint32_t h = wrr_stream_id(&t, (void *)(uintptr_t)1, NULL);
    cr_assert_neq(h, a, "a stream handle of value 1 is another stream");
    wrr_handle_ids_free(&t);
}

static void *ask_number(void *out)
{
    *(uint64_t *)out = wrr_host_thread_number();
    return NULL;
}

/* A thread keeps its number; another thread has another. */
Test(handle_ids, host_threads_are_numbered_apart)
{
    uint64_t mine = wrr_host_thread_number(), other = 0;
    cr_assert_neq(mine, 0);
    cr_assert_eq(wrr_host_thread_number(), mine);
    pthread_t t;
    pthread_create(&t, NULL, ask_number, &other);
    pthread_join(t, NULL);
    cr_assert_neq(other, 0);
    cr_assert_neq(other, mine);
}
