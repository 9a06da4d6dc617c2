#pragma once
// NumPy .npy arrays and .npz archives (a zip of .npy files, numpy.savez / savez_compressed), as Gemma Scope
// ships its params.npz. Format: numpy/lib/format.py ("NEP 1"): magic "\x93NUMPY", version (1.0: u16 header
// length; 2.0/3.0: u32), a Python-literal dict {'descr': '<f4', 'fortran_order': False, 'shape': (a, b), }
// padded with spaces and a newline, then the data. The zip is read with minizip (Debian libminizip-dev),
// never by hand: stored entries are used in place in the read-only mapping of the file, deflated ones are
// inflated into memory after their claimed size has been checked against the deflate bound.

#include "model/formats/dtype.h"
#include "model/formats/mapped_file.h"

#include <QByteArrayView>
#include <QString>
#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope {

/// A parsed .npy header.
struct NpyHeader {
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::int64_t numel = 1;
    std::int64_t dataOffset = 0; ///< bytes from the start of the .npy to its data
};

/// Parses and checks the header of a .npy held in `bytes` (the whole array): magic, version 1–3, header
/// length within the bytes and ≤ 1 MiB, a dict with 'descr' little-endian '<f4', '<f2', '<f8', '<i4' or
/// '<i8' ('|b1' too), 'fortran_order' False, a shape of non-negative integers whose byte count does not
/// overflow and equals the bytes after the header. Throws ModelError(label, "entry NAME: …").
NpyHeader parseNpyHeader(QByteArrayView bytes, const QString& label, const QString& entry);

/// One array of an archive.
struct NpyArray {
    QString name;        ///< entry name without ".npy"
    NpyHeader header;
    const uchar* data = nullptr; ///< header.numel elements of header.dtype (possibly unaligned)
};

/// An open .npz, read-only. Thread-safe for reading.
class NpzArchive {
public:
    /// Opens and checks every entry (zip structure by minizip; each entry's size against the file, a deflated
    /// entry's claimed size against 1032 × its compressed size, and its .npy header). Throws ModelError
    /// naming the file and the entry.
    static std::shared_ptr<const NpzArchive> open(const QString& path, const QString& label = {});

    const QString& label() const { return map_.label(); }
    const std::vector<NpyArray>& arrays() const { return arrays_; }
    /// The array named `name` (without ".npy"), or nullptr.
    const NpyArray* find(const QString& name) const;

private:
    NpzArchive() = default;
    MappedFile map_;
    std::vector<std::vector<uchar>> inflated_; ///< deflated entries, inflated
    std::vector<NpyArray> arrays_;
};

} // namespace attnscope
