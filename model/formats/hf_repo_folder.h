#pragma once
// The folder names of the Hugging Face hub cache (huggingface_hub's layout; the cache itself is found and
// scanned in model/discovery/hf_cache.h): a repository "ORG/NAME" lives in <cache>/models--ORG--NAME, its
// revisions in …/snapshots/<commit>. The loader names a model opened from a snapshot by its repository
// (ModelInfo::name "ORG/NAME", not the commit) from the path alone, so this rule sits with the formats.

#include <QString>

namespace attnscope {

/// "models--ORG--NAME" for "ORG/NAME" (and "models--NAME" for "NAME").
QString hfRepoFolderName(const QString& repoId);
/// "ORG/NAME" for a folder name "models--ORG--NAME"; "" for any other name.
QString hfRepoIdOfFolderName(const QString& folderName);
/// "ORG/NAME" when `path` lies in a snapshot of a cached repository (…/models--ORG--NAME/snapshots/REV[/file]),
/// else "". Reads the path only, not the file system.
QString hfRepoIdForPath(const QString& path);

} // namespace attnscope
