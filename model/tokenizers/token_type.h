#pragma once
// Kinds of vocabulary entries, numbered as GGUF's tokenizer.ggml.token_type (llama.cpp llama_token_type,
// the same values as SentencePiece's ModelProto.SentencePiece.Type plus 0 for "not stated").

#include <cstdint>

namespace attnscope {

enum class TokenType : std::uint8_t {
    Undefined = 0,   ///< not stated by the source; treated as Normal
    Normal = 1,      ///< an ordinary piece, produced by merging
    Unknown = 2,     ///< <unk>: stands for text the vocabulary cannot spell
    Control = 3,     ///< <s>, </s>, <|begin_of_text|>: never produced from text unless special tokens are matched
    UserDefined = 4, ///< a piece always matched as a whole in the text (SentencePiece user_defined_symbols)
    Unused = 5,      ///< reserved; treated as Normal
    Byte = 6,        ///< <0xNN>: one raw byte, for byte fallback
};

/// Whether a token of this type takes part in merges (SentencePiece's pieces_: normal, user-defined
/// and unused pieces; control, unknown and byte pieces are reserved ids).
/// Source: sentencepiece model_interface.cc, ModelInterface::InitializePieces.
constexpr bool isMergeable(TokenType t) {
    return t != TokenType::Control && t != TokenType::Unknown && t != TokenType::Byte;
}

} // namespace attnscope
