// Which record of a tuning log wins: one rule, shared by the tuner's final pick and by replay, so that a
// replayed log builds the kernel the tuning run chose.
#pragma once

#include <vector>

#include "search/tuning_record.h"

namespace comfuse::search {

/// Schedules whose medians are within this fraction of the fastest are tied.
inline constexpr double kTieBand = 0.01;

/// The winner among `records` (ok records of one workload on one target; others are ignored), or nullptr
/// when there is none. A schedule measured more than once counts by its latest record (re-measurements
/// with more samples come later in the log). The lowest median wins; schedules within kTieBand of it are
/// tied, and the tie goes to the one with fewer resources (shared memory, then threads), then to the first
/// in canonical schedule order.
const TuningRecord* select_best(const std::vector<const TuningRecord*>& records);

/// The ok records worth measuring again with more samples before the pick: those within twice the tie band
/// of the fastest, fastest first, at most four; none when fewer than two records are ok.
std::vector<const TuningRecord*> contenders(const std::vector<TuningRecord>& records);

}  // namespace comfuse::search
