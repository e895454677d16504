// Knobs, legality, space and JSON of the fused back-to-back kernel's schedule.
#include "schedule/b2b_schedule.h"

#include "support/error.h"

namespace comfuse::schedule {
namespace {

constexpr int kMinStages = 2, kMaxStages = 6;

std::int64_t k_blocks(const B2BPlan& plan) {
  return (plan.first.k + 63) / 64;
}

}  // namespace

void check_legal(const B2BPlan& plan, const B2BSchedule& s) {
  const std::string who = "fused back-to-back kernel: ";
  if (s.stages < kMinStages || s.stages > kMaxStages) {
    throw CompileError(who + "stages=" + std::to_string(s.stages) + " is outside [" +
                       std::to_string(kMinStages) + ", " + std::to_string(kMaxStages) + "]");
  }
  if (s.stages < k_blocks(plan)) {
    throw CompileError(who + "stages=" + std::to_string(s.stages) + " is below the " +
                       std::to_string(k_blocks(plan)) + " K blocks of K=" + std::to_string(plan.first.k) +
                       ": GEMM1 of a chunk holds all its W1 boxes in the ring until it completes");
  }
}

std::vector<B2BSchedule> b2b_schedule_space(const B2BPlan& plan) {
  std::vector<B2BSchedule> space;
  for (int stages = kMinStages; stages <= kMaxStages; ++stages) {
    if (stages < k_blocks(plan)) continue;
    for (bool overlap : {false, true}) space.push_back({stages, overlap});
  }
  return space;
}

nlohmann::json to_json(const B2BSchedule& s) {
  return nlohmann::json{{"kernel", "b2b"}, {"stages", s.stages}, {"overlap", s.overlap}};
}

bool is_b2b_schedule_json(const nlohmann::json& json) {
  return json.is_object() && json.contains("kernel") && json["kernel"] == "b2b";
}

B2BSchedule b2b_schedule_from_json(const nlohmann::json& json, const std::string& path) {
  if (!is_b2b_schedule_json(json))
    throw CompileError(path + ": not a back-to-back schedule (kernel \"b2b\")");
  for (const auto& [key, value] : json.items()) {
    if (key != "kernel" && key != "stages" && key != "overlap") {
      throw CompileError(path + ": unknown field '" + key + "'");
    }
  }
  B2BSchedule s;
  if (!json.contains("stages")) throw CompileError(path + ": missing field 'stages'");
  if (!json["stages"].is_number_integer()) throw CompileError(path + ".stages: expected an integer");
  const auto stages = json["stages"].get<std::int64_t>();
  if (stages < 0 || stages > 64)
    throw CompileError(path + ".stages: " + std::to_string(stages) + " is out of range");
  s.stages = static_cast<int>(stages);
  if (!json.contains("overlap")) throw CompileError(path + ": missing field 'overlap'");
  if (!json["overlap"].is_boolean()) throw CompileError(path + ".overlap: expected true or false");
  s.overlap = json["overlap"].get<bool>();
  return s;
}

std::string to_string(const B2BSchedule& s) {
  return "b2b stages=" + std::to_string(s.stages) + (s.overlap ? " overlap" : "");
}

}  // namespace comfuse::schedule
