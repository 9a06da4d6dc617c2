// Finding the models on the machine, without a GUI: header probes of every format (real files and
// synthetic ones, hostile variants included), canOpen's verdicts, the Hugging Face cache (refs/main vs
// newest mtime), Ollama manifests → blobs, LM Studio folders, the whole listing in a temporary HOME, and
// the model-name resolver the CLI and the window share.

#include "model/discovery/hf_cache.h"
#include "model/discovery/installed_models.h"
#include "model/discovery/model_folders.h"
#include "model/discovery/model_name.h"
#include "model/discovery/ollama_store.h"
#include "model/formats/gguf_probe.h"
#include "model/formats/hf_repo_folder.h"
#include "model/formats/model_loader.h"
#include "model/formats/model_probe.h"
#include "model/formats/open_support.h"
#include "support/fake_model_stores.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"
#include "support/time_scale.h"

#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestModelDiscovery : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void probesHuggingFaceFolder();
    void probesSafetensorsFiles();
    void probesRealGgufAndLlama2c();
    void probesSyntheticGguf();
    void rejectsHostileFiles();
    void canOpenGivesReasons();
    void hubCacheLocation();
    void hubCacheSnapshots();
    void ollamaManifests();
    void lmStudioFolder();
    void listsEverythingInstalled();
    void resolvesNames();
    void loaderNamesCachedModelsByRepo();

private:
    QTemporaryDir tmp_;
    FakeStores stores_;
};

void TestModelDiscovery::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QVERIFY(tmp_.isValid());
    stores_ = buildFakeStores(tmp_.path());
    useFakeStores(stores_);
}

void TestModelDiscovery::probesHuggingFaceFolder() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const ModelProbe p = probeModel(testdata("tiny-gpt2"));
    QVERIFY2(p.readable(), qPrintable(p.problem));
    QCOMPARE(p.format, ModelFormat::HfFolder);
    QCOMPARE(p.architecture, QString("gpt2"));
    QCOMPARE(p.dtype, QString("F32"));
    QCOMPARE(p.layers, 2);
    QCOMPARE(p.name, QString("tiny-gpt2"));
    QCOMPARE(p.bytes, QFileInfo(testdata("tiny-gpt2/model.safetensors")).size());
    qint64 elements = 0; // counted by the tests' own safetensors reader
    for (const FixtureTensor& t : readSafetensors(testdata("tiny-gpt2/model.safetensors"))) {
        qint64 n = 1;
        for (qint64 d : t.shape) n *= d;
        elements += n;
    }
    QCOMPARE(p.parameters, elements);
    QVERIFY(canOpen(p).ok);
    // config.json picked in a file dialog stands for its folder
    QCOMPARE(probeModel(testdata("tiny-gpt2/config.json")).format, ModelFormat::HfFolder);
}

void TestModelDiscovery::probesSafetensorsFiles() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const ModelProbe f16 = probeModel(testdata("tiny-gpt2/model.float16.safetensors"));
    QVERIFY2(f16.readable(), qPrintable(f16.problem));
    QCOMPARE(f16.format, ModelFormat::Safetensors);
    QCOMPARE(f16.dtype, QString("F16"));
    QCOMPARE(f16.architecture, QString("gpt2")); // config.json next to it
    QCOMPARE(probeModel(testdata("tiny-gpt2/model.bfloat16.safetensors")).dtype, QString("BF16"));
    // mixed dtypes are named as such
    QTemporaryDir dir;
    writeFile(dir.filePath("m.safetensors"),
              buildSafetensors({{"a", "F32", {2}, floatBytes({1, 2})}, {"b", "F16", {2}, QByteArray(4, '\0')}}));
    const ModelProbe mixed = probeModel(dir.filePath("m.safetensors"));
    QCOMPARE(mixed.dtype, QString("mixed (F16, F32)"));
    QCOMPARE(mixed.tensorTypes, QStringList({"F16", "F32"}));
    QCOMPARE(mixed.parameters, qint64(4));
    QVERIFY(!canOpen(mixed).ok); // no config.json: nothing says what the tensors are
    QVERIFY2(canOpen(mixed).reason.contains("config.json"), qPrintable(canOpen(mixed).reason));
}

void TestModelDiscovery::probesRealGgufAndLlama2c() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const ModelProbe g = probeModel(testdata("stories260K/stories260K.gguf"));
    QVERIFY2(g.readable(), qPrintable(g.problem));
    QCOMPARE(g.format, ModelFormat::Gguf);
    QCOMPARE(g.architecture, QString("llama"));
    QCOMPARE(g.layers, 5);
    QVERIFY2(g.tensorTypes.contains("F32"), qPrintable(g.tensorTypes.join(',')));
    QCOMPARE(g.bytes, qint64(1185376));

    const ModelProbe b = probeModel(testdata("stories260K/stories260K.bin"));
    QVERIFY2(b.readable(), qPrintable(b.problem));
    QCOMPARE(b.format, ModelFormat::Llama2c);
    QCOMPARE(b.layers, 5);
    QCOMPARE(b.dtype, QString("F32"));
    // dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads, vocab 512 (tied), seq 512: 264128 floats,
    // of which seq·head_size = 4096 are the RoPE tables
    QCOMPARE(b.parameters, qint64(260032));
    QCOMPARE(canOpen(b).ok, llama2cOpens());
    if (!llama2cOpens()) QVERIFY(canOpen(b).reason.contains("llama2.c"));
    QCOMPARE(canOpen(g).ok, openableGgufArchitectures().contains("llama"));
    if (!canOpen(g).ok) QVERIFY2(canOpen(g).reason.contains("GGUF"), qPrintable(canOpen(g).reason));
}

void TestModelDiscovery::probesSyntheticGguf() {
    const ModelProbe p = probeModel(stores_.ollamaBlob); // no extension: found by the magic
    QVERIFY2(p.readable(), qPrintable(p.problem));
    QCOMPARE(p.format, ModelFormat::Gguf);
    QCOMPARE(p.architecture, QString("llama"));
    QCOMPARE(p.name, QString("Llama 3.2 1B Instruct"));
    QCOMPARE(p.dtype, QString("Q4_K_M"));
    QCOMPARE(p.layers, 16);
    QCOMPARE(p.tensorTypes, QStringList({"F32", "Q4_K", "Q6_K"}));
    QCOMPARE(p.parameters, qint64(256 * 4 + 256 + 256 * 2));
    // without general.file_type the most common non-F32 tensor type is shown
    GgufSummary s;
    s.tensorTypes = {{"F32", 5}, {"Q6_K", 1}, {"Q8_0", 3}};
    QCOMPARE(s.quantization(), QString("Q8_0"));
    QCOMPARE(ggufFileTypeName(1), QString("F16"));
    QCOMPARE(ggufFileTypeName(32), QString("BF16"));
    QCOMPARE(ggmlTypeName(14), QString("Q6_K"));
    QCOMPARE(ggmlTypeName(99), QString()); // ggml never defined id 99
}

void TestModelDiscovery::rejectsHostileFiles() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QByteArray gguf = readFile(stores_.ollamaBlob);
    // every truncation inside the header is a clear error naming the file, never a crash
    const qsizetype headerEnd = gguf.indexOf("blk.0.ffn_down.weight") + 40;
    QElapsedTimer timer;
    timer.start();
    for (qsizetype n = 0; n < headerEnd; ++n) {
        const QString path = dir.filePath("cut.gguf");
        writeFile(path, gguf.left(n));
        const ModelProbe p = probeModel(path);
        QVERIFY2(!p.readable(), qPrintable(QString("truncated at %1 bytes was accepted").arg(n)));
        QVERIFY2(p.problem.startsWith("cut.gguf: "), qPrintable(p.problem));
    }
    QVERIFY(timer.elapsed() < 20000 * kTimeScale);
    auto patched = [&](qsizetype at, const QByteArray& bytes) {
        QByteArray b = gguf;
        b.replace(at, bytes.size(), bytes);
        writeFile(dir.filePath("bad.gguf"), b);
        return probeModel(dir.filePath("bad.gguf")).problem;
    };
    // the messages of the validating reader (model/formats/gguf_file.h), which the probe uses
    QCOMPARE(patched(4, QByteArray("\1\0\0\0", 4)), QString("bad.gguf: GGUF version 1 is not supported (only versions 2 and 3)"));
    QVERIFY(patched(4, QByteArray("\0\0\0\3", 4)).contains("this looks like a big-endian file"));
    QCOMPARE(patched(4, QByteArray("\7\0\0\0", 4)), QString("bad.gguf: GGUF version 7 is not supported (only versions 2 and 3)"));
    QVERIFY(patched(8, QByteArray("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)).contains("tensor_count 9223372036854775807 cannot fit"));
    // a string length far past the end of the file
    QVERIFY(patched(24, QByteArray("\xff\xff\xff\xff\xff\xff\0\0", 8)).contains("is past the end of the file"));

    writeFile(dir.filePath("random.bin"), QByteArray(1000, '\x7f'));
    QVERIFY(probeModel(dir.filePath("random.bin")).problem.contains("not a llama2.c checkpoint"));
    const QByteArray stories = readFile(testdata("stories260K/stories260K.bin"));
    writeFile(dir.filePath("short.bin"), stories.left(stories.size() - 4));
    const QString shortProblem = probeModel(dir.filePath("short.bin")).problem;
    QVERIFY2(shortProblem.contains("implies 1056540 bytes, the file has 1056536"), qPrintable(shortProblem));
    writeFile(dir.filePath("notes.txt"), "hello");
    QVERIFY(probeModel(dir.filePath("notes.txt")).problem.contains("not a model file"));
    QVERIFY(probeModel(dir.filePath("absent")).problem.contains("no such file or folder"));
    QDir(dir.path()).mkdir("empty");
    QVERIFY(probeModel(dir.filePath("empty")).problem.contains("no config.json"));
    QDir(dir.path()).mkdir("torch");
    writeFile(dir.filePath("torch/config.json"), R"({"model_type": "gpt2"})");
    writeFile(dir.filePath("torch/pytorch_model.bin"), "PK");
    const ModelProbe torch = probeModel(dir.filePath("torch"));
    QVERIFY2(torch.problem.contains("pytorch_model.bin"), qPrintable(torch.problem));
    QCOMPARE(torch.architecture, QString("gpt2"));
    writeFile(dir.filePath("torch/config.json"), "{not json");
    QVERIFY(probeModel(dir.filePath("torch")).problem.contains("config.json: not valid JSON"));
    // the probe never writes
    QCOMPARE(readFile(testdata("stories260K/stories260K.bin")), stories);
}

void TestModelDiscovery::canOpenGivesReasons() {
    ModelProbe p;
    p.format = ModelFormat::HfFolder;
    p.architecture = "mamba";
    p.tensorTypes = {"F32"};
    OpenVerdict v = canOpen(p);
    QVERIFY(!v.ok);
    QCOMPARE(v.reason, QString("model type 'mamba' is not supported yet (supported: %1)").arg(openableHfModelTypes().join(", ")));
    p.architecture = "gpt2";
    p.tensorTypes = {"F32", "I64"};
    v = canOpen(p);
    QVERIFY(!v.ok);
    QVERIFY2(v.reason.startsWith("weights stored as I64"), qPrintable(v.reason));
    p.tensorTypes = {"BF16"};
    QVERIFY(canOpen(p).ok);
    p.problem = "x.safetensors: bad header";
    QCOMPARE(canOpen(p).reason, QString("x.safetensors: bad header"));
    ModelProbe unknown;
    QVERIFY(!canOpen(unknown).ok);
    // the Llama folder of the fake cache: opens exactly when llama is a supported model type
    const ModelProbe llama = probeModel(stores_.tinyLlamaSnapshot);
    QVERIFY2(llama.readable(), qPrintable(llama.problem));
    QCOMPARE(llama.dtype, QString("F16"));
    QCOMPARE(llama.layers, 22);
    QCOMPARE(canOpen(llama).ok, openableHfModelTypes().contains("llama"));
    if (!canOpen(llama).ok) QVERIFY(canOpen(llama).reason.contains("'llama'"));
}

void TestModelDiscovery::hubCacheLocation() {
    QCOMPARE(hfHubCacheDir(), stores_.hubCache);
    qputenv("HF_HUB_CACHE", "/x/hub-cache");
    QCOMPARE(hfHubCacheDir(), QString("/x/hub-cache"));
    qunsetenv("HF_HUB_CACHE");
    qunsetenv("HF_HOME");
    QCOMPARE(hfHubCacheDir(), stores_.home + "/.cache/huggingface/hub");
    qputenv("XDG_CACHE_HOME", "/x/cache");
    QCOMPARE(hfHubCacheDir(), QString("/x/cache/huggingface/hub"));
    useFakeStores(stores_);
    QCOMPARE(ollamaModelsDir(), stores_.ollama);
    qunsetenv("OLLAMA_MODELS");
    QCOMPARE(ollamaModelsDir(), stores_.home + "/.ollama/models");
    useFakeStores(stores_);
}

void TestModelDiscovery::hubCacheSnapshots() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QList<HfCachedModel> all = listHfCache(stores_.hubCache);
    QCOMPARE(all.size(), 2);
    QCOMPARE(all[0].repoId, QString("TinyLlama/TinyLlama-1.1B-Chat-v1.0"));
    QCOMPARE(all[0].snapshot, stores_.tinyLlamaSnapshot); // no refs/main: the newest mtime
    QCOMPARE(all[1].repoId, QString("gpt2"));
    QCOMPARE(all[1].snapshot, stores_.gpt2Newest); // refs/main wins over the newer mtime
    QCOMPARE(hfRepoFolderName("TinyLlama/TinyLlama-1.1B-Chat-v1.0"), QString("models--TinyLlama--TinyLlama-1.1B-Chat-v1.0"));
    QCOMPARE(hfRepoIdForPath(stores_.gpt2Newest + "/config.json"), QString("gpt2"));
    QCOMPARE(hfRepoIdForPath(stores_.tinyLlamaSnapshot), QString("TinyLlama/TinyLlama-1.1B-Chat-v1.0"));
    QCOMPARE(hfRepoIdForPath(testdata("tiny-gpt2")), QString());
    QCOMPARE(hfRepoIdForPath("/x/models--gpt2/blobs/abc"), QString()); // a blob, not a snapshot
    QCOMPARE(hfRepoIdOfFolderName("models--TinyLlama--TinyLlama-1.1B-Chat-v1.0"), QString("TinyLlama/TinyLlama-1.1B-Chat-v1.0"));
    QCOMPARE(hfRepoIdOfFolderName("models--"), QString());
    QCOMPARE(hfRepoIdOfFolderName("datasets--gpt2"), QString());
    // refs/main naming a snapshot that is gone: back to the newest mtime
    QTemporaryDir dir;
    const QString repo = dir.filePath("models--a--b");
    QVERIFY(QDir().mkpath(repo + "/snapshots/abc1234"));
    QVERIFY(QDir().mkpath(repo + "/refs"));
    writeFile(repo + "/refs/main", "def5678");
    QCOMPARE(hfNewestSnapshot(repo), repo + "/snapshots/abc1234");
    QString problem;
    QVERIFY(QDir(repo + "/snapshots/abc1234").removeRecursively());
    QCOMPARE(hfNewestSnapshot(repo, &problem), QString());
    QVERIFY2(problem.contains("no snapshot"), qPrintable(problem));
    const HfCachedModel missing = findHfCachedModel(stores_.hubCache, "openai/whisper");
    QVERIFY(missing.snapshot.isEmpty());
    QVERIFY2(missing.problem.contains("models--openai--whisper"), qPrintable(missing.problem));
}

void TestModelDiscovery::ollamaManifests() {
    const QList<OllamaModel> all = listOllamaModels(stores_.ollama);
    QCOMPARE(all.size(), 2);
    QCOMPARE(all[0].name, QString("broken:latest"));
    QVERIFY2(all[0].problem.contains("blob") && all[0].problem.contains("missing"), qPrintable(all[0].problem));
    QCOMPARE(all[1].name, QString("llama3.2:1b"));
    QCOMPARE(all[1].blob, stores_.ollamaBlob);
    QCOMPARE(findOllamaModel(stores_.ollama, "llama3.2:1b").blob, stores_.ollamaBlob);
    QCOMPARE(findOllamaModel(stores_.ollama, "library/llama3.2:1b").blob, stores_.ollamaBlob);
    QCOMPARE(findOllamaModel(stores_.ollama, "registry.ollama.ai/library/llama3.2:1b").blob, stores_.ollamaBlob);
    const OllamaModel latest = findOllamaModel(stores_.ollama, "llama3.2"); // means :latest, which is not pulled
    QVERIFY(latest.blob.isEmpty());
    QVERIFY2(latest.problem.contains("ollama pull llama3.2"), qPrintable(latest.problem));
    QVERIFY(findOllamaModel(stores_.ollama, "../../etc:passwd").problem.contains("not an Ollama model name"));
    // a digest that tries to leave blobs/
    QTemporaryDir dir;
    writeFile(dir.filePath("m"), R"({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:../../x"}]})");
    QVERIFY_THROWS_EXCEPTION(ModelError, ollamaBlobForManifest(stores_.ollama, dir.filePath("m")));
    writeFile(dir.filePath("m"), R"({"layers": []})");
    QVERIFY_THROWS_EXCEPTION(ModelError, ollamaBlobForManifest(stores_.ollama, dir.filePath("m")));
}

void TestModelDiscovery::lmStudioFolder() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QCOMPARE(lmStudioModelDirs().first(), stores_.lmStudio);
    QCOMPARE(scanModelFolder(stores_.lmStudio), QStringList{stores_.lmStudioGguf});
    // an HF folder is one entry, its files are not listed; depth is limited; symlink loops end
    QTemporaryDir dir;
    QVERIFY(QDir().mkpath(dir.filePath("a/hf")));
    copyFiles(testdata("tiny-gpt2"), dir.filePath("a/hf"), {"config.json", "model.safetensors", "vocab.json", "merges.txt"});
    writeFile(dir.filePath("a/x.gguf"), "GGUF");
    QVERIFY(QDir().mkpath(dir.filePath("1/2/3/4/5/6")));
    writeFile(dir.filePath("1/2/3/4/5/6/deep.gguf"), "GGUF");
    QVERIFY(QFile::link(dir.path(), dir.filePath("a/loop")));
    QCOMPARE(scanModelFolder(dir.path()), QStringList({dir.filePath("a/hf"), dir.filePath("a/x.gguf")}));
}

void TestModelDiscovery::listsEverythingInstalled() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir user;
    QVERIFY(QDir().mkpath(user.filePath("mine")));
    copyFiles(testdata("tiny-gpt2"), user.filePath("mine"), {"config.json", "model.safetensors", "vocab.json", "merges.txt"});
    const QList<ModelStoreLocation> locs = modelStoreLocations({user.path()});
    QCOMPARE(locs.first().dir, stores_.hubCache);
    QVERIFY(locs.first().exists);
    QCOMPARE(locs.last().source, ModelSource::UserFolder);
    qint64 lastDone = -1, lastTotal = -1;
    Progress progress;
    progress.report = [&](qint64 d, qint64 t, const QString&) { lastDone = d; lastTotal = t; };
    const QList<InstalledModel> all = findInstalledModels({user.path()}, progress);
    QStringList names;
    for (const InstalledModel& m : all) names << modelSourceName(m.source) + ": " + m.name;
    QCOMPARE(names, QStringList({"Hugging Face cache: TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Hugging Face cache: gpt2",
                                 "Ollama: broken:latest", "Ollama: llama3.2:1b",
                                 "LM Studio: lmstudio-community/Qwen2-0.5B-Instruct-GGUF/qwen2-0_5b-instruct-q4_k_m.gguf",
                                 "Folder: mine"}));
    QCOMPARE(lastDone, qint64(6));
    QCOMPARE(lastTotal, qint64(6));
    const InstalledModel& gpt2 = all[1];
    QCOMPARE(gpt2.openName, QString("gpt2"));
    QCOMPARE(gpt2.path, stores_.gpt2Newest);
    QCOMPARE(gpt2.probe.architecture, QString("gpt2"));
    QVERIFY(gpt2.verdict.ok);
    QVERIFY(!all[2].verdict.ok);
    QVERIFY2(all[2].verdict.reason.contains("missing"), qPrintable(all[2].verdict.reason));
    QCOMPARE(all[3].openName, QString("ollama:llama3.2:1b"));
    QCOMPARE(all[3].probe.dtype, QString("Q4_K_M"));
    QCOMPARE(all[4].probe.architecture, QString("qwen2"));
    QVERIFY(all[5].verdict.ok);
    // cancellation
    Progress cancelled;
    cancelled.isCancelled = [] { return true; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, findInstalledModels({}, cancelled));
}

void TestModelDiscovery::resolvesNames() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QCOMPARE(resolveModelName("gpt2").path, stores_.gpt2Newest);
    QCOMPARE(resolveModelName("hf:gpt2").path, stores_.gpt2Newest);
    QCOMPARE(resolveModelName("TinyLlama/TinyLlama-1.1B-Chat-v1.0").path, stores_.tinyLlamaSnapshot);
    QCOMPARE(resolveModelName("ollama:llama3.2:1b").path, stores_.ollamaBlob);
    QCOMPARE(resolveModelName("").path, QString(":/demo"));
    QCOMPARE(resolveModelName("demo").path, QString(":/demo"));
    // demo-variant is bundled in the attnscope executable (tst_cli_stitch), not in this test's binary
    QCOMPARE(resolveModelName("demo-variant").error,
             QString("demo-variant: no such file or folder, and this program has no bundled demo-variant"));
    QCOMPARE(resolveModelName(testdata("tiny-gpt2")).path, testdata("tiny-gpt2"));
    const ResolvedModel none = resolveModelName("someone/nothing");
    QVERIFY(!none.ok());
    QVERIFY2(none.error.contains("someone/nothing: no such file or folder, and not in the Hugging Face cache") &&
                 none.error.contains(stores_.hubCache),
             qPrintable(none.error));
    QVERIFY(resolveModelName("ollama:nothing:7b").error.contains("ollama pull nothing:7b"));
    QVERIFY(resolveModelName("./no/such/path").error.contains("no such file or folder"));
    // a local folder named like a repo id wins over the cache
    QTemporaryDir dir;
    QVERIFY(QDir::setCurrent(dir.path()));
    QVERIFY(QDir().mkdir("gpt2"));
    QCOMPARE(resolveModelName("gpt2").path, QString("gpt2"));
    QCOMPARE(resolveModelName("hf:gpt2").path, stores_.gpt2Newest);
    QVERIFY(QDir::setCurrent(QDir::tempPath()));
}

void TestModelDiscovery::loaderNamesCachedModelsByRepo() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const auto model = loadModel(resolveModelName("gpt2").path);
    QCOMPARE(model->info().name, QString("gpt2"));
    QCOMPARE(model->config().n_layers, 2);
    QCOMPARE(loadModel(testdata("tiny-gpt2"))->info().name, QString("tiny-gpt2"));
}

QTEST_GUILESS_MAIN(TestModelDiscovery)
#include "tst_model_discovery.moc"
