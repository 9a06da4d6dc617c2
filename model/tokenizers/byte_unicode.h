#pragma once
// The GPT-2 byte <-> unicode table: every byte 0..255 gets a printable stand-in character so
// that byte-level BPE vocabularies can be stored as JSON strings (byte 0x20 ' ' is 'Ġ' U+0120,
// 0x0A '\n' is 'Ċ' U+010A, printable ASCII maps to itself).
// Source: OpenAI gpt-2 src/encoder.py, bytes_to_unicode().

#include <QByteArray>
#include <QString>
#include <QStringView>

namespace attnscope {

/// The stand-in character for byte b (all stand-ins are in U+0021..U+0143).
QChar byteToUnicode(unsigned char b);

/// The byte a stand-in character stands for, or -1 if c is not in the table.
int unicodeToByte(QChar c);

/// Each byte of `bytes` replaced by its stand-in character (e.g. " the" -> "Ġthe").
QString bytesToUnicodeString(QByteArrayView bytes);

/// Inverse of bytesToUnicodeString. Characters outside the table (as in added tokens such as
/// "<|endoftext|>" written in plain text) contribute their own UTF-8 bytes, so this never fails.
QByteArray unicodeStringToBytes(QStringView s);

} // namespace attnscope
