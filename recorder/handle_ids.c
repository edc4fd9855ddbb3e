/* Small ids for streams and events: see handle_ids.h. */
#include "handle_ids.h"

#include <stdlib.h>

#include "warprace/event.h"

/* The id handle h of its kind was given, or 0 with *found 0. */
static uint32_t find(const wrr_handle_ids *t, void *h, int is_event, int *found)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].handle == h && t->v[i].is_event == is_event) {
            *found = 1;
            return t->v[i].id;
        }
    *found = 0;
    return 0;
}

/* Keeps id for h; out of memory, the next call gives h a new id (a stream
 * taken for two: an order missed, never one invented). */
static uint32_t keep(wrr_handle_ids *t, void *h, int is_event, uint32_t id)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        wrr_handle_id *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return id;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (wrr_handle_id){h, id, is_event};
    return id;
}

uint32_t wrr_stream_id(wrr_handle_ids *t, void *h, wrr_stream_flags_fn flags_of)
{
    if (!h || h == WRR_STREAM_HANDLE_LEGACY)
        return WR_STREAM_LEGACY;
    int found;
    uint32_t id = find(t, h, 0, &found);
    if (found)
        return id;
    id = ++t->next_stream & ~WR_STREAM_NON_BLOCKING;
    unsigned flags = 0;
    if (h != WRR_STREAM_HANDLE_PER_THREAD && flags_of && flags_of(h, &flags) == 0 &&
        (flags & WRR_STREAM_FLAG_NON_BLOCKING))
        id |= WR_STREAM_NON_BLOCKING;
    return keep(t, h, 0, id);
}

/* kinds of handle: a stream, an event, a host thread (its default stream) */
#define KIND_THREAD 2

uint32_t wrr_stream_id_of_thread(wrr_handle_ids *t, uint64_t thread)
{
    int found;
    void *key = (void *)(uintptr_t)thread;
    uint32_t id = find(t, key, KIND_THREAD, &found);
    return found ? id : keep(t, key, KIND_THREAD, ++t->next_stream & ~WR_STREAM_NON_BLOCKING);
}

uint64_t wrr_host_thread_number(void)
{
    static uint64_t next;
    static __thread uint64_t mine;
    if (!mine)
        mine = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
    return mine;
}

uint32_t wrr_event_id(wrr_handle_ids *t, void *h)
{
    int found;
    uint32_t id = find(t, h, 1, &found);
    return found ? id : keep(t, h, 1, ++t->next_event);
}

uint32_t wrr_new_stream_id(wrr_handle_ids *t)
{
    return (++t->next_stream & ~WR_STREAM_NON_BLOCKING) | WR_STREAM_NON_BLOCKING;
}

uint32_t wrr_new_event_id(wrr_handle_ids *t)
{
    return ++t->next_event;
}

void wrr_handle_ids_free(wrr_handle_ids *t)
{
    free(t->v);
    *t = (wrr_handle_ids){0};
}
