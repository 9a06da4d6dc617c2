#pragma once
// How one token is written on plot axes and in tables, from its raw bytes.

#include <QByteArray>
#include <QString>

namespace attnscope {

/// The text of UTF-8 `bytes` as Python's bytes.decode("utf-8", "replace") gives it: each invalid or
/// incomplete sequence becomes U+FFFD, and a leading byte-order mark (EF BB BF) stays U+FEFF.
/// QString::fromUtf8 drops a leading BOM, so a prompt starting with U+FEFF would not come back from
/// encode → decode (found by fuzz_prompt). Every token's bytes become text through this.
QString utf8Text(QByteArrayView bytes);

/// Display string for a token whose raw bytes are `bytes`:
/// - bytes that are not complete, valid UTF-8 (e.g. the first half of an emoji) are shown as
///   uppercase byte escapes for every byte: "\xF0\x9F";
/// - otherwise the decoded text, with each space as "␣" (U+2423), "\n" as "↵" (U+21B5),
///   "\t" as "→" (U+2192), and other control characters (C0, DEL, C1) as the escapes of their
///   UTF-8 bytes ("\r" -> "\x0D", U+0085 -> "\xC2\x85").
/// An empty byte string gives an empty display string.
QString displayTokenBytes(const QByteArray& bytes);

/// Display string for an id the model has a row for but the tokenizer has no token for ("⟨id 50300⟩"):
/// models often pad d_vocab past the tokenizer's vocabulary (Qwen2: 151 936 rows, 151 646 tokens), and a
/// random-weight bench model pairs a 128 256-row Llama shape with GPT-2's tokenizer.
QString displayUnknownId(int id);

/// "\xF0\x9F"-style escapes for every byte of `bytes` (uppercase hex).
QString byteEscapes(QByteArrayView bytes);

} // namespace attnscope
