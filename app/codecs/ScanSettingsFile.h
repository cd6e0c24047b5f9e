#pragma once

#include "core/scan/ScanConfig.h"

#include <QString>

namespace nanscope {

// The scan settings a user writes (`--config FILE`, for `scan`, `report` and the window): a JSON
// object ({"spike_decades": 1.5}) or INI lines (spike_decades = 1.5, with # or ; comments and an
// optional [scan] section), each key one of ScanConfig's settings. Applies them over `config`;
// false with `error` naming the file (and line) and what is wrong.
bool loadScanSettingsFile(const QString& path, ScanConfig& config, QString& error);

} // namespace nanscope
