#ifndef GATTBRIDGE_CFUZZER_H
#define GATTBRIDGE_CFUZZER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver entry (compiler-rt, LLVM >= 11): runs the fuzzing loop with the given callback.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
