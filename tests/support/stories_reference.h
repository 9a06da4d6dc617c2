#pragma once
// The run.c references of ../shared/testdata/stories260K/reference.json as the tests use them: the three
// prompts with their ids, the logits run.c printed (every prompt position of the main prompt, the last
// position of the others) and the greedy continuations; the 14 encode() cases; the -n 200 run's stdout.

#include "model/core/tensor.h"

#include <QString>
#include <vector>

namespace attnscope::test {

/// ../shared/testdata/stories260K/NAME.
QString storiesFile(const QString& name);

struct StoriesPrompt {
    QString name;               ///< "main", "other 1", "other 2"
    QString text;
    std::vector<int> ids;       ///< with BOS, as run.c encodes the prompt
    std::vector<int> positions; ///< the positions whose logits run.c recorded
    Matrix logits;              ///< [positions.size(), 512], float32 as run.c printed them (%.9g)
    std::vector<int> continuation; ///< run.c's greedy ids after the prompt (-n 64)
};

/// The three prompts of reference.json, the main one ("Once upon a time", 60 continuation ids) first.
std::vector<StoriesPrompt> storiesPrompts();

struct StoriesTokenizerCase {
    QString text;
    std::vector<int> ids; ///< with BOS (run.c encode(…, bos=1, eos=0))
};
/// The 14 tokenizer cases.
std::vector<StoriesTokenizerCase> storiesTokenizerCases();

/// The stdout of `run stories260K.bin -z tok512.bin -t 0.0 -n 200` (no prompt) without its final newline.
QString storiesUnpromptedText();

} // namespace attnscope::test
