#pragma once
// Shared by the tokenizer fuzz targets: the text a tokenizer must give back after a round trip.

#include <QString>

namespace attnscope::fuzz {

/// `text` with every unpaired UTF-16 surrogate replaced by U+FFFD, as Tokenizer::encode documents
/// (QString::toUtf8 would write '?' instead).
inline QString withoutLoneSurrogates(const QString& text) {
    QString out = text;
    for (qsizetype i = 0; i < out.size(); ++i) {
        if (out.at(i).isHighSurrogate() && i + 1 < out.size() && out.at(i + 1).isLowSurrogate()) ++i;
        else if (out.at(i).isSurrogate()) out[i] = QChar(QChar::ReplacementCharacter);
    }
    return out;
}

} // namespace attnscope::fuzz
