// The winners of a tuning log, as starting points of a search.
#include "search/start_points.h"

#include <map>

#include "search/selection.h"

namespace comfuse::search {
namespace {

// A fused-GEMM record (a back-to-back record's schedule is of another kind) measured on `target_name`.
bool fused_record_on(const TuningRecord& r, const std::string& target_name) {
  return !r.b2b && r.target.name == target_name;
}

// The winner (select_best) among the records of `workload_key` that `accept` takes (callers take fused-GEMM
// records only).
template <typename Accept>
std::optional<schedule::Schedule> winner_of(const std::vector<TuningRecord>& records,
                                            const std::string& workload_key, Accept accept) {
  std::vector<const TuningRecord*> mine;
  for (const TuningRecord& r : records) {
    if (r.workload.key == workload_key && accept(r)) mine.push_back(&r);
  }
  const TuningRecord* best = select_best(mine);
  return best ? std::optional<schedule::Schedule>(best->schedule) : std::nullopt;
}

}  // namespace

std::vector<schedule::Schedule> start_points(const std::vector<TuningRecord>& records,
                                             const std::string& target_name) {
  std::map<std::string, std::vector<const TuningRecord*>> by_workload;
  for (const TuningRecord& r : records) {
    if (fused_record_on(r, target_name)) by_workload[r.workload.key].push_back(&r);
  }
  std::vector<schedule::Schedule> starts;
  for (const auto& [key, mine] : by_workload) {
    if (const TuningRecord* best = select_best(mine)) starts.push_back(best->schedule);
  }
  return starts;
}

std::optional<schedule::Schedule> own_winner(const std::vector<TuningRecord>& records,
                                             const std::string& target_name,
                                             const std::string& workload_key) {
  return winner_of(records, workload_key,
                   [&](const TuningRecord& r) { return fused_record_on(r, target_name); });
}

std::optional<schedule::Schedule> workload_winner(const std::vector<TuningRecord>& records,
                                                  const std::string& workload_key) {
  return winner_of(records, workload_key, [](const TuningRecord& r) { return !r.b2b; });
}

}  // namespace comfuse::search
