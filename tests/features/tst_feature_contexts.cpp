// Max-activating contexts over a corpus on the demo model with a random SAE: the stored top N per feature
// against a brute-force pass (every window run, encoded, all records sorted), two shards merged against one
// pass, a cancelled run resumed against an uninterrupted one, the exact count of bytes that are not UTF-8, and
// histograms summing to the firing positions.

#include "model/analysis/features/context_activations.h"
#include "model/analysis/features/context_store.h"
#include "model/analysis/features/corpus_windows.h"
#include "model/analysis/features/feature_contexts.h"
#include "model/core/errors.h"
#include "model/features/dictionary_set.h"
#include "model/features/hook_point.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/dictionary_fixtures.h"
#include "support/test_paths.h"

#include <QElapsedTimer>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QFile>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <functional>

using namespace attnscope;
using namespace attnscope::test;

namespace {

constexpr int kTop = 5;
constexpr int kWindow = 24;
constexpr int kDSae = 96;

void writeBytes(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

/// The exact stored state: records of every feature, histograms, and the counters.
void requireSameStores(const ContextStore& a, const ContextStore& b) {
    for (int f = 0; f < kDSae; ++f) {
        const std::vector<ContextRecord> ra = a.records(f), rb = b.records(f);
        QCOMPARE(ra.size(), rb.size());
        for (size_t i = 0; i < ra.size(); ++i) {
            QCOMPARE(ra[i].activation, rb[i].activation);
            QCOMPARE(ra[i].window, rb[i].window);
            QCOMPARE(ra[i].position, rb[i].position);
            QCOMPARE(a.windowIds(ra[i].window), b.windowIds(rb[i].window));
        }
        QCOMPARE(a.histogram(f), b.histogram(f));
    }
    const auto ma = a.meta(), mb = b.meta();
    for (const char* k : {"windows_total", "tokens", "positions", "bad_utf8_bytes", "bad_jsonl_lines", "complete", "corpus"})
        QCOMPARE(ma.at(QString::fromLatin1(k)), mb.at(QString::fromLatin1(k)));
}

/// A copy of `from` at `to` with `sql` run on it (raw SQLite, as a damaged or hand-edited file would be).
void damagedCopy(const QString& from, const QString& to, const QString& sql) {
    QFile::remove(to);
    QVERIFY(QFile::copy(from, to));
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("damage"));
        db.setDatabaseName(to);
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY2(q.exec(sql), qPrintable(q.lastError().text()));
        q = QSqlQuery();
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("damage"));
}

} // namespace

class TestFeatureContexts : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void badUtf8BytesCountedExactly();
    void topContextsEqualBruteForce();
    void histogramsSumToFiringPositions();
    void recomputedContextActivationsMatchStored();
    void shardsMergeToOnePass();
    void cancelledRunResumes();
    void refusesAnotherSetup();
    void refusesDamagedDatabases();

private:
    FeatureContextsOptions options(const QString& db) const {
        FeatureContextsOptions o;
        o.corpus = corpus_;
        o.db = tmp_.filePath(db);
        o.modelLabel = QStringLiteral("demo");
        o.windowTokens = kWindow;
        o.top = kTop;
        o.flushEvery = 4;
        return o;
    }

    std::shared_ptr<const Model> model_;
    QTemporaryDir tmp_;
    SparseCoder sae_;
    QString corpus_;
    FeatureContextsResult full_;
};

void TestFeatureContexts::initTestCase() {
    model_ = loadModel(demoDir());
    const int d = model_->config().d_model;
    DictionaryParams params = roundedTo(randomParams(d, kDSae, d, 77), QStringLiteral("F32"));
    params.W_enc *= 0.5;
    params.threshold *= 4;
    writeSaeLensFolder(tmp_.filePath(QStringLiteral("sae")), params, QStringLiteral("jumprelu"),
                       QJsonObject{{"architecture", "jumprelu"}, {"d_in", d}, {"d_sae", kDSae}, {"apply_b_dec_to_input", true},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}});
    sae_ = openDictionaries(tmp_.filePath(QStringLiteral("sae"))).coders[0];
    corpus_ = tmp_.filePath(QStringLiteral("corpus"));
    QVERIFY(QDir().mkpath(corpus_));
    QByteArray genesis;
    for (int i = 0; i < 12; ++i)
        genesis += "In the beginning God created the heaven and the earth. And the earth was without form, and void; "
                   "and darkness was upon the face of the deep. And God said, Let there be light: and there was light.\n";
    writeBytes(corpus_ + QStringLiteral("/a.txt"), genesis); // ~2.6 KB
    // 9 bytes that are not UTF-8: a bad lead byte, a lead byte before ASCII, a truncated 3-byte form (2),
    // a surrogate (3), an overlong '/' (2)
    writeBytes(corpus_ + QStringLiteral("/b.txt"), QByteArray("And the evening \xff and the morning were the first day. "
                                                              "Caf\xc3(e and tea\xe2\x82\n"
                                                              "Surrogate \xed\xa0\x80 here, overlong \xc0\xaf slash, and \xc3\xa9t\xc3\xa9 is fine.\n"));
    // jsonl: two documents, one line without "text" (skipped), one bad byte inside a string
    writeBytes(corpus_ + QStringLiteral("/c.jsonl"),
               QByteArray("{\"text\": \"And God called the light Day, and the darkness he called Night.\"}\n"
                          "{\"title\": \"no text here\"}\n"
                          "{\"text\": \"And God made the firmament \xfe and divided the waters which were under the firmament.\"}\n"));
    QElapsedTimer t;
    t.start();
    full_ = runFeatureContexts(*model_, sae_, options(QStringLiteral("full.sqlite")));
    qInfo("corpus pass: %lld windows, %lld tokens in %.3f s: %.0f tokens/s", full_.windowsDone, full_.tokens, t.elapsed() / 1000.0,
          full_.tokens / (t.elapsed() / 1000.0));
    QVERIFY(full_.complete);
    QCOMPARE(full_.windowsDone, full_.windowsTotal);
    QVERIFY(full_.windowsTotal > 10);
}

void TestFeatureContexts::badUtf8BytesCountedExactly() {
    qint64 bad = 0;
    const QString s = decodeUtf8Lossy(QByteArray("a\xff" "b\xe2\x82\n\xed\xa0\x80\xc0\xaf\xc3\xa9\xf0\x9f\x98\x80"), &bad);
    QCOMPARE(bad, qint64(8));
    QCOMPARE(s, QString::fromUtf8("a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\n") + QString(5, QChar(0xFFFD)) +
                    QString::fromUtf8("\xc3\xa9\xf0\x9f\x98\x80"));
    QCOMPARE(full_.badUtf8Bytes, qint64(10));
    QCOMPARE(full_.badJsonLines, qint64(1));
    const ContextStore store(full_.db, false);
    QCOMPARE(store.meta().at(QStringLiteral("bad_utf8_bytes")), QStringLiteral("10"));
}

/// The dashboard's tinted contexts: contextActivations on a stored window gives the stored activation at the
/// stored position, that position is the window's maximum for the feature, and another feature's column differs.
void TestFeatureContexts::recomputedContextActivationsMatchStored() {
    const ContextStore store(full_.db, false);
    int checked = 0;
    for (int f = 0; f < kDSae; ++f) {
        const std::vector<FeatureContext> top = store.topContexts(f, kTop);
        for (const FeatureContext& c : top) {
            const Eigen::VectorXf a = contextActivations(*model_, sae_, c.ids, f);
            QCOMPARE(a.size(), Eigen::Index(c.ids.size()));
            QVERIFY2(std::abs(a(c.position) - c.activation) <= 1e-5f * std::max(1.0f, std::abs(c.activation)),
                     qPrintable(QStringLiteral("feature %1 window %2: %3 vs stored %4").arg(f).arg(c.window).arg(a(c.position)).arg(c.activation)));
            for (Eigen::Index p = 1; p < a.size(); ++p) QVERIFY(a(p) <= top[0].activation * (1 + 1e-5f)); // the best is the corpus max
            ++checked;
        }
    }
    QVERIFY(checked > 20);
    // the wrong feature's column does not reproduce the record
    const std::vector<FeatureContext> top0 = store.topContexts(0, 1);
    QVERIFY(!top0.empty());
    int other = -1;
    for (int f = 1; f < kDSae && other < 0; ++f)
        if (std::abs(contextActivations(*model_, sae_, top0[0].ids, f)(top0[0].position) - top0[0].activation) > 1e-3f) other = f;
    QVERIFY(other > 0);
    auto message = [&](const std::vector<int>& ids, int feature) {
        try {
            contextActivations(*model_, sae_, ids, feature);
        } catch (const InputError& e) {
            return e.message();
        }
        return QString();
    };
    QVERIFY2(message(top0[0].ids, kDSae).endsWith(QStringLiteral("feature 96 is outside [0, d_sae = 96)")), qPrintable(message(top0[0].ids, kDSae)));
    QVERIFY2(message({}, 0).endsWith(QStringLiteral("an empty context has no activations")), qPrintable(message({}, 0)));
}

void TestFeatureContexts::topContextsEqualBruteForce() {
    const HookPoint hook = *parseHookName(sae_.hookIn);
    std::vector<std::vector<ContextRecord>> all(kDSae);
    std::map<qint64, std::vector<int>> windows;
    qint64 tokens = 0, positions = 0;
    CorpusWindows reader(listCorpusFiles(corpus_), model_->tokenizer(), kWindow);
    CorpusWindow w;
    while (reader.next(&w)) {
        QVERIFY(w.bos);
        QVERIFY(int(w.ids.size()) <= kWindow + 1);
        windows[w.index] = w.ids;
        tokens += qint64(w.ids.size());
        positions += qint64(w.ids.size()) - 1;
        const Matrix f = encodeFeatures(sae_, hookActivation(runForward(*model_, w.ids), hook));
        for (Eigen::Index p = 1; p < f.rows(); ++p)
            for (int j = 0; j < kDSae; ++j)
                if (f(p, j) > 0) all[size_t(j)].push_back({f(p, j), w.index, int(p)});
    }
    QCOMPARE(qint64(windows.size()), full_.windowsTotal);
    QCOMPARE(tokens, full_.tokens);
    QCOMPARE(positions, full_.positions);
    const ContextStore store(full_.db, false);
    int featuresWithContexts = 0;
    for (int j = 0; j < kDSae; ++j) {
        std::vector<ContextRecord>& a = all[size_t(j)];
        std::sort(a.begin(), a.end(), [](const ContextRecord& x, const ContextRecord& y) {
            return std::tie(y.activation, x.window, x.position) < std::tie(x.activation, y.window, y.position);
        });
        if (a.size() > size_t(kTop)) a.resize(kTop);
        const std::vector<FeatureContext> got = store.topContexts(j, 0);
        QCOMPARE(got.size(), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(got[i].activation, a[i].activation);
            QCOMPARE(got[i].window, a[i].window);
            QCOMPARE(got[i].position, a[i].position);
            QCOMPARE(got[i].ids, windows.at(a[i].window));
        }
        if (!a.empty()) ++featuresWithContexts;
    }
    QVERIFY2(featuresWithContexts > 20, qPrintable(QString::number(featuresWithContexts)));
    QCOMPARE(int(store.topContexts(3, 2).size()), std::min(2, int(all[3].size())));
}

void TestFeatureContexts::histogramsSumToFiringPositions() {
    const ContextStore store(full_.db, false);
    qint64 firingTotal = 0;
    for (int f = 0; f < kDSae; ++f) {
        const auto [firing, counts] = store.histogram(f);
        QCOMPARE(int(counts.size()), kHistogramBins);
        QCOMPARE(std::accumulate(counts.begin(), counts.end(), qint64(0)), firing);
        QVERIFY(firing <= full_.positions);
        const std::vector<ContextRecord> r = store.records(f);
        QCOMPARE(qint64(r.size()), std::min<qint64>(firing, kTop));
        if (!r.empty()) QVERIFY(counts[size_t(histogramBin(r.front().activation))] >= 1);
        firingTotal += firing;
    }
    QVERIFY(firingTotal > 0);
    QCOMPARE(histogramBin(1.0f), 33);     // [10^0, 10^(1/8))
    QCOMPARE(histogramBin(0.999f), 32);
    QCOMPARE(histogramBin(5e-5f), 0);
    QCOMPARE(histogramBin(2e4f), kHistogramBins - 1);
}

void TestFeatureContexts::shardsMergeToOnePass() {
    FeatureContextsOptions o0 = options(QStringLiteral("s0.sqlite")), o1 = options(QStringLiteral("s1.sqlite"));
    o0.shards = o1.shards = 2;
    o1.shard = 1;
    const FeatureContextsResult r0 = runFeatureContexts(*model_, sae_, o0), r1 = runFeatureContexts(*model_, sae_, o1);
    QCOMPARE(r0.windowsDone + r1.windowsDone, full_.windowsTotal);
    QCOMPARE(r0.windowsDone, (full_.windowsTotal + 1) / 2);
    const QString merged = tmp_.filePath(QStringLiteral("merged.sqlite"));
    const FeatureContextsResult m = mergeFeatureContexts({o1.db, o0.db}, merged);
    QCOMPARE(m.windowsDone, full_.windowsTotal);
    QCOMPARE(m.tokens, full_.tokens);
    requireSameStores(ContextStore(merged, false), ContextStore(full_.db, false));
    // merging is associative with the full pass itself: full ∪ shards == full
    const QString again = tmp_.filePath(QStringLiteral("again.sqlite"));
    mergeFeatureContexts({merged}, again);
    requireSameStores(ContextStore(again, false), ContextStore(full_.db, false));
    QVERIFY_THROWS_EXCEPTION(InputError, mergeFeatureContexts({o0.db}, merged)); // exists
}

void TestFeatureContexts::cancelledRunResumes() {
    FeatureContextsOptions o = options(QStringLiteral("resumed.sqlite"));
    o.flushEvery = 3;
    int steps = 0;
    Progress cancelAfter7;
    cancelAfter7.isCancelled = [&] { return ++steps > 7; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, runFeatureContexts(*model_, sae_, o, cancelAfter7));
    {
        const ContextStore partial(o.db, false);
        QCOMPARE(partial.meta().at(QStringLiteral("next_window")), QStringLiteral("6")); // two commits of 3 windows
        QCOMPARE(partial.meta().at(QStringLiteral("complete")), QStringLiteral("0"));
    }
    const FeatureContextsResult r = runFeatureContexts(*model_, sae_, o);
    QVERIFY(r.resumed);
    QCOMPARE(r.windowsThisRun, full_.windowsTotal - 6);
    QCOMPARE(r.windowsDone, full_.windowsTotal);
    requireSameStores(ContextStore(o.db, false), ContextStore(full_.db, false));
    const FeatureContextsResult again = runFeatureContexts(*model_, sae_, o); // complete: nothing to run
    QCOMPARE(again.windowsThisRun, qint64(0));
    requireSameStores(ContextStore(o.db, false), ContextStore(full_.db, false));
}

void TestFeatureContexts::refusesAnotherSetup() {
    FeatureContextsOptions o = options(QStringLiteral("full.sqlite"));
    o.top = kTop + 1;
    try {
        runFeatureContexts(*model_, sae_, o);
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("top = 5, not 6")), e.what());
    }
    o = options(QStringLiteral("x.sqlite"));
    o.corpus = tmp_.filePath(QStringLiteral("missing"));
    QVERIFY_THROWS_EXCEPTION(InputError, runFeatureContexts(*model_, sae_, o));
    QVERIFY(!QFileInfo::exists(o.db));
    o = options(QStringLiteral("x.sqlite"));
    o.shard = 3;
    o.shards = 2;
    QVERIFY_THROWS_EXCEPTION(InputError, runFeatureContexts(*model_, sae_, o));
    QVERIFY_THROWS_EXCEPTION(InputError, ContextStore(tmp_.filePath(QStringLiteral("none.sqlite")), false));
}

// A database changed by hand or damaged on disk: every reader the card and --feature-contexts use refuses it with the
// table, the column and the value, never returns a context the card would index outside its window (the first
// fuzz_contexts_db finding, 2026-12-07: a position outside its window, read by the card as ids[position]).
void TestFeatureContexts::refusesDamagedDatabases() {
    const QString full = tmp_.filePath(QStringLiteral("full.sqlite"));
    int feature = -1;
    ContextRecord best;
    size_t windowTokens = 0;
    {
        const ContextStore store(full, false);
        for (const auto& [f, recs] : store.allRecords())
            if (feature < 0 && !recs.empty()) feature = f, best = recs.front();
        QVERIFY(feature >= 0);
        windowTokens = store.windowIds(best.window).size();
        QVERIFY(windowTokens > 0);
        QCOMPARE(store.topContexts(feature, 1).at(0).ids.size(), windowTokens);
    }
    const QString where = QStringLiteral(" WHERE feature = %1 AND window = %2 AND position = %3").arg(feature).arg(best.window).arg(best.position);
    const QString damaged = tmp_.filePath(QStringLiteral("damaged.sqlite"));
    struct Case {
        QString sql;
        std::function<void(const ContextStore&)> read;
        QString message;
    };
    const auto top = [&](const ContextStore& s) { s.topContexts(feature, 1); };
    const auto all = [&](const ContextStore& s) { s.allRecords(); };
    const std::vector<Case> cases = {
        {QStringLiteral("UPDATE contexts SET position = %1").arg(windowTokens + 3) + where, top,
         QStringLiteral("a context of feature %1 is at position %2 of window %3, which has %4 tokens")
             .arg(feature).arg(windowTokens + 3).arg(best.window).arg(windowTokens)},
        {QStringLiteral("DELETE FROM windows WHERE window = %1").arg(best.window), top,
         QStringLiteral("a context of feature %1 is at position %2 of window %3, which is not stored").arg(feature).arg(best.position).arg(best.window)},
        {QStringLiteral("UPDATE contexts SET position = -1") + where, all,
         QStringLiteral("contexts.position is -1, not a whole number in [0, 2147483647]")},
        {QStringLiteral("UPDATE contexts SET window = 'w7'") + where, all, QStringLiteral("contexts.window is w7, not a whole number")},
        {QStringLiteral("UPDATE contexts SET feature = 2.5") + where, all, QStringLiteral("contexts.feature is 2.5, not a whole number")},
        {QStringLiteral("UPDATE contexts SET activation = 'high'") + where, top,
         QStringLiteral("contexts.activation of feature %1 is high, not a finite number").arg(feature)},
        {QStringLiteral("UPDATE contexts SET activation = 1e39") + where, top,
         QStringLiteral("contexts.activation of feature %1 is 1e+39, not a finite number").arg(feature)},
        {QStringLiteral("UPDATE windows SET tokens = x'0102030405' WHERE window = %1").arg(best.window), top,
         QStringLiteral("windows.tokens of window %1 has 5 bytes, not whole int32 token ids").arg(best.window)},
        {QStringLiteral("UPDATE histograms SET counts = x'0102' WHERE feature = %1").arg(feature),
         [&](const ContextStore& s) { s.histogram(feature); },
         QStringLiteral("histograms.counts of feature %1 has 2 bytes, not 528 (66 int64 bins)").arg(feature)},
        {QStringLiteral("UPDATE histograms SET firing = -4 WHERE feature = %1").arg(feature),
         [&](const ContextStore& s) { s.histogram(feature); }, QStringLiteral("histograms.firing is -4, not a whole number")},
        {QStringLiteral("DROP TABLE contexts"), all, QStringLiteral("cannot read the contexts database (contexts): no such table: contexts")},
    };
    for (const Case& c : cases) {
        damagedCopy(full, damaged, c.sql);
        const ContextStore store(damaged, false);
        try {
            c.read(store);
            QFAIL(qPrintable(QStringLiteral("accepted after: ") + c.sql));
        } catch (const InputError& e) {
            QVERIFY2(e.message().startsWith(damaged + QStringLiteral(": ")) && e.message().contains(c.message),
                     qPrintable(c.sql + QStringLiteral(" -> ") + e.message()));
        }
    }
}

QTEST_GUILESS_MAIN(TestFeatureContexts)
#include "tst_feature_contexts.moc"
