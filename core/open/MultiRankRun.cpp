#include "core/open/MultiRankRun.h"

#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/importers/FileText.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

namespace fs = std::filesystem;

namespace nanscope {

namespace {

namespace rf = runformat;

// A manifest lists a few thousand ranks at most; a larger file is not ours.
constexpr uint64_t kMostManifestBytes = 64u << 20;
constexpr uint64_t kMostStatusBytes = 1u << 20;
constexpr int kMostRanks = 1 << 20;

fs::path folderOf(const std::string& path)
{
    const fs::path p(path);
    return p.filename() == rf::kRankManifestName ? p.parent_path() : p;
}

// The rank_NNNNN/ folders holding a run.h5, by rank.
std::map<int, fs::path> rankFolders(const fs::path& folder)
{
    static const std::regex pattern(R"(rank_(\d{1,7}))");
    std::map<int, fs::path> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
        std::smatch match;
        const std::string name = entry.path().filename().string();
        if (entry.is_directory(ec) && std::regex_match(name, match, pattern))
            found[std::stoi(match[1].str())] = entry.path();
    }
    return found;
}

Result<QJsonObject> readJsonObject(const fs::path& path, uint64_t maxBytes)
{
    auto text = readFileText(path.string(), maxBytes);
    if (!text)
        return Error{text.error()};
    QJsonParseError parseError;
    const QJsonDocument document =
        QJsonDocument::fromJson(QByteArray::fromStdString(*text), &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return Error{path.string() + ": not valid JSON: " + parseError.errorString().toStdString()};
    if (!document.isObject())
        return Error{path.string() + ": not a JSON object"};
    return document.object();
}

struct ManifestEntry
{
    int rank = 0;
    fs::path directory;
    std::string host;
};

struct Manifest
{
    int worldSize = 0;
    std::vector<ManifestEntry> ranks;
};

Result<Manifest> readManifest(const fs::path& folder)
{
    const fs::path path = folder / rf::kRankManifestName;
    auto object = readJsonObject(path, kMostManifestBytes);
    if (!object)
        return Error{object.error()};
    const std::string where = path.string() + ": ";
    if (object->value("format").toString().toStdString() != rf::kRankManifestFormat)
        return Error{where + "\"format\" is not \"" + rf::kRankManifestFormat + "\""};
    const int version = object->value("format_version").toInt(0);
    if (version < 1 || version > rf::kRankManifestVersion)
        return Error{where + "format_version " + std::to_string(version) + " (this nanscope reads " +
                     std::to_string(rf::kRankManifestVersion) + ")"};
    Manifest manifest;
    manifest.worldSize = object->value("world_size").toInt(0);
    if (manifest.worldSize < 1 || manifest.worldSize > kMostRanks)
        return Error{where + "\"world_size\" must be a whole number from 1 to " + std::to_string(kMostRanks)};
    const QJsonArray ranks = object->value("ranks").toArray();
    for (const QJsonValue& value : ranks) {
        const QJsonObject entry = value.toObject();
        ManifestEntry rank;
        rank.rank = entry.value("rank").toInt(-1);
        if (rank.rank < 0 || rank.rank >= manifest.worldSize)
            return Error{where + "a rank outside 0.." + std::to_string(manifest.worldSize - 1)};
        const std::string directory = entry.value("directory").toString().toStdString();
        // Only a folder inside the run: a manifest must not send nanscope elsewhere on the disk.
        if (directory.empty() || fs::path(directory).is_absolute() || directory.find("..") != std::string::npos)
            return Error{where + "rank " + std::to_string(rank.rank) + ": \"directory\" must name a folder " +
                         "inside " + folder.string()};
        rank.directory = folder / directory;
        rank.host = entry.value("host").toString().toStdString();
        manifest.ranks.push_back(std::move(rank));
    }
    return manifest;
}

void readRankStatus(RankMember& member)
{
    const fs::path path = fs::path(member.directory) / rf::kRankStatusName;
    std::error_code ec;
    if (!fs::exists(path, ec))
        return; // Unknown: a recorder that writes none, or a rank that died before writing it
    auto object = readJsonObject(path, kMostStatusBytes);
    if (!object)
        return;
    const std::string state = object->value("state").toString().toStdString();
    if (state == rf::kRankStateFinished)
        member.state = RankState::Finished;
    else if (state == rf::kRankStateRunning)
        member.state = RankState::Running;
    const QJsonValue last = object->value("last_step");
    if (last.isDouble())
        member.recordedLastStep = int64_t(last.toDouble());
}

} // namespace

bool isMultiRankRun(const std::string& path)
{
    std::error_code ec;
    const fs::path folder = folderOf(path);
    if (!fs::is_directory(folder, ec) || fs::is_regular_file(folder / rf::kLogFileName, ec))
        return false;
    if (fs::is_regular_file(folder / rf::kRankManifestName, ec))
        return true;
    for (const auto& [rank, rankFolder] : rankFolders(folder))
        if (fs::is_regular_file(rankFolder / rf::kLogFileName, ec))
            return true;
    return false;
}

Result<std::unique_ptr<RankSet>> openMultiRankRun(const std::string& path)
{
    const fs::path folder = folderOf(path);
    std::error_code ec;
    std::vector<std::string> warnings;
    std::vector<ManifestEntry> entries;
    int worldSize = 0;
    const std::map<int, fs::path> folders = rankFolders(folder);
    if (fs::exists(folder / rf::kRankManifestName, ec)) {
        auto manifest = readManifest(folder);
        if (!manifest)
            return Error{manifest.error()};
        worldSize = manifest->worldSize;
        entries = std::move(manifest->ranks);
        // A rank the manifest leaves out is still looked for in its usual folder.
        for (int rank = 0; rank < worldSize; ++rank) {
            const bool listed = std::any_of(entries.begin(), entries.end(),
                                            [&](const ManifestEntry& e) { return e.rank == rank; });
            if (!listed)
                entries.push_back({rank, folder / rf::rankDirName(rank), {}});
        }
    } else {
        if (folders.empty())
            return Error{folder.string() + ": no " + rf::kRankManifestName + " and no rank_NNNNN folders"};
        worldSize = folders.rbegin()->first + 1;
        warnings.push_back(folder.string() + ": no " + std::string(rf::kRankManifestName) +
                           " (rank 0 did not write it): the ranks are the rank_NNNNN folders found");
        for (int rank = 0; rank < worldSize; ++rank) {
            auto it = folders.find(rank);
            entries.push_back({rank, it != folders.end() ? it->second : folder / rf::rankDirName(rank), {}});
        }
    }

    std::vector<RankMember> members;
    std::vector<size_t> present; // members with a folder, whose runs are opened together below
    std::vector<std::string> presentFolders;
    for (const ManifestEntry& entry : entries) {
        RankMember member;
        member.rank = entry.rank;
        member.directory = entry.directory.string();
        member.host = entry.host;
        if (!fs::is_directory(entry.directory, ec)) {
            member.error = member.directory + ": no such folder (the rank wrote nothing)";
        } else {
            readRankStatus(member);
            present.push_back(members.size());
            presentFolders.push_back(member.directory);
        }
        members.push_back(std::move(member));
    }
    // One probe child for every rank, not one each (RunReader::openEach).
    auto readers = RunReader::openEach(presentFolders);
    for (size_t i = 0; i < present.size(); ++i) {
        RankMember& member = members[present[i]];
        if (readers[i])
            member.run = std::shared_ptr<RunSource>(std::move(*readers[i]));
        else
            member.error = readers[i].error();
    }
    return RankSet::create(folder.string(), worldSize, std::move(members), std::move(warnings));
}

} // namespace nanscope
