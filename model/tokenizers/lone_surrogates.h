#pragma once
// The text every tokenizer actually encodes: QString may hold unpaired UTF-16 surrogates, which
// have no UTF-8 form (QString::toUtf8 would write '?').

#include <QString>

namespace attnscope {

/// `text` with every unpaired UTF-16 surrogate replaced by U+FFFD.
inline QString withoutLoneSurrogates(const QString& text) {
    QString out = text;
    const qsizetype n = out.size();
    for (qsizetype i = 0; i < n; ++i) {
        const QChar c = out.at(i);
        if (c.isHighSurrogate() && i + 1 < n && out.at(i + 1).isLowSurrogate()) ++i;
        else if (c.isSurrogate()) out[i] = QChar(QChar::ReplacementCharacter);
    }
    return out;
}

} // namespace attnscope
