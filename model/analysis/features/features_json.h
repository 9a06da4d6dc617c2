#pragma once
// The "features" and "feature" objects of the CLI's --dump-json (README "Features on the command line").

#include "model/analysis/features/feature_activations.h"
#include "model/analysis/features/feature_patching.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/tokenizers/tokenizer.h"

#include <QJsonObject>

namespace attnscope {

/// {"conventions", "format", "architecture", "hook", "hook_out", "d_sae", "positions": [{"position", "top":
/// [{"feature", "activation"}]}], "reconstruction": {"fvu", "mse", "squared_error", "loss_clean", "loss_spliced",
/// "loss_zero_ablated"}}; `top` ≤ 0 lists every firing feature.
QJsonObject featuresToJson(const SparseCoder& sae, const FeatureRun& run, const ReconstructionQuality& q, int top);

/// {"feature", "activations": [per position], "decoder_top"/"decoder_bottom"/"encoder_top"/"encoder_bottom":
/// [{"id", "token", "score"}], "dla": {"position", "token_id", "token", "value"} when given (position ≥ 0)}.
QJsonObject featureToJson(const FeatureReadout& r, const FeatureRun& run, const Tokenizer& tok, int dlaPosition, int dlaToken,
                          double dla);

/// {"conventions", "hook", "metric_clean", "metric_corrupt", "cells": [{"feature", "position", "clean", "corrupt",
/// "attribution", "patched"}]} with at most `maxCells` cells, largest |attribution| first ("patched" null where not run).
QJsonObject featurePatchingToJson(const FeaturePatching& fp, int maxCells);

} // namespace attnscope
