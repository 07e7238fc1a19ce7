/* Forwarders for the few glibc 2.38 symbols that Debian sid's static Swift runtime (libswiftCore.a, libdispatch.a,
   compiled against a newer glibc) refers to, so that the arm64 binary links against bookworm's glibc 2.36 and runs
   on Debian 12 / Raspberry Pi OS bookworm and later.

   glibc 2.38 made the C23 variants of the strto and scanf families the default for code compiled in C2x mode; they
   differ from the classic functions only in accepting a "0b" prefix for base 2 (and 0 in strtol), which nothing in
   the Swift runtime relies on. strlcpy and strlcat are new in 2.38; they are given here with their BSD semantics.
   Every definition is hidden: linked into the executable only, never exported, and the real glibc symbols win on
   a system that has them only if something else asks for them (nothing does). Only scripts/arm64/build.sh links
   this file; the host build (amd64, the toolchain's own runtime) does not need it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <wchar.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN long __isoc23_strtol(const char *s, char **end, int base) { return strtol(s, end, base); }
HIDDEN long long __isoc23_strtoll(const char *s, char **end, int base) { return strtoll(s, end, base); }
HIDDEN unsigned long __isoc23_strtoul(const char *s, char **end, int base) { return strtoul(s, end, base); }
HIDDEN unsigned long long __isoc23_strtoull(const char *s, char **end, int base) { return strtoull(s, end, base); }
HIDDEN intmax_t __isoc23_strtoimax(const char *s, char **end, int base) { return strtoimax(s, end, base); }
HIDDEN uintmax_t __isoc23_strtoumax(const char *s, char **end, int base) { return strtoumax(s, end, base); }
HIDDEN long __isoc23_wcstol(const wchar_t *s, wchar_t **end, int base) { return wcstol(s, end, base); }
HIDDEN long long __isoc23_wcstoll(const wchar_t *s, wchar_t **end, int base) { return wcstoll(s, end, base); }
HIDDEN unsigned long __isoc23_wcstoul(const wchar_t *s, wchar_t **end, int base) { return wcstoul(s, end, base); }
HIDDEN unsigned long long __isoc23_wcstoull(const wchar_t *s, wchar_t **end, int base) { return wcstoull(s, end, base); }

HIDDEN int __isoc23_vsscanf(const char *s, const char *format, va_list args) { return vsscanf(s, format, args); }
HIDDEN int __isoc23_vfscanf(FILE *f, const char *format, va_list args) { return vfscanf(f, format, args); }
HIDDEN int __isoc23_vscanf(const char *format, va_list args) { return vscanf(format, args); }

HIDDEN int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsscanf(s, format, args);
    va_end(args);
    return n;
}

HIDDEN int __isoc23_fscanf(FILE *f, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vfscanf(f, format, args);
    va_end(args);
    return n;
}

HIDDEN int __isoc23_scanf(const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vscanf(format, args);
    va_end(args);
    return n;
}

HIDDEN size_t strlcpy(char *dst, const char *src, size_t size) {
    size_t len = strlen(src);
    if (size > 0) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

HIDDEN size_t strlcat(char *dst, const char *src, size_t size) {
    size_t used = strnlen(dst, size);
    if (used == size) return size + strlen(src);
    return used + strlcpy(dst + used, src, size - used);
}
