#pragma once
// The SQLite database of a dictionary's max-activating corpus contexts (feature_contexts.h writes it, the
// feature card reads it), through Qt SQL's QSQLITE driver. Schema (format_version 1):
//   meta(key TEXT PRIMARY KEY, value TEXT)       model, dictionary, hook, d_sae, window_tokens, top, corpus (JSON
//                                                [{path, size, mtime}]), corpus_files ([{relative path, size}]),
//                                                shard "i/n" or "merged", merged_from, next_window,
//                                                windows_done, windows_total, tokens, positions, bad_utf8_bytes,
//                                                bad_jsonl_lines, complete (0/1), histogram (bin convention)
//   contexts(feature, activation REAL, window, position)   the top N per feature; indexed by (feature, activation)
//   windows(window INTEGER PRIMARY KEY, tokens BLOB)       token ids (int32 little-endian) of referenced windows
//   histograms(feature INTEGER PRIMARY KEY, firing, counts BLOB)  kHistogramBins int64 little-endian counts
// Every write is one transaction, so a killed run leaves the last committed state.

#include <QJsonObject>
#include <QString>
#include <map>
#include <vector>

namespace attnscope {

/// One firing position: a feature's activation at `position` of global window `window`.
struct ContextRecord {
    float activation = 0;
    qint64 window = 0;
    int position = 0;
};

/// The ranking of contexts: activation descending, then window ascending, then position ascending (a total
/// order independent of sharding, so top-N merges are associative).
inline bool ranksBefore(const ContextRecord& a, const ContextRecord& b) {
    if (a.activation != b.activation) return a.activation > b.activation;
    if (a.window != b.window) return a.window < b.window;
    return a.position < b.position;
}

/// One top context as the feature card shows it: the record and its window's token ids.
struct FeatureContext {
    float activation = 0;
    qint64 window = 0;
    int position = 0;          ///< of the max-activating token within ids
    std::vector<int> ids;      ///< the window ([BOS] + chunk)
};

/// Histogram bins of activations > 0: bin 0 is (0, 1e-4), bins 1 … 64 are log-spaced, 8 per decade, from 1e-4
/// to 1e4 (bin b ≥ 1 holds [10^(−4 + (b−1)/8), 10^(−4 + b/8))), bin 65 is ≥ 1e4.
constexpr int kHistogramBins = 66;
/// The bin of activation a > 0.
int histogramBin(float a);
/// The convention above, for the database and JSON.
QString histogramConvention();

/// What one transaction writes: metadata, the full top list of some features, the histograms of some
/// features and the token ids of windows the contexts reference (windows no context references are deleted).
struct ContextBatch {
    std::map<QString, QString> meta;
    std::map<int, std::vector<ContextRecord>> contexts;  ///< feature → its records (replacing the stored ones)
    std::map<int, std::pair<qint64, std::vector<qint64>>> histograms; ///< feature → (firing, counts[kHistogramBins])
    std::map<qint64, std::vector<int>> windows;
};

/// An open contexts database. Throws InputError "PATH: …" when it cannot be opened or created, is not a
/// contexts database, or a query fails. What the readers return is checked, so a card can index it as it is: a
/// refused row names its table and column (a feature, window or position that is not a whole number ≥ 0, an activation
/// that is not finite, a histogram that is not kHistogramBins non-negative int64 counts, a tokens blob that is not whole
/// int32 ids, a top context whose position lies outside its stored window).
class ContextStore {
public:
    /// Opens `path`; with `create` a missing file is created with the schema (its folder must exist).
    ContextStore(const QString& path, bool create);
    ~ContextStore();
    ContextStore(const ContextStore&) = delete;
    ContextStore& operator=(const ContextStore&) = delete;

    QString path() const { return path_; }
    /// Every meta key and value.
    std::map<QString, QString> meta() const;
    /// The stored records of `feature`, best first.
    std::vector<ContextRecord> records(int feature) const;
    /// Every stored record, feature → records best first.
    std::map<int, std::vector<ContextRecord>> allRecords() const;
    /// (firing, counts[kHistogramBins]) of `feature`; zeros when none is stored.
    std::pair<qint64, std::vector<qint64>> histogram(int feature) const;
    /// The token ids of window `window` (empty when it is not stored).
    std::vector<int> windowIds(qint64 window) const;
    /// Up to n (≤ 0: all) top contexts of `feature`, best first, with their windows' ids.
    std::vector<FeatureContext> topContexts(int feature, int n) const;
    /// Writes `batch` in one transaction.
    void write(const ContextBatch& batch);

private:
    void close(); ///< closes and removes the connection (idempotent)
    QString path_, connection_;
};

} // namespace attnscope
