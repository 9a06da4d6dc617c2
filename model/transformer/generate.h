#pragma once
// Greedy decoding: the continuation a model writes at temperature 0 (llama2.c run.c -t 0; HF generate with
// do_sample=False), for the CLI's --generate and the tests against run.c's references.

#include "model/core/progress.h"
#include "model/transformer/forward_hooks.h"
#include "model/transformer/model.h"

#include <memory>
#include <vector>

namespace attnscope {

/// Appends n tokens to `tokens`, each the argmax of the last position's logits (ties: lower id, as
/// analysis' topTokens), and returns the n new ids; fewer when the context (n_ctx) is full. Every step is a full
/// forward over the sequence so far (logits of the last position only, no per-layer cache), so the ids are
/// exactly those of runForward. Progress units: tokens generated out of n; throws Cancelled, and
/// runForward's InputError for an empty or invalid prompt.
std::vector<int> greedyContinuation(const Model& model, std::vector<int> tokens, int n, const Progress& progress = {});
/// The same with `hooks` applied to every step's forward pass (an intervention that lasts while the model writes:
/// a hook sees the whole sequence so far, so an edit at fixed positions stays at those positions).
std::vector<int> greedyContinuation(const Model& model, std::vector<int> tokens, int n, std::shared_ptr<const ForwardHooks> hooks,
                                    const Progress& progress = {});

} // namespace attnscope
