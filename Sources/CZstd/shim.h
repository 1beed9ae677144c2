// zstd, which compresses the spool's chunks, for Swift.
#include <zstd.h>
