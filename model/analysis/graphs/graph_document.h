#pragma once
// An attribution graph as the Graph tab shows it: Neuronpedia's layout (graph_json.h; neuronpedia
// apps/webapp/app/api/graph/graph-schema.json) read into plain structs, from a graph built here or from a file made
// elsewhere (circuit-tracer, Neuronpedia), with the user's pins and supernodes (qParams), written back in the same
// layout. Node kinds come from feature_type: "embedding" → token, "logit" → logit, "mlp reconstruction error" →
// error, anything else (e.g. "cross layer transcoder") → feature. Layers: embeddings −1 (Neuronpedia "E"), logits
// n_layers (Neuronpedia writes n_layers + 1), features and errors their layer. Feature ids are 64-bit: Neuronpedia's
// current files write a feature as the Cantor pairing of (layer, index), past 2^32 for wide transcoders. A file is
// written back as it was read: its node ids, `feature` values (as integers), layers as written, null members, and every
// member of metadata, qParams, the nodes, the links and the top level that the document does not model.

#include "model/analysis/graphs/attribution_graph.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <vector>

namespace attnscope {

struct GraphDocumentNode {
    QString nodeId;          ///< circuit-tracer's node_id ("L_F_P", "0_L_P", "E_TOKEN_P", "(n_layers+1)_TOKEN_P")
    GraphNodeKind kind = GraphNodeKind::Feature;
    int layer = 0;           ///< −1 embeddings, n_layers logits
    int ctxIdx = 0;          ///< the position
    qint64 feature = -1;     ///< feature id (features: from node_id "L_F_P"), −1 (errors), position (embeddings), token id (logits)
    qint64 fileFeature = -1; ///< the file's "feature" as written (circuit-tracer adds layer × 10^k to a feature id, Neuronpedia
                             ///< writes the Cantor pairing (L+i)(L+i+1)/2 + i; −1 when null)
    QString featureType;     ///< the file's feature_type
    QString jsNodeId;        ///< the file's jsNodeId ("" when absent)
    QString clerp;           ///< the file's label ("" when absent)
    double influence = 0;    ///< cumulative influence (smaller = more influential); 0 when absent (logits)
    double activation = 0;   ///< a feature's activation; 0 when absent or null (error nodes)
    double tokenProb = 0;    ///< a logit's probability
    bool isTargetLogit = false;
    int graphIndex = -1;     ///< index into the AttributionGraph it was made from; −1 for a loaded file
    bool qkOnly = false;     ///< a QK trace's contributor pinned into the graph although pruning (or the feature-node bound)
                             ///< left it out: drawn dashed, without links, and written to qk_only_nodes, not nodes
    /// The node's members written back as they were: those the fields above do not hold (run_idx, reverse_ctx_idx,
    /// qk_tracing_results, …), the layer as the file wrote it, and members that were null (activation, influence, feature).
    QJsonObject kept;
};

struct GraphDocumentLink {
    int source = 0, target = 0; ///< indices into GraphDocument::nodes
    double weight = 0;
    QJsonObject kept;           ///< the link's other members (written back)
};

struct GraphDocument {
    QString label;                  ///< where it came from (the file path, or "attribution graph"), for messages
    // metadata
    QString slug, scan, prompt;
    QStringList promptTokens;       ///< [pos] as displayed
    double nodeThreshold = 0.8;
    QJsonObject extraMetadata;      ///< the file's other metadata members (kept when writing it back): schema_version,
                                    ///< transcoder_list, info, generation_settings, pruning_settings, …
    QJsonObject extraQParams;       ///< qParams' other members (linkType, clickedId, sg_pos, …), written back
    QJsonObject extraMembers;       ///< the top level's members besides metadata, qParams, nodes and links (qk_only_nodes, …)
    // qParams
    QStringList pinnedIds;
    std::vector<QStringList> supernodes; ///< each [name, node_id, …]
    QStringList notes;              ///< what reading skipped (pins or supernode members naming no node), for the UI

    std::vector<GraphDocumentNode> nodes;
    std::vector<GraphDocumentLink> links;

    int nLayers() const;            ///< the logits' layer (n_layers), or 1 + the highest feature/error layer without logits
    int nPositions() const;         ///< prompt_tokens' count, at least 1 + the highest ctx_idx
    int indexOf(const QString& nodeId) const; ///< −1 when absent (the first such node)
    bool isOffline() const;         ///< read from a file: no graph behind it (every graphIndex −1)
    /// A node's size weight in [0, 1]: a logit's probability; else 1 − its cumulative influence.
    double sizeWeight(int node) const;
    /// "L1 F17 @3", "error L0 @2", "emb @0 ' the'", "logit ' God' p=0.41" (documentNodeLabel).
    QString nodeLabel(int node) const;
    /// The node's incoming (target == node) or outgoing links, largest |weight| first, at most `k`.
    std::vector<int> strongestLinks(int node, bool incoming, int k) const;
};

/// A node's short label, as GraphDocument::nodeLabel gives it, for a node that need not be in a document (a QK trace's
/// contributor pruned out of the graph): "L1 F17 @3", "error L0 @2", "emb @0 ' the'", "logit ' God' p=0.41".
QString documentNodeLabel(const GraphDocumentNode& node, const QStringList& promptTokens);

/// The highest layer a graph file may name (the largest models have under 200; the figure draws a row per layer).
inline constexpr int kMaxGraphLayers = 1000;

/// The largest |feature| a graph file may hold: a JSON number's exact integers (2^53).
inline constexpr qint64 kMaxGraphFeatureId = qint64(1) << 53;

/// Reads a graph in Neuronpedia's layout. `label` (the file name) starts every error. Throws InputError
/// "LABEL: WHAT" for every missing or mistyped member (metadata, metadata.prompt_tokens, nodes, links and each
/// node's node_id, feature (an integer up to kMaxGraphFeatureId, or null), layer, ctx_idx, feature_type, each link's source, target, weight), a layer that is
/// neither a number nor "E" or is above kMaxGraphLayers, a ctx_idx outside prompt_tokens, a node_id repeated by a node of
/// the same kind, a link to a node_id not in nodes. An id naming a feature and an error node (circuit-tracer's error ids
/// 0_LAYER_POS can equal a layer-0 feature's) is read, its links resolved by layer, and noted. Pins and supernode
/// members naming no node are dropped and listed in notes.
GraphDocument graphDocumentFromJson(const QJsonObject& json, const QString& label);

/// The document in Neuronpedia's layout, with its current pins and supernodes in qParams. QK-only nodes (qkOnly) go to
/// the top-level qk_only_nodes object, keyed by node_id, as Neuronpedia's schema has them, and out of nodes and pinnedIds.
QJsonObject graphDocumentToJson(const GraphDocument& doc);

/// Largest graph file readGraphFile accepts: Neuronpedia's graphs are tens to a few hundred MB, and the parsed JSON
/// takes a few times the file's size in memory.
inline constexpr qint64 kMaxGraphFileBytes = 512'000'000;

/// What a graph file holds, for the command line's --open-graph --dump-json ("graph_file"): file, slug, scan, prompt,
/// prompt_tokens, schema_version (when present), n_layers, n_positions, nodes {feature, error, token, logit, total}, links,
/// pinned_ids, supernodes [{name, members}], scores (the file's metadata "scores" object, or its replacement_score /
/// completeness_score, when present), notes.
QJsonObject graphFileSummary(const GraphDocument& doc);

/// Opens a Neuronpedia graph JSON file. Throws InputError "PATH: …" when it cannot be read, is larger than
/// kMaxGraphFileBytes, is not JSON or not a graph (graphDocumentFromJson's checks).
GraphDocument readGraphFile(const QString& path);

/// Writes graphDocumentToJson(doc) to `path` (indented). Throws InputError "PATH: …" when it cannot be written.
void writeGraphFile(const GraphDocument& doc, const QString& path);

} // namespace attnscope
