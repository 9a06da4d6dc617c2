#pragma once
// Feature labels made elsewhere, read so a feature's card, dashboard and graph node can say what it is:
//  - Neuronpedia's explanation exports, one JSON object per line, .jsonl or gzip'd .jsonl.gz
//    (neuronpedia-datasets/v1/<modelId>/<source>/explanations/batch-N.jsonl.gz, written by
//    utils/neuronpedia-utils/neuronpedia_utils/export-data.py export_explanations from the Explanation table:
//    id, modelId, layer, index, description, authorId, embedding, typeName, explanationModelName, …). "layer" is
//    the source id, "<layer>-<set>" ("6-res-jb", "20-gemmascope-res-16k", "3-transcoder-hp"); "index" is the
//    feature, a string in the database (a number is accepted too). Only modelId, layer, index and description
//    are read; rows with an empty description are skipped, as Neuronpedia's exporter skips them.
//  - A CSV with a header naming its columns: "feature,label" (one dictionary: the label applies at every layer)
//    or "layer,feature,label" (RFC 4180 quoting, so labels may hold commas, quotes and line breaks; "index" and
//    "description" are accepted as the column names Neuronpedia uses).
// A feature labelled twice keeps its first label (files in name order, rows in file order); the later ones are
// counted in `duplicates`.

#include <QString>
#include <QStringList>
#include <map>
#include <utility>

namespace attnscope {

/// The labels of features, by (layer, feature index).
struct FeatureLabels {
    /// (layer, feature) → label; layer −1 (a CSV without a layer column) labels that feature at every layer.
    std::map<std::pair<int, int>, QString> labels;
    QStringList files;     ///< the files read, in order
    QStringList modelIds;  ///< the distinct modelId values of Neuronpedia rows, in order of appearance
    QStringList sources;   ///< the distinct source ids ("6-res-jb") of Neuronpedia rows, in order of appearance
    int duplicates = 0;    ///< labels not used because the feature already had one

    bool empty() const { return labels.empty(); }
    /// The label of `feature` at `layer` (the layer's own, else a layer-less one); "" when there is none.
    QString label(int layer, int feature) const;
    /// Adds other's labels after this one's (first label wins).
    void merge(const FeatureLabels& other);
    /// "N labels from F files (model M; sources …)", for status lines and the CLI.
    QString summary() const;
};

/// Reads labels from a file (.jsonl, .jsonl.gz, .csv) or a folder (every such file below it, at most 4 levels
/// deep, in natural name order: batch-2 before batch-10). Throws ModelError naming the file and, for a bad row,
/// its line and field: "FILE: line 3: field \"index\" must be a whole number ≥ 0, not …", "line 3: not valid JSON:
/// …", "line 3: source \"res-jb\" does not start with a layer number", a CSV header without "feature"/"label",
/// an unterminated quote, a folder with no label files, a file of over 1 GiB (inflated, for .gz).
FeatureLabels readFeatureLabels(const QString& path);

} // namespace attnscope
