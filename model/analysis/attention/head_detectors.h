#pragma once
// Attention-head detectors: one number per head saying how much its pattern looks like a known kind of
// head. Each detector is a "detection pattern" D[i][j] ∈ {0,1} (which keys a query i should attend
// to), as in TransformerLens head_detector.py (get_previous_token_head_detection_pattern,
// get_duplicate_token_head_detection_pattern, get_induction_head_detection_pattern), scored with its
// "mul" measure Σ pattern⊙D — but averaged only over the query rows whose D row is non-empty (TL divides
// by all S rows), so a perfect head scores exactly 1 and a head that never matches scores 0.
// Induction heads: Olsson et al. 2022, "In-context Learning and Induction Heads"; the repeated random
// sequence [BOS] + R + R follows the ARENA/TransformerLens induction-score recipe.

#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace attnscope {

enum class HeadDetector {
    PreviousToken,  ///< D[i][i-1] = 1 for i >= 1
    DuplicateToken, ///< D[i][j] = 1 for j < i with token[j] == token[i]
    Induction,      ///< D[i][j+1] = 1 for j < i with token[j] == token[i] (the token after an earlier occurrence)
    FirstToken      ///< D[i][0] = 1 for i >= 1 (attention to BOS / the first position)
};

/// Scores of one detector for every head.
struct HeadScores {
    HeadDetector detector = HeadDetector::PreviousToken;
    Matrix scores;     ///< [n_layers, n_heads], each in [0, 1]; NaN when nQueries == 0
    int nQueries = 0;  ///< query positions that entered the mean (rows of D that are non-empty)
};

/// Short display name, e.g. "previous-token".
QString headDetectorName(HeadDetector detector);
/// The formula as text for tooltips and docs, e.g. "mean over query positions i ≥ 1 of pattern[i][i−1]".
QString headDetectorFormula(HeadDetector detector);

/// T(i), the keys query i of `tokens` should attend to under `detector` (row i of its detection pattern D, see
/// HeadDetector), ascending and without repeats; empty when the row is empty. The head metrics
/// (head_metrics.h) read the previous-token and induction rows from here.
std::vector<int> headDetectorTargets(HeadDetector detector, std::span<const int> tokens, int i);

/// Scores every head of the cache: mean over query positions i with a non-empty target set T(i) of
/// Σ_{j∈T(i)} pattern[i][j] (T from the detector's D above, built from cache.tokens).
/// The induction detector is meant for a cache of repeatedRandomSequence(): there T(i) = {i − T + 1} for
/// every second-half query and is empty elsewhere. Throws nothing; an empty T everywhere gives NaN scores.
HeadScores scoreHeads(const ActivationCache& cache, HeadDetector detector);

/// Several detectors in one pass over the layers, in the order given: cache.layer(l) is fetched once per
/// layer (so a residuals-only cache recomputes each layer once) and handed to `onLayer` (if set) after its
/// scores are added — e.g. to fill a head grid as layers become available. Numbers are identical to
/// scoreHeads(cache, d). Progress units: layers; throws Cancelled when progress says so.
std::vector<HeadScores> scoreHeads(const ActivationCache& cache, const std::vector<HeadDetector>& detectors,
                                   const Progress& progress = {},
                                   const std::function<void(int layer, const std::shared_ptr<const LayerCache>&)>& onLayer = {});

/// A repeated random token sequence for the induction detector.
struct RepeatedSequence {
    std::vector<int> tokens; ///< [offset + 2T]
    int repeatLength = 0;    ///< T
    int offset = 0;          ///< 1 with a BOS, else 0; the first copy of R starts here
};

/// [BOS] + R + R with R = `repeatLength` distinct random token ids (std::mt19937 seeded with `seed`, draws
/// taken modulo the range so the sequence is the same on every platform), ids in [0, d_vocab) excluding
/// the BOS and EOS ids. repeatLength <= 0 means min(50, (n_ctx − 1) / 2). No BOS when cfg.bos_token_id < 0
/// and `bos` < 0. Throws InputError if the sequence cannot fit n_ctx or the vocabulary is too small.
RepeatedSequence repeatedRandomSequence(const ModelConfig& cfg, int bos = -1, int repeatLength = 0, std::uint32_t seed = 0);

/// Runs the model on repeatedRandomSequence(cfg, bos) and scores induction heads (what the app's
/// "induction" detector shows). Throws as runForward and repeatedRandomSequence do.
HeadScores inductionScores(const Model& model, int bos = -1, const Progress& progress = {});

} // namespace attnscope
