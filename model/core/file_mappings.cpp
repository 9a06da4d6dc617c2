#include "model/core/file_mappings.h"

#include <cstdint>
#include <mutex>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace attnscope {

namespace {

struct Mapping {
    std::uintptr_t begin, end;
};

std::mutex& mappingsMutex() {
    static std::mutex m;
    return m;
}

std::vector<Mapping>& mappings() {
    static std::vector<Mapping> v;
    return v;
}

/// Whether [b, e) lies in a registered mapping (mappingsMutex held).
bool inMapping(std::uintptr_t b, std::uintptr_t e) {
    for (const Mapping& m : mappings())
        if (m.begin <= b && e <= m.end) return true;
    return false;
}

} // namespace

void registerFileMapping(const void* base, size_t bytes) {
    if (!base || bytes == 0) return;
    const std::lock_guard lock(mappingsMutex());
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    mappings().push_back({b, b + bytes});
}

void unregisterFileMapping(const void* base) {
    const std::lock_guard lock(mappingsMutex());
    std::vector<Mapping>& v = mappings();
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i].begin == b) {
            v.erase(v.begin() + long(i));
            return;
        }
}

void populateMappedPages(const void* begin, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_READ)
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto b = reinterpret_cast<std::uintptr_t>(begin), e = b + bytes;
    if (bytes == 0) return;
    const std::lock_guard lock(mappingsMutex());
    if (inMapping(b, e)) (void)madvise(reinterpret_cast<void*>(b / page * page), e - b / page * page, MADV_POPULATE_READ);
#else
    (void)begin;
    (void)bytes;
#endif
}

size_t dropMappedPages(const void* begin, size_t bytes) {
#if defined(__linux__) && defined(MADV_DONTNEED)
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto b = reinterpret_cast<std::uintptr_t>(begin), e = b + bytes;
    const std::uintptr_t first = (b + page - 1) / page * page, last = e / page * page;
    if (bytes == 0 || last <= first) return 0;
    // held while dropping, so the mapping cannot be unmapped (and its range reused) meanwhile
    const std::lock_guard lock(mappingsMutex());
    if (!inMapping(b, e)) return 0;
    return madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0 ? size_t(last - first) : 0;
#else
    (void)begin;
    (void)bytes;
    return 0;
#endif
}

} // namespace attnscope
