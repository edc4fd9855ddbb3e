/* Stable names of the event model's enumerations (text form, reports, DB). */
#include "warprace/event.h"

#include <stddef.h>

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof((table)[0]) && (table)[i] ? (table)[i] : "?")

const char *wr_event_kind_name(unsigned kind)
{
    static const char *const names[] = {
        NULL, "access", "barrier", "warpsync", "fence", "block_enter", "block_exit",
        "launch", "kernel_end", "event_record", "stream_wait", "event_sync",
        "stream_sync", "device_sync", "copy", "alloc", "free", "lost",
    };
    return NAME_OF(names, kind);
}

const char *wr_mem_op_name(unsigned op)
{
    static const char *const names[] = {"ld", "st", "atom", "ld.atomic", "st.atomic"};
    return NAME_OF(names, op);
}

const char *wr_atomic_op_name(unsigned aop)
{
    static const char *const names[] = {"none", "add", "sub", "exch", "cas", "min", "max",
                                        "and", "or", "xor", "inc", "dec"};
    return NAME_OF(names, aop);
}

const char *wr_scope_name(unsigned scope)
{
    static const char *const names[] = {"none", "block", "cluster", "device", "system"};
    return NAME_OF(names, scope);
}

const char *wr_order_name(unsigned order)
{
    static const char *const names[] = {"weak", "relaxed", "acquire", "release", "acq_rel", "sc"};
    return NAME_OF(names, order);
}

const char *wr_space_name(unsigned space)
{
    static const char *const names[] = {"global", "shared", "local", "dsmem"};
    return NAME_OF(names, space);
}

const char *wr_copy_kind_name(unsigned kind)
{
    static const char *const names[] = {"h2d", "d2h", "d2d", "memset"};
    return NAME_OF(names, kind);
}
