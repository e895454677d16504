// The schedule of a fused back-to-back kernel: its knobs, their legality against a B2B plan, the space the
// tuner searches and the JSON form a tuning record carries.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/b2b_plan.h"

namespace comfuse::schedule {

struct B2BSchedule {
  int stages = 4;  // W1 boxes in flight (X is loaded once per CTA); W2 chunks are double-buffered
  // GEMM1 of the next chunk and GEMM2 of this one in flight while the next chunk's tiles between run (two
  // acc1 and operand buffers); off: each chunk's GEMMs are waited for before its tiles between.
  bool overlap = false;
  bool operator==(const B2BSchedule&) const = default;
};

/// Throws CompileError naming the knob when `schedule` cannot run `plan`: stages outside [2, 6], or fewer
/// stages than GEMM1 has K blocks of 64 (a chunk's W1 boxes stay in the ring until its GEMM1 completes).
void check_legal(const B2BPlan& plan, const B2BSchedule& schedule);

/// Every legal schedule of `plan`, in canonical order (stages, then overlap off before on).
std::vector<B2BSchedule> b2b_schedule_space(const B2BPlan& plan);

/// {"kernel": "b2b", "overlap": …, "stages": …}: the "kernel" field tells it from a fused-GEMM schedule.
nlohmann::json to_json(const B2BSchedule& schedule);
/// Whether `json` is the JSON of a B2BSchedule (its "kernel" field says so).
bool is_b2b_schedule_json(const nlohmann::json& json);
/// Parses strictly: unknown or missing fields and wrong types are CompileErrors with the JSON path.
B2BSchedule b2b_schedule_from_json(const nlohmann::json& json, const std::string& path = "schedule");
std::string to_string(const B2BSchedule& schedule);

}  // namespace comfuse::schedule
