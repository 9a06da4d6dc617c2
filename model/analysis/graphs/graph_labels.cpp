#include "model/analysis/graphs/graph_labels.h"

namespace attnscope {

int applyFeatureLabels(GraphDocument& doc, const FeatureLabels& labels, bool overwrite) {
    int n = 0;
    for (GraphDocumentNode& node : doc.nodes) {
        if (node.kind != GraphNodeKind::Feature || node.feature < 0 || node.feature > std::numeric_limits<int>::max()) continue;
        if (!node.clerp.isEmpty() && !overwrite) continue;
        const QString text = labels.label(node.layer, int(node.feature));
        if (text.isEmpty()) continue;
        node.clerp = text;
        ++n;
    }
    return n;
}

} // namespace attnscope
