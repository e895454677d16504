// Where a search starts: the schedules that won other searches on the same GPU. Forms found for one row
// (a finish kernel's walk, a stash type, TMA multicast) often win its siblings too, and the cost model may
// rank them too low for a short search to reach them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "search/tuning_record.h"

namespace comfuse::search {

/// The winner (select_best) of each workload among `records` measured on a GPU named `target_name`, one a
/// workload, in the order of the workloads' keys. Fused-GEMM records only (a back-to-back record's schedule
/// is of another kind). A workload's own winner is among them: a new search of it starts from there too.
std::vector<schedule::Schedule> start_points(const std::vector<TuningRecord>& records,
                                             const std::string& target_name);

/// The winner (select_best) of the workload `workload_key` among `records` measured on a GPU named
/// `target_name`: where an earlier search of this workload on this GPU ended (TuneOptions::resume). None
/// where no fused-GEMM record of it there is correct.
std::optional<schedule::Schedule> own_winner(const std::vector<TuningRecord>& records,
                                             const std::string& target_name, const std::string& workload_key);

/// The same winner over the records of every GPU: the schedule an A/B on another card flips a knob of
/// (tune_suite's --ab).
std::optional<schedule::Schedule> workload_winner(const std::vector<TuningRecord>& records,
                                                  const std::string& workload_key);

}  // namespace comfuse::search
