#pragma once
// The folder layout of Gemma Scope 2's Hugging Face repositories (google/gemma-scope-2-{270m,1b,4b,12b,27b}-{pt,it};
// the layout SAELens's gemma_3_sae_huggingface_loader and circuit-tracer's load_gemma_scope_2_transcoder /
// load_gemma_scope_2_clt read):
//   <site>[_all]/layer_L_width_W_l0_S[_affine]/params.safetensors (+ config.json)   one SAE or transcoder
//       site resid_post (model.layers.L.output = blocks.L.hook_resid_post), attn_out (self_attn.o_proj.input: the
//       heads concatenated before W_O = blocks.L.attn.hook_z), mlp_out (post_feedforward_layernorm.output =
//       blocks.L.hook_mlp_out, after Gemma's post-MLP norm), transcoder (reads pre_feedforward_layernorm.output =
//       blocks.L.ln2.hook_normalized, writes blocks.L.hook_mlp_out); "_all" holds every layer, the plain site a few;
//   clt/width_W_l0_S[_affine]/params_layer_{i}.safetensors        a cross-layer transcoder, one file per source layer
//   crosscoder/layer_A_B_…_width_W_l0_S/params_layer_{k}.safetensors   a crosscoder over the listed layers
// W is the number of features in thousands, truncated ("16k" = 2^14 = 16 384, "65k" = 65 536, "262k" = 262 144 or a
// CLT's 26 × 10 080 = 262 080 in all, "1m" = 2^20); S is an L0 label (small, medium, big).
// A site folder, a <site>/width_W_l0_S[_affine] path (which names a variant, not a folder) or the repository root
// opens as a set: every layer of one transcoder variant (a transcoder_set), or a CLT (openGemmaScope2).

#include "model/features/dictionary_set.h"

#include <QString>
#include <optional>
#include <vector>

namespace attnscope {

enum class GemmaScope2Site { ResidPost, AttnOut, MlpOut, Transcoder, Clt, Crosscoder };

/// The site of a folder named resid_post, resid_post_all, attn_out(_all), mlp_out(_all), transcoder(_all), clt or
/// crosscoder; nullopt for any other name.
std::optional<GemmaScope2Site> gemmaScope2Site(const QString& folderName);

/// A dictionary folder's name: layer_L_width_W_l0_S[_affine] (crosscoder: layer_A_B_…), or width_W_l0_S[_affine]
/// (a CLT's folder, and the variant part of any).
struct GemmaScope2Name {
    std::vector<int> layers; ///< one for an SAE or transcoder, the crosscoder's, none for a CLT
    QString width;           ///< "16k", "1m"
    qint64 widthLow = 0, widthHigh = 0; ///< the feature counts the width allows: [W·1000, (W+1)·1000) (m: ×10^6)
    QString l0;              ///< "small", "medium", "big"
    bool affine = false;     ///< "_affine": the transcoder has an affine_skip_connection
    /// "width_W_l0_S[_affine]": what the folders of one set share.
    QString variant() const;
    bool widthAllows(qint64 features) const { return features >= widthLow && features < widthHigh; }
};

/// Parses a folder name; nullopt when it is not one of Gemma Scope 2's.
std::optional<GemmaScope2Name> parseGemmaScope2Name(const QString& folderName);

/// {hookIn, hookOut} (TransformerLens names) of a single-layer site at `layer` (Clt: those of source layer `layer`;
/// Crosscoder: blocks.L.hook_resid_post).
std::pair<QString, QString> gemmaScope2SiteHooks(GemmaScope2Site site, int layer);

/// The site and name of the folder holding `file` (…/<site>/<name>/params.safetensors), when both are Gemma Scope 2's.
struct GemmaScope2Folder {
    GemmaScope2Site site;
    GemmaScope2Name name;
};
std::optional<GemmaScope2Folder> gemmaScope2FolderOf(const QString& file);

/// True when `path` is something openGemmaScope2 opens: a site folder, a <site>/width_…_l0_… variant path (existing
/// or not), a CLT or crosscoder folder, or a folder holding site folders (the repository root or a snapshot of it).
bool isGemmaScope2Path(const QString& path);

/// Opens `path` (see isGemmaScope2Path) as a DictionarySet, format "Gemma Scope 2":
///  - a layer_L_… folder: its one SAE or transcoder (readGemmaScopeFile); without params.safetensors ModelError says so;
///  - a transcoder site or a transcoder variant: kind transcoder_set, layers 0 … max of that variant, each
///    readGemmaScopeFile'd (a gap: ModelError naming the missing layer's folder);
///  - a CLT folder: kind cross_layer_transcoder (readGemmaScope2MultiLayer);
///  - a crosscoder folder: kind crosscoder (readGemmaScope2MultiLayer);
///  - a site or root holding more than one of those (or an SAE site with several layers): ModelError listing what is
///    there and the path that opens each (at most 12 named).
DictionarySet openGemmaScope2(const QString& path);

} // namespace attnscope
