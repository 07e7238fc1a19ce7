// glibc's malloc_trim, which Swift's Glibc module does not export (Sources/Systemd/HeapTrim.swift says why).
#pragma once
#include <malloc.h>

static inline int gattbridge_malloc_trim(void) {
    return malloc_trim(0);
}
