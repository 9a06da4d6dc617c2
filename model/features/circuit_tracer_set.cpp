#include "model/features/circuit_tracer_set.h"

#include "model/core/errors.h"
#include "model/features/dictionary_tensors.h"
#include "model/features/gemma_scope_params.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <map>

#ifdef ATTNSCOPE_HAVE_YAML_CPP
#include <yaml-cpp/yaml.h>
#endif

namespace attnscope {

bool isCircuitTracerFolder(const QString& folder) {
    return QFileInfo(folder).isDir() && QDir(folder).exists(QStringLiteral("config.yaml"));
}

#ifndef ATTNSCOPE_HAVE_YAML_CPP
DictionarySet readCircuitTracerSet(const QString& folder) {
    throw ModelError(QDir::toNativeSeparators(QDir(folder).filePath(QStringLiteral("config.yaml"))),
                     QStringLiteral("this build reads no config.yaml (built without yaml-cpp; install libyaml-cpp-dev and rebuild)"));
}
#else

namespace {

/// The file a config.yaml entry names, inside `dir`: a relative or absolute path, or an hf:// URI looked up by its
/// path within the repository and then by its file name.
QString resolveEntry(const QDir& dir, const QString& entry, const QString& cfgLabel) {
    QString p = entry;
    if (p.startsWith(QLatin1String("hf://"))) {
        p = p.mid(5);
        if (const int q = p.indexOf(QLatin1Char('?')); q >= 0) p.truncate(q);
        const QStringList parts = p.split(QLatin1Char('/'));
        const QString inRepo = parts.mid(2).join(QLatin1Char('/'));
        for (const QString& c : {inRepo, QFileInfo(inRepo).fileName()})
            if (!c.isEmpty() && QFileInfo::exists(dir.filePath(c))) return dir.filePath(c);
        throw ModelError(cfgLabel, QStringLiteral("transcoder %1 is not in the folder (looked for %2): download the repository's "
                                                  "files next to config.yaml").arg(entry, inRepo));
    }
    const QString full = QFileInfo(p).isAbsolute() ? p : dir.filePath(p);
    if (!QFileInfo::exists(full)) throw ModelError(cfgLabel, QStringLiteral("transcoder file %1 does not exist").arg(entry));
    return full;
}

/// "blocks.{layer}.hook_resid_pre" or "hook_resid_mid" → the hook of layer l.
QString layerHook(const QString& pattern, int l) {
    QString h = pattern;
    h.replace(QStringLiteral("{layer}"), QString::number(l));
    return h.startsWith(QLatin1String("blocks.")) ? h : QStringLiteral("blocks.%1.%2").arg(l).arg(h);
}

struct SetConfig {
    QString kind;
    QString input, output;
    QString activation;
    QString scan; ///< what the set was made for ("gemma-2-2b"), if config.yaml says
    int k = 0;
    std::vector<QString> files; ///< per layer, resolved
};

SparseCoder readLayerFile(const QString& path, int layer, const SetConfig& c) {
    const QString label = QDir::toNativeSeparators(path);
    if (isGemmaScopeFile(path)) {
        SparseCoder sae = readGemmaScopeFile(path, layerHook(c.input, layer));
        sae.hookOut = layerHook(c.output, layer);
        sae.format = QStringLiteral("circuit-tracer");
        return sae;
    }
    DictionaryTensors t(SafetensorsFile::open(path, label));
    SparseCoder sae;
    sae.path = path;
    sae.format = QStringLiteral("circuit-tracer");
    sae.owners.push_back(t.owner());
    const auto be = t.shape(QStringLiteral("b_enc")), bd = t.shape(QStringLiteral("b_dec"));
    if (!be || !bd || be->size() != 1 || bd->size() != 1 || (*be)[0] < 1 || (*bd)[0] < 1)
        throw ModelError(label, QStringLiteral("b_enc [d_transcoder] and b_dec [d_model] are required (has: %1)").arg(t.names().join(QStringLiteral(", "))));
    const std::int64_t dt = (*be)[0], dm = (*bd)[0];
    const QString ctx = QStringLiteral("b_enc and b_dec (d_transcoder %1, d_model %2)").arg(dt).arg(dm);
    sae.d_in = sae.d_out = int(dm);
    sae.d_sae = int(dt);
    sae.hookIn = layerHook(c.input, layer);
    sae.hookOut = layerHook(c.output, layer);
    sae.W_enc = t.weight(QStringLiteral("W_enc"), {dt, dm}, dm, dt, true, ctx);
    sae.W_dec = t.weight(QStringLiteral("W_dec"), {dt, dm}, dt, dm, false, ctx);
    sae.b_enc = t.weight(QStringLiteral("b_enc"), {dt}, 1, dt, false, ctx);
    sae.b_dec = t.weight(QStringLiteral("b_dec"), {dm}, 1, dm, false, ctx);
    sae.W_skip = t.optionalWeight(QStringLiteral("W_skip"), {dm, dm}, dm, dm, true, ctx);
    sae.threshold = t.optionalWeight(QStringLiteral("activation_function.threshold"), {dt}, 1, dt, false, ctx);
    sae.relu = false; // circuit-tracer's JumpReLU and TopK take pre as it is
    QString act = c.activation.isEmpty() ? (sae.threshold.empty() ? QStringLiteral("relu") : QStringLiteral("jump_relu")) : c.activation;
    if (act == QLatin1String("relu")) {
        sae.activation = FeatureActivation::ReLU;
        sae.relu = true;
    } else if (act == QLatin1String("jump_relu") || act == QLatin1String("jumprelu")) {
        sae.activation = FeatureActivation::JumpReLU;
        if (sae.threshold.empty()) throw ModelError(label, QStringLiteral("activation jump_relu needs activation_function.threshold"));
    } else if (act == QLatin1String("topk")) {
        sae.activation = FeatureActivation::TopK;
        if (c.k < 1 || c.k > dt) throw ModelError(label, QStringLiteral("k = %1 must be between 1 and d_transcoder = %2").arg(c.k).arg(dt));
        sae.k = c.k;
    } else {
        throw ModelError(label, QStringLiteral("activation \"%1\" is not supported (relu, jump_relu, topk)").arg(act));
    }
    sae.architecture = sae.W_skip.empty() ? QStringLiteral("transcoder") : QStringLiteral("skip_transcoder");
    return sae;
}

DictionarySet readCrossLayer(const QDir& dir, const SetConfig& c, const QString& cfgLabel) {
    DictionarySet set;
    set.kind = QStringLiteral("cross_layer_transcoder");
    int n = 0;
    while (QFileInfo::exists(dir.filePath(QStringLiteral("W_enc_%1.safetensors").arg(n)))) ++n;
    if (n == 0) throw ModelError(cfgLabel, QStringLiteral("a cross_layer_transcoder folder needs W_enc_0.safetensors, W_dec_0.safetensors, …"));
    set.crossLayerDecoders.resize(size_t(n));
    for (int i = 0; i < n; ++i) {
        const QString encPath = dir.filePath(QStringLiteral("W_enc_%1.safetensors").arg(i));
        const QString decPath = dir.filePath(QStringLiteral("W_dec_%1.safetensors").arg(i));
        if (!QFileInfo::exists(decPath)) throw ModelError(cfgLabel, QStringLiteral("W_dec_%1.safetensors is missing").arg(i));
        DictionaryTensors enc(SafetensorsFile::open(encPath, QDir::toNativeSeparators(encPath)));
        DictionaryTensors dec(SafetensorsFile::open(decPath, QDir::toNativeSeparators(decPath)));
        const QString si = QString::number(i);
        const auto be = enc.shape(QStringLiteral("b_enc_") + si), bd = enc.shape(QStringLiteral("b_dec_") + si);
        if (!be || !bd || be->size() != 1 || bd->size() != 1 || (*be)[0] < 1 || (*bd)[0] < 1)
            throw ModelError(enc.label(), QStringLiteral("b_enc_%1 and b_dec_%1 are required").arg(i));
        const std::int64_t dt = (*be)[0], dm = (*bd)[0];
        if (i > 0 && (dt != set.coders[0].d_sae || dm != set.coders[0].d_in))
            throw ModelError(enc.label(), QStringLiteral("layer %1 has d_transcoder %2 and d_model %3 but layer 0 has %4 and %5")
                                              .arg(i).arg(dt).arg(dm).arg(set.coders[0].d_sae).arg(set.coders[0].d_in));
        const QString ctx = QStringLiteral("b_enc_%1 and b_dec_%1 (d_transcoder %2, d_model %3)").arg(i).arg(dt).arg(dm);
        SparseCoder sae;
        sae.path = encPath;
        sae.format = QStringLiteral("circuit-tracer");
        sae.architecture = QStringLiteral("cross_layer_transcoder");
        sae.owners = {enc.owner(), dec.owner()};
        sae.d_in = sae.d_out = int(dm);
        sae.d_sae = int(dt);
        sae.hookIn = layerHook(c.input, i);
        sae.hookOut = layerHook(c.output, i);
        sae.W_enc = enc.weight(QStringLiteral("W_enc_") + si, {dt, dm}, dm, dt, true, ctx);
        sae.b_enc = enc.weight(QStringLiteral("b_enc_") + si, {dt}, 1, dt, false, ctx);
        sae.b_dec = enc.weight(QStringLiteral("b_dec_") + si, {dm}, 1, dm, false, ctx);
        sae.threshold = enc.optionalWeight(QStringLiteral("threshold_") + si, {dt}, 1, dt, false, ctx);
        sae.activation = sae.threshold.empty() ? FeatureActivation::ReLU : FeatureActivation::JumpReLU;
        sae.relu = sae.threshold.empty();
        const std::int64_t outs = n - i;
        const Weight whole = dec.weight(QStringLiteral("W_dec_") + si, {dt, outs, dm}, dt, outs * dm, false,
                                        QStringLiteral("%1 layers after layer %2 (d_transcoder %3, d_model %4)").arg(outs).arg(i).arg(dt).arg(dm));
        for (std::int64_t j = 0; j < outs; ++j) set.crossLayerDecoders[size_t(i)].push_back(whole.colBlock(j * dm, dm));
        sae.W_dec = set.crossLayerDecoders[size_t(i)][0];
        set.coders.push_back(std::move(sae));
    }
    return set;
}

} // namespace

DictionarySet readCircuitTracerSet(const QString& folder) {
    const QDir dir(folder);
    const QString cfgLabel = QDir::toNativeSeparators(dir.filePath(QStringLiteral("config.yaml")));
    const QByteArray text = readSmallFile(dir.filePath(QStringLiteral("config.yaml")), cfgLabel, 1 << 20);
    SetConfig c;
    YAML::Node root;
    try {
        root = YAML::Load(text.toStdString());
    } catch (const YAML::Exception& e) {
        throw ModelError(cfgLabel, QStringLiteral("not valid YAML: %1").arg(QString::fromStdString(e.what())));
    }
    if (!root.IsMap()) throw ModelError(cfgLabel, QStringLiteral("not a YAML mapping"));
    auto str = [&](const char* key) -> QString {
        const YAML::Node n = root[key];
        if (!n || n.IsNull()) return {};
        if (!n.IsScalar()) throw ModelError(cfgLabel, QStringLiteral("\"%1\" must be a string").arg(QLatin1String(key)));
        return QString::fromStdString(n.as<std::string>());
    };
    try {
        c.kind = str("model_kind");
        c.input = str("feature_input_hook");
        c.output = str("feature_output_hook");
        c.activation = str("activation");
        c.scan = str("scan");
        if (root["k"] && !root["k"].IsNull()) c.k = root["k"].as<int>();
    } catch (const YAML::Exception& e) {
        throw ModelError(cfgLabel, QStringLiteral("bad value: %1").arg(QString::fromStdString(e.what())));
    }
    if (c.input.isEmpty() || c.output.isEmpty())
        throw ModelError(cfgLabel, QStringLiteral("feature_input_hook and feature_output_hook are required"));
    if (c.kind == QLatin1String("cross_layer_transcoder")) {
        DictionarySet set = readCrossLayer(dir, c, cfgLabel);
        set.path = folder;
        set.format = QStringLiteral("circuit-tracer");
        set.scan = c.scan;
        return set;
    }
    if (!c.kind.isEmpty() && c.kind != QLatin1String("transcoder_set"))
        throw ModelError(cfgLabel, QStringLiteral("model_kind \"%1\" is not transcoder_set or cross_layer_transcoder").arg(c.kind));
    std::map<int, QString> byLayer;
    const YAML::Node list = root["transcoders"];
    if (list && list.IsSequence()) {
        for (std::size_t i = 0; i < list.size(); ++i) {
            const YAML::Node e = list[i];
            int layer = int(i);
            QString file;
            try {
                if (e.IsMap()) { // older configs: {id, layer, filepath}
                    layer = e["layer"].as<int>();
                    file = QString::fromStdString(e["filepath"].as<std::string>());
                } else {
                    file = QString::fromStdString(e.as<std::string>());
                }
            } catch (const YAML::Exception&) {
                throw ModelError(cfgLabel, QStringLiteral("transcoders entry %1 is neither a path nor {layer, filepath}").arg(i));
            }
            if (layer < 0 || layer > 4096) throw ModelError(cfgLabel, QStringLiteral("transcoders entry %1 has layer %2").arg(i).arg(layer));
            if (byLayer.count(layer)) throw ModelError(cfgLabel, QStringLiteral("two transcoders for layer %1").arg(layer));
            byLayer[layer] = resolveEntry(dir, file, cfgLabel);
        }
    } else {
        for (int l = 0; QFileInfo::exists(dir.filePath(QStringLiteral("layer_%1.safetensors").arg(l))); ++l)
            byLayer[l] = dir.filePath(QStringLiteral("layer_%1.safetensors").arg(l));
        const QStringList all = dir.entryList({QStringLiteral("layer_*.safetensors")}, QDir::Files);
        if (int(all.size()) != int(byLayer.size()))
            throw ModelError(cfgLabel, QStringLiteral("layer files are not numbered 0 … %1 without gaps (found %2)")
                                           .arg(int(all.size()) - 1).arg(all.join(QStringLiteral(", "))));
    }
    if (byLayer.empty()) throw ModelError(cfgLabel, QStringLiteral("no transcoders: neither a transcoders list nor layer_0.safetensors"));
    const int maxLayer = byLayer.rbegin()->first;
    for (int l = 0; l <= maxLayer; ++l)
        if (!byLayer.count(l))
            throw ModelError(cfgLabel, QStringLiteral("no transcoder for layer %1 (each layer 0 … %2 needs one)").arg(l).arg(maxLayer));
    DictionarySet set;
    set.path = folder;
    set.format = QStringLiteral("circuit-tracer");
    set.kind = QStringLiteral("transcoder_set");
    set.scan = c.scan;
    for (const auto& [l, file] : byLayer) {
        SparseCoder sae = readLayerFile(file, l, c);
        if (l > 0 && (sae.d_sae != set.coders[0].d_sae || sae.d_in != set.coders[0].d_in))
            throw ModelError(QDir::toNativeSeparators(file), QStringLiteral("d_transcoder %1 and d_model %2 differ from layer 0's %3 and %4")
                                                                 .arg(sae.d_sae).arg(sae.d_in).arg(set.coders[0].d_sae).arg(set.coders[0].d_in));
        set.coders.push_back(std::move(sae));
    }
    return set;
}
#endif

} // namespace attnscope
