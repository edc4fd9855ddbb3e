/* One open launch at a time: see launch_serial.h. */
#include "launch_serial.h"

#include <pthread.h>
#include <time.h>

static pthread_mutex_t launch_serial = PTHREAD_MUTEX_INITIALIZER;
static __thread int held;

int wrr_launch_serial_take_within(double seconds)
{
    if (held)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)((seconds - (double)(long long)seconds) * 1e9);
    until.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000);
    until.tv_nsec = (long)(ns % 1000000000);
    if (pthread_mutex_timedlock(&launch_serial, &until) != 0)
        return -1;
    held = 1;
    return 0;
}

int wrr_launch_serial_take(void)
{
    return wrr_launch_serial_take_within(WRR_LAUNCH_SERIAL_WAIT_S);
}

void wrr_launch_serial_release(void)
{
    if (held) {
        held = 0;
        pthread_mutex_unlock(&launch_serial);
    }
}
