#pragma once
// The Hugging Face hub cache (huggingface_hub's layout, "Manage the cache" in its docs):
//   <cache>/models--ORG--NAME/refs/main           the commit the main branch pointed to at download
//   <cache>/models--ORG--NAME/snapshots/<commit>/  the files of that revision, symlinks into blobs/
//   <cache>/models--ORG--NAME/blobs/<sha>          the file contents
// <cache> is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (huggingface_hub constants.py). Nothing here downloads or writes.

#include "model/formats/hf_repo_folder.h" // hfRepoFolderName, hfRepoIdForPath: the folder names

#include <QList>
#include <QString>

namespace attnscope {

/// The hub cache folder the environment points to (it may not exist).
QString hfHubCacheDir();

/// One cached model repository.
struct HfCachedModel {
    QString repoId;     ///< "gpt2", "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    QString repoFolder; ///< <cache>/models--...
    QString snapshot;   ///< the newest snapshot folder ("" when there is none; see problem)
    QString problem;    ///< why no snapshot could be chosen
};

/// The newest snapshot of a repository folder: the one refs/main names if it exists, else the
/// snapshot folder with the newest modification time. "" (and *problem) when there is none.
QString hfNewestSnapshot(const QString& repoFolder, QString* problem = nullptr);
/// Every model repository (models--* folders) in `cacheDir`, sorted by repo id.
QList<HfCachedModel> listHfCache(const QString& cacheDir);
/// The cached repository `repoId` in `cacheDir` (problem set when it is absent or has no snapshot).
HfCachedModel findHfCachedModel(const QString& cacheDir, const QString& repoId);

} // namespace attnscope
