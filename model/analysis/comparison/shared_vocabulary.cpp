#include "model/analysis/comparison/shared_vocabulary.h"

#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

void requireSharedVocabulary(const Model& a, const Model& b) {
    const int va = a.config().d_vocab, vb = b.config().d_vocab;
    if (va != vb)
        throw InputError(QCoreApplication::translate("analysis",
                             "The models do not share a tokenizer: d_vocab is %1 in model A (%2) vs %3 in model B (%4).")
                             .arg(va).arg(a.info().name).arg(vb).arg(b.info().name));
    const Tokenizer &ta = a.tokenizer(), &tb = b.tokenizer();
    if (ta.vocabSize() != tb.vocabSize())
        throw InputError(QCoreApplication::translate("analysis",
                             "The models do not share a tokenizer: their tokenizers have %1 tokens in model A (%2) vs %3 in "
                             "model B (%4) (d_vocab %5).")
                             .arg(ta.vocabSize()).arg(a.info().name).arg(tb.vocabSize()).arg(b.info().name).arg(va));
    const int n = std::min(ta.vocabSize(), va);
    for (int id = 0; id < n; ++id)
        if (ta.tokenBytes(id) != tb.tokenBytes(id))
            throw InputError(QCoreApplication::translate("analysis",
                                 "The models do not share a tokenizer: both have %1 tokens, but token %2 is “%3” in model A (%4) "
                                 "and “%5” in model B (%6).")
                                 .arg(va).arg(id).arg(ta.displayToken(id), a.info().name, tb.displayToken(id), b.info().name));
}

} // namespace attnscope
