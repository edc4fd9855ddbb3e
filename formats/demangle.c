/* Kernel names for reading and matching (warprace/demangle.h). */
#include "warprace/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn demangler;
static pthread_once_t looked = PTHREAD_ONCE_INIT;

static void look_for_demangler(void)
{
    /* already in the process (a C++ host program), else the system's */
    void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!fn) {
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (lib)
            fn = dlsym(lib, "__cxa_demangle");   /* the library stays loaded */
    }
    *(void **)&demangler = fn;
}

bool wr_demangler_available(void)
{
    pthread_once(&looked, look_for_demangler);
    return demangler != NULL;
}

char *wr_demangle(const char *name)
{
    if (!name)
        name = "";
    /* only a mangled C++ name: "_Z..."; a C kernel's name is its source's.
     * A name comes from a trace, which may be corrupt or crafted: past
     * WR_DEMANGLE_MAX it is shown as it is, so the demangler's work and
     * recursion stay bounded whatever the file holds. */
    if (strncmp(name, "_Z", 2) == 0 && strnlen(name, WR_DEMANGLE_MAX + 1) <= WR_DEMANGLE_MAX &&
        wr_demangler_available()) {
        int status = -1;
        char *readable = demangler(name, NULL, NULL, &status);
        if (status == 0 && readable)
            return readable;
        free(readable);
    }
    return strdup(name);
}

bool wr_kernel_matches(const regex_t *re, const char *name)
{
    if (!name)
        name = "";
    if (regexec(re, name, 0, NULL, 0) == 0)
        return true;
    if (strncmp(name, "_Z", 2) != 0)
        return false;   /* not a symbol: no other reading */
    char *readable = wr_demangle(name);
    bool match = readable && strcmp(readable, name) != 0 &&
                 regexec(re, readable, 0, NULL, 0) == 0;
    free(readable);
    return match;
}
