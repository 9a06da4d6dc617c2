#pragma once
// Path patching (Wang et al. 2022, "Interpretability in the Wild: a Circuit for Indirect Object
// Identification in GPT-2 small", §3.1 and Appendix B; Goldowsky-Dill et al. 2023): the effect of a sender
// head that reaches the output only through chosen receivers.
//
//   1. Base run B (the corrupted run when denoising, the default; the clean run when noising), source run A
//      (the other one).
//   2. Run B with the sender's z taken from A and every other head frozen at B's value (in every later layer;
//      earlier layers cannot see the sender). MLPs are recomputed, as in the paper. Record the receivers'
//      inputs: the q, k or v input of each receiver head (hook_q/k/v of its head, every position).
//   3. Run B with only those receiver inputs replaced by the recorded ones; measure the metric.
//      Receiver "logits": the metric of step 2 itself (the sender's direct path, through the residual stream
//      and the MLPs, to the unembedding).
// A receiver in the sender's layer or before it has no path from the sender: NaN.
//
// Every run is a patched run of the engine (patched_forward.h): step 2 recomputes only the MLPs of the
// layers after the sender (frozen attention is its attn_out) and the receivers' projections, from the first
// position where the sender's z differs.

#include "model/analysis/circuits/activation_patching.h"

namespace attnscope {

struct HeadId {
    int layer = 0;
    int head = 0;
    bool operator==(const HeadId&) const = default;
};

struct PathReceiver {
    enum class Input { Q, K, V, Logits };
    Input input = Input::Logits;
    int layer = -1, head = -1; ///< for Q, K, V
};

/// "L0H3"; "L1H2.q" / "logits".
QString headIdName(const HeadId& h);
QString pathReceiverName(const PathReceiver& r);

/// "L.H,L.H,…" (e.g. "0.0,1.2"; "L0H0" also accepted). Throws InputError naming the entry that is not a head
/// of the model.
std::vector<HeadId> parseHeadList(const ModelConfig& cfg, const QString& text);
/// "L.H.q,L.H.k,…" or "logits" (entries may mix). Throws InputError likewise.
std::vector<PathReceiver> parseReceiverList(const ModelConfig& cfg, const QString& text);

struct PathPatchingOptions {
    std::vector<HeadId> senders;         ///< empty = every head of the model
    std::vector<PathReceiver> receivers; ///< at least one
    PatchDirection direction = PatchDirection::Denoise;
    PatchingMetric metric;
};

struct PathPatchingResult {
    PathPatchingOptions options;
    int position = 0;
    double clean = 0, corrupt = 0;
    /// [sender, receiver]: the metric through each receiver alone; the last column, when there are two or more
    /// head receivers, through all head receivers together (their inputs replaced at once, as in the IOI
    /// paper's name-mover queries); NaN where there is no path
    Eigen::MatrixXd metric, normalised;
    QStringList columns; ///< receiver names, then "all heads" when that column exists
};

/// Runs path patching for every sender. Progress units: senders (step 2) then sender × column runs (step 3).
/// Throws InputError for a missing corrupted run, bad heads or tokens; Cancelled.
PathPatchingResult runPathPatching(const Model& model, const PatchingRuns& runs, const PathPatchingOptions& options,
                                   const Progress& progress = {});

} // namespace attnscope
