#include "model/analysis/features/feature_contexts.h"

#include "model/analysis/common/token_json.h"
#include "model/analysis/features/corpus_windows.h"
#include "model/core/errors.h"
#include "model/features/hook_point.h"
#include "model/transformer/forward.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <set>

namespace attnscope {

namespace {

/// The corpus as this machine sees it (absolute paths, sizes, mtimes: a resumed run must find it unchanged), or
/// with `portable` as any machine does (paths relative to the corpus folder, sizes: what shards must agree on).
QString corpusJson(const std::vector<CorpusFile>& files, const QString& corpus, bool portable) {
    const QFileInfo root(corpus);
    QJsonArray a;
    for (const CorpusFile& f : files)
        a.append(portable ? QJsonObject{{"path", root.isDir() ? QDir(corpus).relativeFilePath(f.path) : root.fileName()}, {"size", double(f.size)}}
                          : QJsonObject{{"path", QFileInfo(f.path).absoluteFilePath()}, {"size", double(f.size)}, {"mtime", double(f.mtime)}});
    return QString::fromUtf8(QJsonDocument(a).toJson(QJsonDocument::Compact));
}

/// The meta keys that must agree for shards to merge (they may have run on machines with other paths).
const QStringList kMergeKeys{QStringLiteral("hook"), QStringLiteral("d_sae"), QStringLiteral("window_tokens"), QStringLiteral("top"),
                             QStringLiteral("corpus_files")};
/// … and for a run to resume into a database.
const QStringList kResumeKeys = kMergeKeys + QStringList{QStringLiteral("model"), QStringLiteral("dictionary"), QStringLiteral("corpus"),
                                                         QStringLiteral("shard")};

void requireSameIdentity(const std::map<QString, QString>& have, const std::map<QString, QString>& want, const QString& path,
                         const QStringList& keys) {
    for (const QString& k : keys) {
        const auto h = have.find(k), w = want.find(k);
        const QString hv = h == have.end() ? QString() : h->second, wv = w == want.end() ? QString() : w->second;
        if (hv != wv)
            throw InputError(QStringLiteral("%1 was made with %2 = %3, not %4: delete it or give another --contexts-db")
                                 .arg(path, k, hv.left(200), wv.left(200)));
    }
}

qint64 metaInt(const std::map<QString, QString>& m, const char* key, qint64 fallback = 0) {
    const auto it = m.find(QString::fromLatin1(key));
    return it == m.end() ? fallback : it->second.toLongLong();
}

/// The per-feature state of a pass: top-N heaps (front = the worst kept) and histograms.
struct FeatureTally {
    int top;
    std::vector<std::vector<ContextRecord>> heaps;
    std::vector<std::vector<qint64>> hist;
    std::vector<qint64> firing;
    std::vector<char> dirty;

    FeatureTally(int d_sae, int n) : top(n), heaps(size_t(d_sae)), hist(size_t(d_sae), std::vector<qint64>(kHistogramBins, 0)),
                                     firing(size_t(d_sae), 0), dirty(size_t(d_sae), 0) {}

    /// Counts a > 0 and keeps it when it ranks in the top N; true when it was kept.
    bool add(int f, const ContextRecord& r) {
        ++hist[size_t(f)][size_t(histogramBin(r.activation))];
        ++firing[size_t(f)];
        dirty[size_t(f)] = 1;
        std::vector<ContextRecord>& h = heaps[size_t(f)];
        if (int(h.size()) < top) {
            h.push_back(r);
            std::push_heap(h.begin(), h.end(), ranksBefore);
            return true;
        }
        if (top == 0 || !ranksBefore(r, h.front())) return false;
        std::pop_heap(h.begin(), h.end(), ranksBefore);
        h.back() = r;
        std::push_heap(h.begin(), h.end(), ranksBefore);
        return true;
    }
};

QString shardText(int shard, int shards) { return QStringLiteral("%1/%2").arg(shard).arg(shards); }

} // namespace

QString defaultContextsDb(const SparseCoder& sae, int shard, int shards) {
    const QFileInfo info(sae.path);
    const QString dir = info.isDir() ? info.filePath() : info.path();
    const QString name = shards > 1 ? QStringLiteral("attnscope-contexts-shard-%1-of-%2.sqlite").arg(shard).arg(shards)
                                    : QStringLiteral("attnscope-contexts.sqlite");
    return QDir(dir).filePath(name);
}

FeatureContextsResult runFeatureContexts(const Model& model, const SparseCoder& sae, const FeatureContextsOptions& options,
                                         const Progress& progress) {
    QElapsedTimer timer;
    timer.start();
    if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards)
        throw InputError(QStringLiteral("shard %1 is out of range: give i/n with 0 <= i < n").arg(shardText(options.shard, options.shards)));
    if (options.top < 1) throw InputError(QStringLiteral("--top must be at least 1, got %1").arg(options.top));
    const ModelConfig& cfg = model.config();
    const HookPoint hook = requireHook(cfg, sae.hookIn, sae.d_in, QDir::toNativeSeparators(sae.path));
    const std::vector<CorpusFile> files = listCorpusFiles(options.corpus);
    const bool hasBos = model.tokenizer().bosId().has_value();
    const int windowTokens = std::max(1, std::min(options.windowTokens, cfg.n_ctx - (hasBos ? 1 : 0)));

    FeatureContextsResult r;
    r.db = options.db.isEmpty() ? defaultContextsDb(sae, options.shard, options.shards) : options.db;
    if (!QFileInfo(QFileInfo(r.db).path()).isDir())
        throw InputError(QStringLiteral("%1: the folder does not exist").arg(r.db));
    const bool existed = QFileInfo::exists(r.db);
    ContextStore store(r.db, true);
    const std::map<QString, QString> identity{
        {QStringLiteral("model"), options.modelLabel},
        {QStringLiteral("dictionary"), QFileInfo(sae.path).absoluteFilePath()},
        {QStringLiteral("hook"), hook.name()},
        {QStringLiteral("d_sae"), QString::number(sae.d_sae)},
        {QStringLiteral("window_tokens"), QString::number(windowTokens)},
        {QStringLiteral("top"), QString::number(options.top)},
        {QStringLiteral("corpus"), corpusJson(files, options.corpus, false)},
        {QStringLiteral("corpus_files"), corpusJson(files, options.corpus, true)},
        {QStringLiteral("shard"), shardText(options.shard, options.shards)}};
    FeatureTally tally(sae.d_sae, options.top);
    qint64 nextWindow = 0;
    std::map<QString, QString> stored = store.meta();
    if (existed && stored.count(QStringLiteral("model"))) {
        requireSameIdentity(stored, identity, r.db, kResumeKeys);
        r.resumed = true;
        nextWindow = metaInt(stored, "next_window");
        r.windowsDone = metaInt(stored, "windows_done");
        r.tokens = metaInt(stored, "tokens");
        r.positions = metaInt(stored, "positions");
        for (auto& [f, recs] : store.allRecords()) {
            if (f < 0 || f >= sae.d_sae) continue;
            tally.heaps[size_t(f)] = recs;
            std::make_heap(tally.heaps[size_t(f)].begin(), tally.heaps[size_t(f)].end(), ranksBefore);
        }
        for (int f = 0; f < sae.d_sae; ++f) {
            auto [firing, counts] = store.histogram(f);
            tally.firing[size_t(f)] = firing;
            if (counts.size() == size_t(kHistogramBins)) tally.hist[size_t(f)] = std::move(counts);
        }
    }

    CorpusWindows reader(files, model.tokenizer(), windowTokens);
    std::map<qint64, std::vector<int>> pendingWindows;
    qint64 sinceFlush = 0;
    auto flush = [&](bool complete, qint64 next) {
        ContextBatch b;
        b.meta = identity;
        b.meta[QStringLiteral("next_window")] = QString::number(next);
        b.meta[QStringLiteral("windows_done")] = QString::number(r.windowsDone);
        b.meta[QStringLiteral("tokens")] = QString::number(r.tokens);
        b.meta[QStringLiteral("positions")] = QString::number(r.positions);
        b.meta[QStringLiteral("bad_utf8_bytes")] = QString::number(reader.badUtf8Bytes());
        b.meta[QStringLiteral("bad_jsonl_lines")] = QString::number(reader.badJsonLines());
        b.meta[QStringLiteral("windows_total")] = QString::number(complete ? next : -1);
        b.meta[QStringLiteral("complete")] = complete ? QStringLiteral("1") : QStringLiteral("0");
        b.meta[QStringLiteral("histogram")] = histogramConvention();
        for (int f = 0; f < sae.d_sae; ++f) {
            if (!tally.dirty[size_t(f)]) continue;
            std::vector<ContextRecord> recs = tally.heaps[size_t(f)];
            std::sort(recs.begin(), recs.end(), ranksBefore);
            b.contexts[f] = std::move(recs);
            b.histograms[f] = {tally.firing[size_t(f)], tally.hist[size_t(f)]};
            tally.dirty[size_t(f)] = 0;
        }
        b.windows = std::move(pendingWindows);
        pendingWindows.clear();
        store.write(b);
        sinceFlush = 0;
    };

    ForwardOptions fo;
    fo.cacheHeadResults = false;
    fo.allLogits = false;
    fo.stopAtLayer = hook.layer + 1; // nothing above the hook point is read
    ActivationCache cache;
    CorpusWindow w;
    qint64 windowsSeen = 0; // windows in the corpus up to the one read last
    while (reader.next(&w)) {
        windowsSeen = w.index + 1;
        if (w.index < nextWindow || w.index % options.shards != options.shard) continue;
        progress.step(reader.bytesRead(), reader.totalBytes(), QStringLiteral("window %1").arg(w.index));
        const int first = w.bos ? 1 : 0;
        if (int(w.ids.size()) <= first) continue;
        cache = runForward(model, w.ids, fo, {}, std::move(cache));
        const Matrix f = encodeFeatures(sae, hookActivation(cache, hook));
        bool kept = false;
        for (Eigen::Index p = first; p < f.rows(); ++p) {
            const float* row = f.row(p).data();
            for (int j = 0; j < sae.d_sae; ++j)
                if (row[j] > 0) kept |= tally.add(j, {row[j], w.index, int(p)});
        }
        if (kept) pendingWindows[w.index] = w.ids;
        ++r.windowsDone;
        ++r.windowsThisRun;
        r.tokens += qint64(w.ids.size());
        r.positions += qint64(w.ids.size()) - first;
        if (++sinceFlush >= std::max(1, options.flushEvery)) flush(false, w.index + 1);
    }
    flush(true, windowsSeen);
    r.windowsTotal = windowsSeen;
    r.badUtf8Bytes = reader.badUtf8Bytes();
    r.badJsonLines = reader.badJsonLines();
    r.complete = true;
    r.seconds = timer.elapsed() / 1000.0;
    return r;
}

FeatureContextsResult contextsSummary(const ContextStore& store) {
    const std::map<QString, QString> m = store.meta();
    FeatureContextsResult r;
    r.db = store.path();
    r.windowsDone = metaInt(m, "windows_done");
    r.windowsTotal = metaInt(m, "windows_total", -1);
    r.tokens = metaInt(m, "tokens");
    r.positions = metaInt(m, "positions");
    r.badUtf8Bytes = metaInt(m, "bad_utf8_bytes");
    r.badJsonLines = metaInt(m, "bad_jsonl_lines");
    r.complete = metaInt(m, "complete") == 1;
    return r;
}

FeatureContextsResult mergeFeatureContexts(const QStringList& inputs, const QString& out) {
    QElapsedTimer timer;
    timer.start();
    if (inputs.isEmpty()) throw InputError(QStringLiteral("--merge needs at least one database"));
    if (QFileInfo::exists(out)) throw InputError(QStringLiteral("%1: already exists (merge into a new file)").arg(out));
    std::map<QString, QString> first;
    std::map<int, std::vector<ContextRecord>> merged;
    std::map<int, std::pair<qint64, std::vector<qint64>>> hist;
    std::map<qint64, std::vector<int>> windows;
    FeatureContextsResult r;
    QStringList shards;
    int top = 0, d_sae = 0;
    for (const QString& in : inputs) {
        ContextStore s(in, false);
        const std::map<QString, QString> m = s.meta();
        if (metaInt(m, "complete") != 1) throw InputError(QStringLiteral("%1: the pass is not complete: run it to the end first").arg(in));
        if (first.empty()) {
            first = m;
            top = int(metaInt(m, "top"));
            d_sae = int(metaInt(m, "d_sae"));
        } else {
            requireSameIdentity(m, first, in, kMergeKeys);
        }
        shards << m.at(QStringLiteral("shard"));
        const FeatureContextsResult part = contextsSummary(s);
        r.windowsDone += part.windowsDone;
        r.tokens += part.tokens;
        r.positions += part.positions;
        r.windowsTotal = std::max(r.windowsTotal, part.windowsTotal);
        r.badUtf8Bytes = std::max(r.badUtf8Bytes, part.badUtf8Bytes); // every shard reads the whole corpus
        r.badJsonLines = std::max(r.badJsonLines, part.badJsonLines);
        for (auto& [f, recs] : s.allRecords()) {
            std::vector<ContextRecord>& into = merged[f];
            into.insert(into.end(), recs.begin(), recs.end());
            std::sort(into.begin(), into.end(), ranksBefore);
            if (int(into.size()) > top) into.resize(size_t(top));
            for (const ContextRecord& c : into)
                if (!windows.count(c.window)) {
                    std::vector<int> ids = s.windowIds(c.window);
                    if (!ids.empty()) windows[c.window] = std::move(ids);
                }
        }
        for (int f = 0; f < d_sae; ++f) {
            auto [firing, counts] = s.histogram(f);
            auto& h = hist[f];
            if (h.second.empty()) h.second.assign(kHistogramBins, 0);
            h.first += firing;
            for (size_t b = 0; b < counts.size() && b < h.second.size(); ++b) h.second[b] += counts[b];
        }
    }
    std::set<qint64> used;
    for (const auto& [f, recs] : merged)
        for (const ContextRecord& c : recs) used.insert(c.window);
    for (auto it = windows.begin(); it != windows.end();) it = used.count(it->first) ? std::next(it) : windows.erase(it);

    ContextStore o(out, true);
    ContextBatch b;
    for (const QString& k : kResumeKeys) b.meta[k] = first[k]; // model, dictionary and corpus paths: the first input's
    b.meta[QStringLiteral("shard")] = QStringLiteral("merged");
    b.meta[QStringLiteral("merged_from")] = shards.join(QLatin1Char(','));
    b.meta[QStringLiteral("next_window")] = QString::number(r.windowsTotal);
    b.meta[QStringLiteral("windows_done")] = QString::number(r.windowsDone);
    b.meta[QStringLiteral("windows_total")] = QString::number(r.windowsTotal);
    b.meta[QStringLiteral("tokens")] = QString::number(r.tokens);
    b.meta[QStringLiteral("positions")] = QString::number(r.positions);
    b.meta[QStringLiteral("bad_utf8_bytes")] = QString::number(r.badUtf8Bytes);
    b.meta[QStringLiteral("bad_jsonl_lines")] = QString::number(r.badJsonLines);
    b.meta[QStringLiteral("complete")] = QStringLiteral("1");
    b.meta[QStringLiteral("histogram")] = histogramConvention();
    b.contexts = std::move(merged);
    b.histograms = std::move(hist);
    b.windows = std::move(windows);
    o.write(b);
    r.db = out;
    r.complete = true;
    r.seconds = timer.elapsed() / 1000.0;
    return r;
}

QJsonObject contextsSummaryToJson(const FeatureContextsResult& r, const std::map<QString, QString>& meta) {
    auto get = [&](const char* k) {
        const auto it = meta.find(QString::fromLatin1(k));
        return it == meta.end() ? QString() : it->second;
    };
    QJsonObject o{{"conventions", QStringLiteral("windows: BOS + up to window_tokens tokens of one document, numbered over the "
                                                 "sorted corpus files; shard i/n runs windows w with w % n == i; contexts: per "
                                                 "feature the top N (activation desc, window asc, position asc), BOS positions "
                                                 "excluded; histogram: ") + histogramConvention()},
                  {"db", r.db}, {"model", get("model")}, {"dictionary", get("dictionary")}, {"hook", get("hook")},
                  {"d_sae", get("d_sae").toInt()}, {"window_tokens", get("window_tokens").toInt()}, {"top", get("top").toInt()},
                  {"shard", get("shard")}, {"windows_done", double(r.windowsDone)}, {"windows_total", double(r.windowsTotal)},
                  {"windows_this_run", double(r.windowsThisRun)}, {"tokens", double(r.tokens)}, {"positions", double(r.positions)},
                  {"bad_utf8_bytes", double(r.badUtf8Bytes)}, {"bad_jsonl_lines", double(r.badJsonLines)},
                  {"complete", r.complete}, {"resumed", r.resumed}, {"seconds", r.seconds}};
    if (r.seconds > 0 && r.windowsThisRun > 0) o.insert(QStringLiteral("tokens_per_second"), double(r.tokens) / r.seconds);
    return o;
}

QJsonObject featureContextsToJson(const ContextStore& store, const Tokenizer& tokenizer, int feature, int n) {
    const std::map<QString, QString> m = store.meta();
    const int d_sae = int(metaInt(m, "d_sae"));
    if (feature < 0 || feature >= d_sae)
        throw InputError(QStringLiteral("feature %1 is out of range: the dictionary has %2 features (0..%3)").arg(feature).arg(d_sae).arg(d_sae - 1));
    QJsonArray contexts;
    for (const FeatureContext& c : store.topContexts(feature, n))
        contexts.append(QJsonObject{{"activation", double(c.activation)}, {"window", double(c.window)}, {"position", c.position},
                                    {"token_ids", tokenIdsJson(c.ids)}, {"tokens", tokenTextsJson(tokenizer, c.ids)},
                                    {"max_token", tokenText(tokenizer, c.ids.at(size_t(c.position)))}});
    const auto [firing, counts] = store.histogram(feature);
    QJsonArray bins;
    for (qint64 c : counts) bins.append(double(c));
    return QJsonObject{{"feature", feature}, {"top_contexts", contexts}, {"firing_positions", double(firing)},
                       {"positions", double(metaInt(m, "positions"))}, {"histogram", bins}};
}

} // namespace attnscope
