/* One open launch at a time: see launch_serial.h. */
#include "launch_serial.h"

#include <pthread.h>
#include <time.h>

static pthread_mutex_t launch_serial = PTHREAD_MUTEX_INITIALIZER;
static __thread int held;

int wrr_launch_serial_take(void)
{
    if (held)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WRR_LAUNCH_SERIAL_WAIT_S;
    if (pthread_mutex_timedlock(&launch_serial, &until) != 0)
        return -1;
    held = 1;
    return 0;
}

void wrr_launch_serial_release(void)
{
    if (held) {
        held = 0;
        pthread_mutex_unlock(&launch_serial);
    }
}
