#include "model/tokenizers/token_display.h"

#include <QStringDecoder>

namespace attnscope {

QString byteEscapes(QByteArrayView bytes) {
    QString out;
    out.reserve(bytes.size() * 4);
    for (char c : bytes)
        out += QStringLiteral("\\x") + QString::number(uint(static_cast<unsigned char>(c)), 16).rightJustified(2, QLatin1Char('0')).toUpper();
    return out;
}

QString displayUnknownId(int id) { return QStringLiteral("\u27E8id %1\u27E9").arg(id); }

namespace {

// Stateless: an incomplete sequence at the end counts as an error, not as pending state.
// ConvertInitialBom: a leading EF BB BF is the text U+FEFF, not a signature to skip.
QStringDecoder utf8Decoder() {
    return QStringDecoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless | QStringDecoder::Flag::ConvertInitialBom);
}

} // namespace

QString utf8Text(QByteArrayView bytes) {
    QStringDecoder decoder = utf8Decoder();
    return decoder.decode(bytes);
}

QString displayTokenBytes(const QByteArray& bytes) {
    QStringDecoder decoder = utf8Decoder();
    const QString text = decoder.decode(bytes);
    if (decoder.hasError()) return byteEscapes(bytes);

    QString out;
    out.reserve(text.size());
    for (QChar c : text) {
        const char16_t u = c.unicode();
        if (u == u' ') out += QChar(0x2423);
        else if (u == u'\n') out += QChar(0x21B5);
        else if (u == u'\t') out += QChar(0x2192);
        else if (u < 0x20 || (u >= 0x7F && u <= 0x9F)) out += byteEscapes(QString(c).toUtf8());
        else out += c;
    }
    return out;
}

} // namespace attnscope
