#pragma once
// How one token is written on plot axes and in tables, from its raw bytes.

#include <QByteArray>
#include <QString>

namespace attnscope {

/// Display string for a token whose raw bytes are `bytes`:
/// - bytes that are not complete, valid UTF-8 (e.g. the first half of an emoji) are shown as
///   uppercase byte escapes for every byte: "\xF0\x9F";
/// - otherwise the decoded text, with each space as "␣" (U+2423), "\n" as "↵" (U+21B5),
///   "\t" as "→" (U+2192), and other control characters (C0, DEL, C1) as the escapes of their
///   UTF-8 bytes ("\r" -> "\x0D", U+0085 -> "\xC2\x85").
/// An empty byte string gives an empty display string.
QString displayTokenBytes(const QByteArray& bytes);

/// "\xF0\x9F"-style escapes for every byte of `bytes` (uppercase hex).
QString byteEscapes(QByteArrayView bytes);

} // namespace attnscope
