#include "gguf_llama_file.h"

#include "gguf_writer.h"

#include <cstring>

namespace attnscope::test {

namespace {

QByteArray f32Bytes(const std::vector<float>& v) {
    QByteArray b;
    for (float x : v) b += leF32(x);
    return b;
}

} // namespace

QByteArray ggufHfLayoutBytes(const LlamaCheckpoint& c, const QByteArray& skip) {
    const LlamaSpec& s = c.spec;
    const bool gemma = s.isGemma(), gemma3 = s.isGemma3();
    if (s.modelType != QLatin1String("qwen2") && s.modelType != QLatin1String("qwen3") && !gemma)
        qFatal("ggufHfLayoutBytes: model type %s", qPrintable(s.modelType));
    if (s.interleavedRope) qFatal("ggufHfLayoutBytes: the checkpoint must be in HF layout");
    // Gemma 3: llama.cpp fixes the pattern (5 sliding, 1 global), the local base (10 000) and leaves local layers unscaled
    if (gemma3 && (!s.slidingLayers.empty() || s.rope_local_theta != 10000.0 || s.local_linear_factor > 0))
        qFatal("ggufHfLayoutBytes: llama.cpp's gemma3 has no key for this layer pattern or local RoPE");
    const QByteArray arch = gemma3 ? QByteArray("gemma3") : s.modelType.toLatin1();
    GgufWriter w;
    w.addString("general.architecture", arch);
    w.addU32(arch + ".block_count", quint32(s.n_layers));
    w.addU32(arch + ".context_length", quint32(s.n_ctx));
    w.addU32(arch + ".embedding_length", quint32(s.d_model));
    w.addU32(arch + ".feed_forward_length", quint32(s.d_mlp));
    w.addU32(arch + ".attention.head_count", quint32(s.n_heads));
    w.addU32(arch + ".attention.head_count_kv", quint32(s.n_kv_heads));
    w.addU32(arch + ".attention.key_length", quint32(s.d_head));
    w.addU32(arch + ".attention.value_length", quint32(s.d_head));
    w.addF32(arch + ".attention.layer_norm_rms_epsilon", float(s.rms_eps));
    w.addF32(arch + ".rope.freq_base", float(s.rope_theta));
    if (s.sliding_window > 0) w.addU32(arch + ".attention.sliding_window", quint32(s.sliding_window));
    if (gemma && s.attn_softcap > 0) w.addF32(arch + ".attn_logit_softcapping", float(s.attn_softcap));
    if (gemma && s.final_softcap > 0) w.addF32(arch + ".final_logit_softcapping", float(s.final_softcap));
    if (gemma3 && s.linear_factor > 0) { // convert_hf_to_gguf.py Gemma3Model: rope_scaling (global layers only)
        w.addString(arch + ".rope.scaling.type", "linear");
        w.addF32(arch + ".rope.scaling.factor", float(s.linear_factor));
    }
    w.addString("tokenizer.ggml.model", "gpt2");
    w.addString("tokenizer.ggml.pre", "qwen2");
    std::vector<QByteArray> tokens;
    for (int i = 0; i < s.d_vocab; ++i) tokens.push_back("t" + QByteArray::number(i));
    w.addStringArray("tokenizer.ggml.tokens", tokens);
    w.addU32("tokenizer.ggml.bos_token_id", quint32(s.bos));
    w.addU32("tokenizer.ggml.eos_token_id", quint32(s.eos));

    const quint64 D = quint64(s.d_model), V = quint64(s.d_vocab), M = quint64(s.d_mlp), L = quint64(s.d_head);
    const quint64 QD = quint64(s.n_heads) * L, KD = quint64(s.n_kv_heads) * L;
    auto tensor = [&](const QByteArray& name, const std::vector<float>& v, std::vector<quint64> ne) {
        quint64 n = 1;
        for (quint64 e : ne) n *= e;
        if (v.size() != n) qFatal("ggufHfLayoutBytes: %s has %zu values, expected %llu", name.constData(), v.size(), n);
        if (name != skip) w.addTensor(name, ne, kTF32, f32Bytes(v));
    };
    auto norm = [&](const QByteArray& name, std::vector<float> v) { // Gemma: stored as 1 + w
        if (gemma)
            for (float& x : v) x += 1.0f;
        tensor(name, v, {quint64(s.d_model)});
    };
    tensor("token_embd.weight", c.embed_tokens, {D, V});
    for (int l = 0; l < s.n_layers; ++l) {
        const LlamaLayerTensors& t = c.layers[size_t(l)];
        const QByteArray p = "blk." + QByteArray::number(l) + ".";
        norm(p + "attn_norm.weight", t.input_layernorm);
        tensor(p + "attn_q.weight", t.q_proj, {D, QD});
        tensor(p + "attn_k.weight", t.k_proj, {D, KD});
        tensor(p + "attn_v.weight", t.v_proj, {D, KD});
        if (!t.q_bias.empty()) tensor(p + "attn_q.bias", t.q_bias, {QD});
        if (!t.k_bias.empty()) tensor(p + "attn_k.bias", t.k_bias, {KD});
        if (!t.v_bias.empty()) tensor(p + "attn_v.bias", t.v_bias, {KD});
        auto headNorm = [&](const QByteArray& name, std::vector<float> v) { // Gemma 3: 1 + w too (every "norm.weight")
            if (gemma3)
                for (float& x : v) x += 1.0f;
            tensor(name, v, {L});
        };
        if (!t.q_norm.empty()) headNorm(p + "attn_q_norm.weight", t.q_norm);
        if (!t.k_norm.empty()) headNorm(p + "attn_k_norm.weight", t.k_norm);
        tensor(p + "attn_output.weight", t.o_proj, {QD, D});
        if (!t.o_bias.empty()) tensor(p + "attn_output.bias", t.o_bias, {D});
        if (gemma) {
            norm(p + "post_attention_norm.weight", t.post_attention_layernorm);
            norm(p + "ffn_norm.weight", t.pre_feedforward_layernorm);
            norm(p + "post_ffw_norm.weight", t.post_feedforward_layernorm);
        } else {
            norm(p + "ffn_norm.weight", t.post_attention_layernorm);
        }
        tensor(p + "ffn_gate.weight", t.gate_proj, {D, M});
        tensor(p + "ffn_up.weight", t.up_proj, {D, M});
        tensor(p + "ffn_down.weight", t.down_proj, {M, D});
    }
    norm("output_norm.weight", c.norm);
    if (!s.tied) tensor("output.weight", c.lm_head, {D, V});
    return w.build();
}

} // namespace attnscope::test
