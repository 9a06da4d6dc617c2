#include "model/tokenizers/byte_unicode.h"

#include <array>

namespace attnscope {

namespace {

struct ByteUnicodeTable {
    std::array<char16_t, 256> toUnicode{};
    std::array<short, 324> toByte{}; // indexed by code point; all stand-ins are < 256 + 68

    ByteUnicodeTable() {
        toByte.fill(-1);
        // encoder.py: bytes that are printable in Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') keep
        // their code point; the remaining 68 bytes get 256, 257, ... in byte order.
        auto keeps = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const int cp = keeps(b) ? b : 256 + n++;
            toUnicode[b] = char16_t(cp);
            toByte[cp] = short(b);
        }
    }
};

const ByteUnicodeTable& table() {
    static const ByteUnicodeTable t;
    return t;
}

} // namespace

QChar byteToUnicode(unsigned char b) { return QChar(table().toUnicode[b]); }

int unicodeToByte(QChar c) {
    const auto& t = table();
    return c.unicode() < t.toByte.size() ? t.toByte[c.unicode()] : -1;
}

QString bytesToUnicodeString(QByteArrayView bytes) {
    QString out(bytes.size(), Qt::Uninitialized);
    QChar* dst = out.data();
    for (char c : bytes) *dst++ = byteToUnicode(static_cast<unsigned char>(c));
    return out;
}

QByteArray unicodeStringToBytes(QStringView s) {
    QByteArray out;
    out.reserve(s.size());
    qsizetype plainStart = -1; // start of a run of characters outside the table
    for (qsizetype i = 0; i <= s.size(); ++i) {
        const int b = i < s.size() ? unicodeToByte(s[i]) : -1;
        const bool end = i == s.size();
        if (b >= 0 || end) {
            if (plainStart >= 0) {
                out += s.sliced(plainStart, i - plainStart).toUtf8();
                plainStart = -1;
            }
            if (!end) out += char(b);
        } else if (plainStart < 0) {
            plainStart = i;
        }
    }
    return out;
}

} // namespace attnscope
