#include "model/formats/llama2c_model.h"

#include "model/core/errors.h"
#include "model/formats/llama2c_file.h"
#include "model/tokenizers/lazy_tokenizer.h"
#include "model/tokenizers/tokenizer_loader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace attnscope {

namespace {

/// The weights of a llama2.c checkpoint: float32 arrays in the file, matrices nn.Linear's [out, in]
/// (viewed transposed in place).
class Llama2cWeightResolver : public WeightResolver {
public:
    explicit Llama2cWeightResolver(std::shared_ptr<const Llama2cFile> file) : file_(std::move(file)) {}

    GlobalWeights globals() override {
        GlobalWeights g;
        g.W_E = rows(Llama2cWeight::TokenEmbedding);
        g.ln_final_w = rows(Llama2cWeight::RmsFinal);
        g.W_U_T = rows(Llama2cWeight::Classifier); // the embedding when tied
        return g;
    }

    LayerWeights layer(int l) override {
        LayerWeights w;
        w.ln1_w = rows(Llama2cWeight::RmsAtt, l);
        w.W_Q = rows(Llama2cWeight::Wq, l).t();
        w.W_K = rows(Llama2cWeight::Wk, l).t();
        w.W_V = rows(Llama2cWeight::Wv, l).t();
        w.W_O = rows(Llama2cWeight::Wo, l).t();
        w.ln2_w = rows(Llama2cWeight::RmsFfn, l);
        w.W_gate = rows(Llama2cWeight::W1, l).t(); // run.c: silu(w1·x) ⊙ (w3·x), then w2
        w.W_in = rows(Llama2cWeight::W3, l).t();
        w.W_out = rows(Llama2cWeight::W2, l).t();
        return w;
    }

private:
    /// The array as stored: [shape[0], shape[1]] row-major (1-D arrays as one row).
    Weight rows(Llama2cWeight which, int layer = -1) const {
        const Llama2cTensorView t = file_->tensor(which, layer);
        const Eigen::Index r = t.shape.size() == 2 ? t.shape[0] : 1, c = t.shape.size() == 2 ? t.shape[1] : t.numel;
        return f32Weight(t.data, r, c);
    }
    std::shared_ptr<const Llama2cFile> file_;
};

} // namespace

ModelError llama2cMissingTokenizer(const QString& checkpointLabel) {
    return ModelError(checkpointLabel, QStringLiteral("no tokenizer: a llama2.c checkpoint needs one, give it with --tokenizer "
                                                      "tokenizer.bin (no file named tokenizer.bin is next to the checkpoint)"));
}

bool isLlama2cCheckpoint(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    try {
        parseLlama2cHeader(f.read(28), f.size(), QFileInfo(path).fileName());
        return true;
    } catch (const ModelError&) {
        return false;
    }
}

std::shared_ptr<const Model> loadLlama2cModel(const QString& path, const QString& tokenizerPath, const Progress& progress) {
    const QFileInfo fi(path);
    const QString label = fi.fileName();
    progress.step(0, 3, QStringLiteral("Reading %1").arg(label));
    const std::shared_ptr<const Llama2cFile> file = Llama2cFile::open(path, label);
    const Llama2cConfig& h = file->config();
    ModelConfig c;
    c.modelType = QStringLiteral("llama");
    c.architecture = QStringLiteral("llama2.c");
    c.n_layers = h.nLayers;
    c.n_heads = h.nHeads;
    c.n_kv_heads = h.nKvHeads;
    c.d_model = h.dim;
    c.d_head = h.headSize();
    c.d_mlp = h.hiddenDim;
    c.n_ctx = h.seqLen;
    c.d_vocab = h.vocabSize;
    c.norm = NormKind::RMSNorm;
    c.norm_eps = 1e-5; // run.c rmsnorm
    c.positions = PositionKind::Rotary;
    c.rope_layout = RopeLayout::Interleaved; // run.c rotates (2i, 2i + 1) within each head
    c.rotary_base = 10000.0;
    c.gatedMlp = true;
    c.activation = ActivationKind::Silu;
    c.tie_word_embeddings = h.sharedClassifier;
    c.bos_token_id = 1; // run.c: BOS = 1, EOS = 2
    c.eos_token_id = 2;

    QString tok = tokenizerPath;
    if (tok.isEmpty() && fi.dir().exists(QStringLiteral("tokenizer.bin"))) tok = fi.dir().filePath(QStringLiteral("tokenizer.bin"));
    if (tok.isEmpty()) throw llama2cMissingTokenizer(label);
    if (!QFileInfo(tok).isFile()) throw ModelError(tok, QStringLiteral("no such tokenizer file"));
    progress.step(1, 3, QStringLiteral("Reading the tokenizer"));
    std::unique_ptr<Tokenizer> tokenizer = loadTokenizerFile(tok, c.d_vocab);
    if (tokenizer->vocabSize() > c.d_vocab)
        throw ModelError(QFileInfo(tok).fileName(), QStringLiteral("the tokenizer has %1 tokens but %2 has vocab_size %3")
                                                        .arg(tokenizer->vocabSize()).arg(label).arg(c.d_vocab));

    ModelInfo info;
    info.name = fi.completeBaseName();
    info.path = path;
    info.weightFiles << label;
    info.fileBytes = fi.size();
    info.storageDtype = QStringLiteral("F32");
    info.tokenizerPath = tokenizerPath;
    progress.step(3, 3, QStringLiteral("Loaded %1").arg(info.name));
    return std::make_shared<const Model>(c, std::move(info), std::move(tokenizer), std::make_unique<Llama2cWeightResolver>(file));
}

} // namespace attnscope
