#include "model/analysis/common/input_checks.h"

#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

void requirePosition(int position, int nPositions) {
    if (position < 0 || position >= nPositions)
        throw InputError(QCoreApplication::translate("analysis", "Position %1 is outside the prompt's positions [0, %2).")
                             .arg(position).arg(nPositions));
}

int resolvePosition(int position, int nPositions) {
    const int p = position < 0 ? nPositions - 1 : position;
    requirePosition(p, nPositions);
    return p;
}

void requireToken(const ModelConfig& cfg, int token) {
    if (token < 0 || token >= cfg.d_vocab)
        throw InputError(QCoreApplication::translate("analysis", "Token id %1 is outside the vocabulary [0, %2).")
                             .arg(token).arg(cfg.d_vocab));
}

} // namespace attnscope
