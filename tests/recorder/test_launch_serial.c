/* The launch serialization lock (recorder/launch_serial.h): one open launch
 * at a time across host threads, a missing end never hangs the next. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "launch_serial.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct other {
    double wait;          /* how long it may wait */
    int rc;
    double waited;
    atomic_int holding;   /* it holds the lock now */
    atomic_int release;   /* main asks it to let go */
} other;

static void *other_launch(void *arg)
{
    other *o = arg;
    double t0 = now_s();
    o->rc = wrr_launch_serial_take_within(o->wait);
    o->waited = now_s() - t0;
    if (o->rc == 0) {
        atomic_store(&o->holding, 1);
        while (!atomic_load(&o->release))
            sched_yield();
        wrr_launch_serial_release();
        atomic_store(&o->holding, 0);
    }
    return NULL;
}

Test(launch_serial, a_second_thread_waits_for_the_open_launchs_end)
{
    cr_assert_eq(wrr_launch_serial_take(), 0);
    cr_assert_eq(wrr_launch_serial_take(), 0, "the holder's next launch goes on (its end never came)");
    other o = {.wait = 10};
    atomic_init(&o.holding, 0);
    atomic_init(&o.release, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_launch, &o), 0);
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
    cr_assert_eq(atomic_load(&o.holding), 0, "the other thread's launch waits");
    wrr_launch_serial_release();
    pthread_join(t, NULL);
    cr_assert_eq(o.rc, 0);
    cr_assert_geq(o.waited, 0.04, "it waited for the end (%.3f s)", o.waited);
}

Test(launch_serial, a_missing_end_costs_a_bounded_wait)
{
    cr_assert_eq(wrr_launch_serial_take(), 0);
    other o = {.wait = 0.2};
    atomic_init(&o.holding, 0);
    atomic_init(&o.release, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_launch, &o), 0);
    pthread_join(t, NULL);
    cr_assert_eq(o.rc, -1, "it gives up, unserialized, rather than hang");
    cr_assert(o.waited >= 0.15 && o.waited < 5, "%.3f s", o.waited);
    wrr_launch_serial_release();
    /* released: the lock is free for the next launch, from any thread */
    other next = {.wait = 10};
    atomic_init(&next.holding, 0);
    atomic_init(&next.release, 1);
    cr_assert_eq(pthread_create(&t, NULL, other_launch, &next), 0);
    pthread_join(t, NULL);
    cr_assert_eq(next.rc, 0);
}

Test(launch_serial, releasing_what_one_does_not_hold_changes_nothing)
{
    wrr_launch_serial_release();   /* not held: a no-op */
    other o = {.wait = 10};
    atomic_init(&o.holding, 0);
    atomic_init(&o.release, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_launch, &o), 0);
    while (!atomic_load(&o.holding))
        sched_yield();
    wrr_launch_serial_release();   /* held by the other thread: not ours to release */
    cr_assert_eq(wrr_launch_serial_take_within(0.1), -1, "the other thread still holds it");
    atomic_store(&o.release, 1);
    pthread_join(t, NULL);
    cr_assert_eq(wrr_launch_serial_take_within(1), 0);
    wrr_launch_serial_release();
}
