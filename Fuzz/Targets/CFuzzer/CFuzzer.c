// Only the header matters: it declares libFuzzer's driver entry for Swift. SwiftPM needs one source file.
#include "CFuzzer.h"
