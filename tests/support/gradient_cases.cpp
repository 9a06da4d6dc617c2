#include "gradient_cases.h"

#include "hf_llama_folder.h"
#include "llama_checkpoint.h"
#include "stories_reference.h"
#include "test_paths.h"

#include "model/formats/model_loader.h"

#include <QDir>

namespace attnscope::test {

std::map<QString, GradientCase> gradientCases(const QString& tmpDir) {
    std::map<QString, GradientCase> cases;
    GradientCase gpt2;
    gpt2.model = loadModel(testdata("tiny-gpt2/model.safetensors"));
    gpt2.tokens = {464, 2068, 7586, 21831, 18045, 625, 262, 16931};
    for (int& t : gpt2.tokens) t %= 512;
    gpt2.token = 11;
    gpt2.counter = 300;
    cases["tiny-gpt2"] = gpt2;

    GradientCase stories;
    stories.model = loadModel(storiesFile("stories260K.bin"), {}, LoadOptions{storiesFile("tok512.bin")});
    stories.tokens = {1, 403, 407, 261, 108, 395, 31, 284};
    stories.token = 278;
    stories.counter = 395;
    cases["stories260K"] = stories;

    LlamaSpec spec = smallLlamaSpec("mistral", 32, 4, 2, 8, 48);
    spec.sliding_window = 3;
    spec.tied = false;
    const QString dir = QDir(tmpDir).filePath("mistral");
    writeHfLlamaFolder(randomLlama(spec, 7, /*qkvBias=*/true), dir, Storage::F32, storiesFile("tok512.bin"), "tokenizer.bin");
    GradientCase mistral;
    mistral.model = loadModel(dir);
    mistral.tokens = {1, 40, 300, 12, 77, 500, 9, 260};
    mistral.token = 5;
    mistral.counter = 100;
    cases["mistral"] = mistral;

    // Qwen 3: per-head q/k RMSNorm before RoPE, GQA, head_dim 16 ≠ 32 / 4, tied
    const LlamaSpec qwenSpec = smallLlamaSpec("qwen3", 32, 4, 2, 16, 48);
    const QString qwenDir = QDir(tmpDir).filePath("qwen3");
    writeHfLlamaFolder(randomLlama(qwenSpec, 11), qwenDir, Storage::F32, storiesFile("tok512.bin"), "tokenizer.bin");
    GradientCase qwen3 = mistral;
    qwen3.model = loadModel(qwenDir);
    cases["qwen3"] = qwen3;

    // Gemma 2: post-norms, (1 + w) norms, soft-caps that bind, the window on layer 0 only, query_pre_attn_scalar 4
    const LlamaSpec gemmaSpec = smallGemma2Spec();
    const QString gemmaDir = QDir(tmpDir).filePath("gemma2");
    writeHfLlamaFolder(randomLlama(gemmaSpec, 13), gemmaDir, Storage::F32, storiesFile("tok512.bin"), "tokenizer.bin");
    GradientCase gemma2 = mistral;
    gemma2.model = loadModel(gemmaDir);
    cases["gemma2"] = gemma2;

    // Gemma 3: Gemma 2's blocks without soft-caps, (1 + w) q/k norms, 6 layers (window 3 on the five sliding ones), RoPE
    // 1e4 on sliding layers and 1e6 scaled by 8 on the global one
    const QString gemma3Dir = QDir(tmpDir).filePath("gemma3");
    writeHfLlamaFolder(randomLlama(smallGemma3Spec(), 17), gemma3Dir, Storage::F32, storiesFile("tok512.bin"), "tokenizer.bin");
    GradientCase gemma3 = mistral;
    gemma3.model = loadModel(gemma3Dir);
    cases["gemma3"] = gemma3;
    return cases;
}

} // namespace attnscope::test
