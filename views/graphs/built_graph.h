#pragma once
// A graph built in the Graph tab: the model, the transcoder set, the replacement model and the graph made from them,
// pruned and scored, kept alive together (the tab's figure, head routes, QK traces and interventions all read it).

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"

#include <memory>

namespace attnscope {

/// A graph built here: the replacement model and the graph it was made from (kept alive together).
struct BuiltGraph {
    std::shared_ptr<const Model> model;
    std::shared_ptr<const DictionarySet> transcoders;
    ReplacementModel rm;
    AttributionGraph graph;
    PrunedGraph pruned;
    GraphScores scores;
};

} // namespace attnscope
