// The winner rule.
#include "search/selection.h"

#include <algorithm>
#include <map>

#include <string>

namespace comfuse::search {

const TuningRecord* select_best(const std::vector<const TuningRecord*>& records) {
  std::map<std::string, const TuningRecord*> latest;  // by canonical schedule JSON
  for (const TuningRecord* record : records) {
    if (record->status != RecordStatus::kOk || !record->median_us) continue;
    latest[schedule_text(*record)] = record;
  }
  if (latest.empty()) return nullptr;
  double fastest = *latest.begin()->second->median_us;
  for (const auto& [text, record] : latest) fastest = std::min(fastest, *record->median_us);
  const TuningRecord* best = nullptr;
  auto resources = [](const TuningRecord* r) {  // a key's records are all of one kernel kind
    if (r->b2b) return std::make_pair(std::int64_t{r->b2b->stages}, r->b2b->overlap ? 1 : 0);
    return std::make_pair(r->schedule.shared_memory_bytes(), r->schedule.threads());
  };
  for (const auto& [text, record] : latest) {  // canonical order: the first of equals stays
    if (*record->median_us > fastest * (1 + kTieBand)) continue;
    if (best == nullptr || resources(record) < resources(best)) best = record;
  }
  return best;
}

std::vector<const TuningRecord*> contenders(const std::vector<TuningRecord>& records) {
  std::vector<const TuningRecord*> ok;
  for (const TuningRecord& r : records) {
    if (r.status == RecordStatus::kOk && r.median_us) ok.push_back(&r);
  }
  if (ok.size() < 2) return {};
  std::stable_sort(ok.begin(), ok.end(), [](auto* a, auto* b) { return *a->median_us < *b->median_us; });
  const double band = *ok.front()->median_us * (1 + 2 * kTieBand);
  std::vector<const TuningRecord*> result;
  for (const TuningRecord* r : ok) {
    if (*r->median_us <= band && result.size() < 4) result.push_back(r);
  }
  return result;
}

}  // namespace comfuse::search
