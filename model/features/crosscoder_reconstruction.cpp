#include "model/features/crosscoder_reconstruction.h"

#include "model/core/errors.h"
#include "model/features/sparse_coder.h"

#include <QDir>

namespace attnscope {

std::vector<Matrix> crosscoderReconstruction(const DictionarySet& set, const std::vector<Matrix>& features) {
    if (set.kind != QLatin1String("crosscoder"))
        throw InputError(QStringLiteral("%1: not a crosscoder").arg(QDir::toNativeSeparators(set.path)));
    const size_t n = set.coders.size();
    if (features.size() != n)
        throw InputError(QStringLiteral("%1: the crosscoder has %2 layers but %3 feature matrices were given")
                             .arg(QDir::toNativeSeparators(set.path)).arg(n).arg(features.size()));
    std::vector<Matrix> out;
    for (size_t m = 0; m < n; ++m) {
        SparseCoder into = set.coders[m];
        into.W_skip = Weight{};
        Matrix xhat;
        for (size_t k = 0; k < n; ++k) {
            const Matrix& f = features[k];
            if (f.rows() != features[0].rows() || f.cols() != set.coders[k].d_sae)
                throw InputError(QStringLiteral("%1: features of layer %2 are [%3, %4], expected [%5, %6]")
                                     .arg(QDir::toNativeSeparators(set.path)).arg(k).arg(f.rows()).arg(f.cols())
                                     .arg(features[0].rows()).arg(set.coders[k].d_sae));
            into.W_dec = set.crossLayerDecoders[k][m];
            if (k == 1) into.b_dec = Weight{}; // b_dec_m added once, with layer 0's part
            const Matrix part = decodeFeatures(into, f, Matrix());
            if (k == 0) xhat = part;
            else xhat += part;
        }
        out.push_back(std::move(xhat));
    }
    return out;
}

} // namespace attnscope
