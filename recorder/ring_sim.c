/* Host-memory ring with a C producer that mirrors device_logger.cuh. */
#include "ring_sim.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

int wrr_sim_init(wrr_sim *s, uint32_t log2cap, int drop_mode)
{
    memset(s, 0, sizeof *s);
    if (log2cap < WRR_MIN_LOG2_CAP || log2cap > 24)
        return -1;
    size_t words = (size_t)2 << log2cap;
    s->ring.slots = calloc(words, sizeof(uint64_t));
    s->ring.ctl = calloc(1, sizeof *s->ring.ctl);
    if (!s->ring.slots || !s->ring.ctl) {
        wrr_sim_free(s);
        return -1;
    }
    s->ring.log2cap = log2cap;
    s->dev.slots = s->ring.slots;
    s->dev.ctl = s->ring.ctl;
    s->dev.log2cap = log2cap;
    s->dev.flags = drop_mode ? WRR_F_DROP : 0;
    s->dev.enabled = 1;
    return 0;
}

void wrr_sim_free(wrr_sim *s)
{
    free(s->ring.slots);
    free(s->ring.ctl);
    s->ring.slots = NULL;
    s->ring.ctl = NULL;
}

static uint64_t fresh_tail(wrr_sim *s)
{
    uint64_t t = __atomic_load_n(&s->ring.ctl->tail, __ATOMIC_ACQUIRE);
    /* atomicMax(&dev.tail_cache, t) */
    unsigned long long c = __atomic_load_n(&s->dev.tail_cache, __ATOMIC_RELAXED);
    while (c < t && !__atomic_compare_exchange_n(&s->dev.tail_cache, &c, t, 0,
                                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return t;
}

uint64_t wrr_sim_reserve_only(wrr_sim *s, unsigned n)
{
    return __atomic_fetch_add(&s->dev.head, n, __ATOMIC_RELAXED);
}

void wrr_sim_commit_at(wrr_sim *s, uint64_t pos, const uint64_t *words)
{
    const uint64_t mask = (1ull << s->dev.log2cap) - 1;
    unsigned n = WRR_W0_NSLOTS(words[0]);
    for (unsigned k = 1; k < 2 * n; k++) {
        uint64_t j = (pos + k / 2) & mask;
        __atomic_store_n(&s->dev.slots[2 * j + (k & 1)], words[k], __ATOMIC_RELAXED);
    }
    /* __threadfence_system(); then the header with its commit tag */
    uint64_t w0 = (words[0] & ~0xffffffffull) | WRR_TAG(pos, s->dev.log2cap);
    __atomic_store_n(&s->dev.slots[2 * (pos & mask)], w0, __ATOMIC_RELEASE);
}

int wrr_sim_write(wrr_sim *s, const uint64_t *words, unsigned lanes, uint64_t spin_limit)
{
    const uint64_t cap = 1ull << s->dev.log2cap;
    unsigned n = WRR_W0_NSLOTS(words[0]);
    uint64_t pos;
    if (s->dev.flags & WRR_F_DROP) {
        /* CAS loop: reserve only if the record fits now */
        unsigned long long h = __atomic_load_n(&s->dev.head, __ATOMIC_RELAXED);
        for (;;) {
            uint64_t t = __atomic_load_n(&s->dev.tail_cache, __ATOMIC_RELAXED);
            if (h + n - t > cap) {
                t = fresh_tail(s);
                if (h + n - t > cap) {
                    __atomic_fetch_add(&s->ring.ctl->dropped_records, 1, __ATOMIC_RELEASE);
                    __atomic_fetch_add(&s->ring.ctl->dropped_lanes, lanes, __ATOMIC_RELAXED);
                    return 0;
                }
            }
            if (__atomic_compare_exchange_n(&s->dev.head, &h, h + n, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
        pos = h;
        s->last_pos = pos;
    } else {
        pos = __atomic_fetch_add(&s->dev.head, n, __ATOMIC_RELAXED);
        s->last_pos = pos;
        uint64_t spins = 0;
        if (pos + n - __atomic_load_n(&s->dev.tail_cache, __ATOMIC_RELAXED) > cap) {
            s->waits++;
            while (pos + n - fresh_tail(s) > cap) {
                if (spin_limit && ++spins > spin_limit)
                    return -1;
                sched_yield();      /* __nanosleep on the device */
            }
        }
    }
    wrr_sim_commit_at(s, pos, words);
    return 1;
}
