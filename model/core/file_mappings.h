#pragma once
// Which memory is a read-only mapping of a file, so that pages a packed copy has replaced
// (weight_panels.h) can be handed back: such pages can be dropped at any time and are read back from the
// page cache (or the file) on the next access, with the same bytes. Any other memory (heap buffers, Qt
// resources, test matrices) is never dropped: MADV_DONTNEED would zero it.

#include <cstddef>

namespace attnscope {

/// Records [base, base + bytes) as a read-only, shared mapping of a file (MappedFile::open).
void registerFileMapping(const void* base, size_t bytes);
/// Forgets the mapping that starts at base; call before unmapping it.
void unregisterFileMapping(const void* base);

/// Maps the pages of [begin, begin + bytes) into this process in one call when that range lies in a
/// registered file mapping (Linux ≥ 5.14 madvise MADV_POPULATE_READ), instead of one page fault per few
/// pages while a copy reads them; does nothing for other memory, elsewhere, or where the kernel lacks it.
void populateMappedPages(const void* begin, size_t bytes);

/// Drops this process's mapping of the whole pages inside [begin, begin + bytes) when that range lies in a
/// registered file mapping (Linux madvise MADV_DONTNEED; the page cache keeps them, and they are mapped
/// again on the next read); does nothing for other memory or elsewhere. Returns the bytes dropped.
size_t dropMappedPages(const void* begin, size_t bytes);

} // namespace attnscope
