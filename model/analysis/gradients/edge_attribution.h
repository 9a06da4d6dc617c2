#pragma once
// Edge attribution patching: EAP (Syed, Rager & Conmy 2023, "Attribution Patching Outperforms Automated Circuit
// Discovery", §3) and EAP-IG (Hanna, Pezzelle & Belinkov 2024, "Have Faith in Faithfulness", §3), with the graph
// and conventions of their code, hannamw/EAP-IG (src/eap/graph.py, attribute.py, evaluate.py).
//
// The graph. Senders (graph.py's forward nodes) write to the residual stream; receivers (backward nodes) read it:
//   senders    "input"        hook_embed, the token embedding (learned positions are the same in both runs)
//              "a{l}.h{h}"    attn.hook_result of head h in layer l: z_h·W_O^h (b_O is the same in both runs)
//              "m{l}"         hook_mlp_out
//   receivers  "a{l}.h{h}<q>" blocks.l.hook_q_input of head h: a copy of resid_pre that only head h's query reads
//              (<k>, <v> likewise; a grouped-query head is a receiver per query head, read through its group's W_K, W_V)
//              "m{l}"         hook_mlp_in (the MLP's copy of resid_mid)
//              "logits"       the last resid_post, what ln_final reads
// An edge joins every sender to every receiver after it: the input to everything, a head of layer l to the heads of
// later layers and to the MLPs of layers ≥ l, an MLP of layer l to later layers, everything to the logits.
// gpt2-small has 157 senders, 445 receivers and 32 491 edges.
//
// The score of edge u → v is Σ_pos Σ_d (a_u,corrupt − a_u,clean)[pos, d] · g_v[pos, d], where g_v is ∂metric/∂(v's
// input) [pos, d_model] (attribute.py: activation_difference is corrupted − clean):
//   EAP     g_v at the clean run;
//   EAP-IG  the mean of g_v over `steps` runs of the clean prompt whose token embeddings are
//           corrupt + (k/steps)·(clean − corrupt), k = 0 … steps − 1 (get_scores_eap_ig: the left Riemann sum from
//           the corrupted end).
// g_v for a head's q input is the norm's backward of d_q_h·W_Q^hᵀ (d_q_h: the backward pass's hook_q gradient of
// head h); for the MLP input it is ∂/∂resid_mid − ∂/∂resid_post; for the logits the last resid_post's gradient.
//
// Post-norm models (Gemma 2, Gemma 3): a layer's attn_out is ln1_post(Σ_h z_h·W_O^h), whose divisor σ depends on every
// head, so a head's output is not its own. The post-attention norm's divisor is frozen, as attribution graphs freeze
// it (replacement_model.h): a head writes its share z_h·W_O^h ⊙ w/σ, σ of the run it comes from (so a layer's heads
// sum to its attn_out in each run and a receiver's edges to its whole input difference), and g_v is taken with σ held
// at the run's values (BackwardOptions::frozenPostAttentionNorm; EAP-IG: each step's run). The score is then the
// derivative of the metric along Δ_u at v's input in the model whose post-attention divisors are constants, not in
// the live model, where moving v's input would also rescale its layer's other heads through σ. The other norms
// (ln_1, ln_2, q/k norms, the post-feedforward norm of the MLP's single output, ln_final) are not frozen. docs/gradients.md.
//
// Faithfulness (evaluate.py, evaluate_graph with intervention "patching"): the clean prompt is run with each
// receiver's input rebuilt edge by edge: v reads a_u of this run for the circuit's edges u → v, and a_u of the
// corrupted run for every other edge. The share of the metric the circuit recovers is
// (metric(circuit) − metric(corrupt)) / (metric(clean) − metric(corrupt)): 1 for every edge, 0 for none. On post-norm
// models the circuit's run holds the post-attention divisors at the clean run's values (the model the scores linearise).

#include "model/analysis/circuits/activation_patching.h"

#include <QString>
#include <span>
#include <vector>

namespace attnscope {

enum class EdgeAttributionMethod {
    Eap,  ///< gradients at the clean run
    EapIg ///< gradients averaged along the embeddings' path from corrupted to clean
};
/// "eap", "eap-ig".
QString edgeAttributionMethodName(EdgeAttributionMethod m);

/// A node that writes to the residual stream.
struct EdgeSender {
    enum class Kind { Input, Head, Mlp };
    Kind kind = Kind::Input;
    int layer = -1; ///< −1 for the input
    int head = -1;  ///< heads only
};

/// A node input that reads the residual stream.
struct EdgeReceiver {
    enum class Kind { Q, K, V, Mlp, Logits };
    Kind kind = Kind::Logits;
    int layer = -1; ///< −1 for the logits
    int head = -1;  ///< q, k, v only
};

/// "input", "a3.h2", "m3" (EAP-IG's names).
QString edgeSenderName(const EdgeSender& s);
/// "a3.h2<q>", "m3", "logits".
QString edgeReceiverName(const EdgeReceiver& r);

struct ScoredEdge {
    int sender = 0;   ///< index into EdgeGraph::senders
    int receiver = 0; ///< index into EdgeGraph::receivers
    double score = 0;
};

/// The nodes and edges of a model's graph, edges ordered by receiver (as the receivers), then sender.
struct EdgeGraph {
    std::vector<EdgeSender> senders;     ///< input, then per layer its heads and its MLP
    std::vector<EdgeReceiver> receivers; ///< per layer its heads' q, k, v (head-major) and its MLP, then the logits
    std::vector<ScoredEdge> edges;

    /// "a0.h1->a2.h3<q>" (EAP-IG's edge names).
    QString edgeName(const ScoredEdge& e) const;
};

/// Every node and edge of the model's graph, scores 0.
EdgeGraph edgeGraph(const ModelConfig& cfg);

struct EdgeAttributionOptions {
    EdgeAttributionMethod method = EdgeAttributionMethod::EapIg;
    int steps = 5;          ///< EAP-IG's interpolation steps (≥ 1); EAP ignores it
    PatchingMetric metric;  ///< any patching metric; kl compares with the clean run's distribution
};

struct EdgeAttribution {
    EdgeAttributionOptions options;
    int position = 0;      ///< where the metric reads the logits
    double clean = 0;      ///< the metric on the clean run
    double corrupt = 0;    ///< the metric on the corrupted run
    EdgeGraph graph;       ///< every edge with its score
};

/// Scores every edge of the model's graph. runs.clean and runs.corrupt: the two prompts' caches (same length;
/// prepareRuns). Progress units: forward + backward passes (1 for EAP, `steps` for EAP-IG). Throws InputError for
/// a missing corrupted run, steps < 1, a metric token outside the vocabulary, a position outside the prompt, when
/// the senders' differences and a layer's receiver gradients would not fit the memory budget (both sizes in the
/// message), or when a gradient is not finite (the hook where it first is); Cancelled between layers.
EdgeAttribution runEdgeAttribution(const Model& model, const PatchingRuns& runs, const EdgeAttributionOptions& options,
                                   const Progress& progress = {});

/// Indices into graph.edges of the edges with the largest |score|, largest first: the top `top` (0 = no limit)
/// of those with |score| ≥ threshold (0 = every edge). Ties keep graph order.
std::vector<int> selectCircuitEdges(const EdgeGraph& graph, int top, double threshold = 0);

struct CircuitFaithfulness {
    int edges = 0;          ///< edges in the circuit
    double metric = 0;      ///< the metric with every other edge patched to the corrupted run
    double clean = 0, corrupt = 0;
    double recovered = 0;   ///< (metric − corrupt) / (clean − corrupt); NaN when clean = corrupt
};

/// Runs the clean prompt with every edge of graph outside `circuit` (indices into graph.edges) patched to the
/// corrupted run (evaluate.py's "patching" intervention). Progress units: layers. Throws InputError for a
/// missing corrupted run, an edge index out of range, and as the metric; Cancelled between layers.
CircuitFaithfulness evaluateCircuit(const Model& model, const PatchingRuns& runs, const PatchingMetric& metric,
                                    const EdgeGraph& graph, std::span<const int> circuit, const Progress& progress = {});

} // namespace attnscope
