#include "model/core/heap_reuse.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attnscope {

void keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30); // int argument: 1 GiB of free heap top before glibc trims
#endif
}

} // namespace attnscope
