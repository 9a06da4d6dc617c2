#pragma once
// Random per-layer transcoder sets built in memory, for the attribution-graph tests (no file: the weights are owned
// by the coders).

#include "model/features/dictionary_set.h"
#include "model/transformer/model_config.h"

namespace attnscope::test {

/// Random per-layer transcoders for `cfg` (reading ln2.hook_normalized, writing hook_mlp_out), normal weights with
/// variance 1/fan_in; b_enc leans negative so that about a quarter of ReLU features fire. With `skipLayer` ≥ 0 that
/// layer's transcoder also has a W_skip; with `topK` > 0 every transcoder is circuit-tracer's TopK (exactly k fire).
DictionarySet randomTranscoders(const ModelConfig& cfg, int dSae, unsigned seed, int skipLayer = -1, int topK = 0);

} // namespace attnscope::test
