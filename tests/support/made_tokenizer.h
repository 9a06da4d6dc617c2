#pragma once
// A llama2.c tokenizer.bin made here: what a random checkpoint needs to load, without ../shared/testdata.

#include <QString>

namespace attnscope::test {

/// The path of a 512-piece llama2.c tokenizer.bin (written once per process into a temporary folder): <unk>, <s>,
/// </s>, the 256 byte pieces <0x00> … <0xFF> (ids 3 … 258, so any text encodes), then 253 pieces: single characters,
/// "▁"-prefixed letters and words, and letter pairs, scored −1, −2, … in that order. Its layout is llama2.c's
/// (tokenizer.py export: int32 max_token_length, then per piece float32 score, int32 length, the bytes). The size
/// matches the random checkpoints' d_vocab (llama_checkpoint.h), as tok512.bin does.
QString madeTokenizer512();

} // namespace attnscope::test
