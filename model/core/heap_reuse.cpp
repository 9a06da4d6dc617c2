#include "model/core/heap_reuse.h"

#include <limits> // before the test below: a C++ library header is what defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attnscope {

bool keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
    // The largest value the int argument takes. With 1 GiB a gpt2-small forward at S = 128 still
    // faulted in 47k fresh pages (183 MiB) per pass; with INT_MAX, none (measured with getrusage).
    return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
#else
    return false;
#endif
}

} // namespace attnscope
