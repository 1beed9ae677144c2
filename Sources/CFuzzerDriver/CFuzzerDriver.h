// libFuzzer's driver, for a program that has a main of its own (SwiftPM names every executable's entry point).
// Defined by clang's fuzzer runtime, which `-sanitize=fuzzer` links; nothing else may call it.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
