#include "model/analysis/common/index_checks.h"

#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

namespace {
void checkRange(const char* what, int value, int end) {
    if (value < 0 || value >= end)
        throw InputError(QCoreApplication::translate("analysis", "%1 %2 is outside [0, %3).")
                             .arg(QString::fromLatin1(what)).arg(value).arg(end));
}
} // namespace

void checkLayer(const ModelConfig& cfg, int layer) { checkRange("Layer", layer, cfg.n_layers); }

void checkHead(const ModelConfig& cfg, int layer, int head) {
    checkLayer(cfg, layer);
    checkRange("Head", head, cfg.n_heads);
}

void checkNeuron(const ModelConfig& cfg, int layer, int neuron) {
    checkLayer(cfg, layer);
    checkRange("Neuron", neuron, cfg.d_mlp);
}

void checkToken(const ModelConfig& cfg, int token) { checkRange("Token id", token, cfg.d_vocab); }

} // namespace attnscope
