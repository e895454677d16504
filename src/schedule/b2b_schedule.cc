// Knobs, legality, space and JSON of the fused back-to-back kernel's schedule.
#include "schedule/b2b_schedule.h"

#include <optional>
#include <utility>

#include "schedule/schedule.h"
#include "support/error.h"

namespace comfuse::schedule {
namespace {

constexpr int kMinStages = 2, kMaxStages = 6;

std::int64_t k_blocks(const B2BPlan& plan) {
  return (plan.first.k + 63) / 64;
}

// Measured with ptxas (sm_90a, both bm): attention at D=128 spills 32-36 bytes a thread with the operand in
// registers; D=64, the MLPs at O=128, and D=128 with the operand in shared memory do not.
bool overlap_spills(const B2BPlan& plan, const B2BSchedule& s) {
  return s.overlap && s.bn1 == 128 && plan.online() && plan.second.n > 64 && !s.operand_in_shared;
}

}  // namespace

std::int64_t b2b_shared_bytes(const B2BPlan& plan, const B2BSchedule& s) {
  const std::int64_t x = (s.persistent ? 2 : 1) * k_blocks(plan) * s.bm * 64 * 2;
  const std::int64_t ring = static_cast<std::int64_t>(s.stages) * s.bn1 * 64 * 2;
  const std::int64_t w2 = 2 * plan.second.n * s.bn1 * 2;
  const std::int64_t barriers = 8 * (2 * s.stages + (s.persistent ? 8 : 5));
  const std::int64_t operand = s.operand_in_shared ? (s.overlap ? 2 : 1) * s.bm * s.bn1 * 2 : 0;
  return 1024 + x + ring + w2 + operand + barriers;
}

namespace {

// Why `s` cannot run `plan`, or nothing: the one statement of the rules, for check_legal and the space.
std::optional<std::string> illegality(const B2BPlan& plan, const B2BSchedule& s) {
  for (const auto& [name, value] : {std::pair<const char*, int>{"bm", s.bm}, {"bn1", s.bn1}}) {
    if (value != 64 && value != 128)
      return std::string(name) + "=" + std::to_string(value) + " is not 64 or 128";
  }
  if (s.bm == 64 && plan.second.n > 128) {
    return "bm=64 with O=" + std::to_string(plan.second.n) +
           ": two CTAs share an SM, whose 128 registers a thread cannot hold GEMM2's accumulator above O=128";
  }
  if (s.pingpong && (s.bm != 128 || s.overlap)) {
    return std::string(
        "pingpong needs two consumer warpgroups (bm=128) taking turns, each one chunk at a time (no "
        "overlap)");
  }
  if (overlap_spills(plan, s)) {
    return "overlap with bn1=128, the operand in registers and the online softmax at O=" +
           std::to_string(plan.second.n) +
           ": two 128-column chunks in flight, the statistics and GEMM2's accumulator spill registers";
  }
  if (s.stages < kMinStages || s.stages > kMaxStages) {
    return "stages=" + std::to_string(s.stages) + " is outside [" + std::to_string(kMinStages) + ", " +
           std::to_string(kMaxStages) + "]";
  }
  if (s.stages < k_blocks(plan)) {
    return "stages=" + std::to_string(s.stages) + " is below the " + std::to_string(k_blocks(plan)) +
           " K blocks of K=" + std::to_string(plan.first.k) +
           ": GEMM1 of a chunk holds all its W1 boxes in the ring until it completes";
  }
  if (s.tma_store) {
    if (!s.persistent) {
      return std::string(
          "store=tma without persistent: the TMA store is generated, verified on the GPU and searched with "
          "the "
          "persistent grid only");
    }
    const auto& outputs = plan.program.outputs();
    if (outputs.size() != 1 || te::dtype_bytes(outputs[0].dtype()) != 2) {
      return std::string("store=tma stages one 16-bit output tile: the program has ") +
             std::to_string(outputs.size()) + " output(s), the first " +
             std::string(te::dtype_name(outputs[0].dtype()));
    }
    const std::int64_t o = plan.second.n;
    if (o % 8 != 0 || (o + 63) / 64 > k_blocks(plan)) {
      return "store=tma with O=" + std::to_string(o) + " and K=" + std::to_string(plan.first.k) +
             ": the output tile is staged in X's buffer (O a multiple of 8, at most K rounded up to 64)";
    }
    if (!plan.first.batch.empty() && plan.first.m % 64 != 0) {
      return "store=tma with batches of M=" + std::to_string(plan.first.m) +
             " rows: a 64-row box past a batch's last row would write into the next batch";
    }
  }
  const std::int64_t bytes = b2b_shared_bytes(plan, s);
  if (const std::int64_t most = TargetLimits{}.max_shared_memory_per_block; bytes > most) {
    return to_string(s) + " needs " + std::to_string(bytes) + " bytes of shared memory, above the " +
           std::to_string(most) + " a CTA has";
  }
  return std::nullopt;
}

}  // namespace

void check_legal(const B2BPlan& plan, const B2BSchedule& s) {
  if (const std::optional<std::string> why = illegality(plan, s))
    throw CompileError("fused back-to-back kernel: " + *why);
}

std::vector<B2BSchedule> b2b_schedule_space(const B2BPlan& plan) {
  std::vector<B2BSchedule> space;
  // The placements in canonical order: bits (store, operand, grid), the TMA store's the slowest-varying.
  for (int placement = 0; placement < 8; ++placement) {
    const bool tma_store = placement & 4, operand_in_shared = placement & 2, persistent = placement & 1;
    for (const auto& [bm, bn1] : {std::pair{64, 64}, {64, 128}, {128, 64}, {128, 128}}) {
      for (int stages = kMinStages; stages <= kMaxStages; ++stages) {
        for (const auto& [overlap, pingpong] : {std::pair{false, false}, {true, false}, {false, true}}) {
          const B2BSchedule s{stages, overlap, bm, bn1, pingpong, persistent, operand_in_shared, tma_store};
          if (!illegality(plan, s)) space.push_back(s);
        }
      }
    }
  }
  return space;
}

nlohmann::json to_json(const B2BSchedule& s) {
  nlohmann::json json{{"kernel", "b2b"},
                      {"bm", s.bm},
                      {"bn1", s.bn1},
                      {"stages", s.stages},
                      {"overlap", s.overlap},
                      {"pingpong", s.pingpong},
                      {"persistent", s.persistent},
                      {"operand", s.operand_in_shared ? "shared" : "registers"}};
  if (s.tma_store) json["store"] = "tma";
  return json;
}

bool is_b2b_schedule_json(const nlohmann::json& json) {
  return json.is_object() && json.contains("kernel") && json["kernel"] == "b2b";
}

B2BSchedule b2b_schedule_from_json(const nlohmann::json& json, const std::string& path) {
  if (!is_b2b_schedule_json(json))
    throw CompileError(path + ": not a back-to-back schedule (kernel \"b2b\")");
  for (const auto& [key, value] : json.items()) {
    if (key != "kernel" && key != "stages" && key != "overlap" && key != "bm" && key != "bn1" &&
        key != "pingpong" && key != "persistent" && key != "operand" && key != "store") {
      throw CompileError(path + ": unknown field '" + key + "'");
    }
  }
  auto integer = [&](const char* field) {
    if (!json[field].is_number_integer()) throw CompileError(path + "." + field + ": expected an integer");
    const auto value = json[field].get<std::int64_t>();
    if (value < 0 || value > 1024)
      throw CompileError(path + "." + field + ": " + std::to_string(value) + " is out of range");
    return static_cast<int>(value);
  };
  B2BSchedule s;
  if (!json.contains("stages")) throw CompileError(path + ": missing field 'stages'");
  s.stages = integer("stages");
  if (json.contains("bm")) s.bm = integer("bm");
  if (json.contains("bn1")) s.bn1 = integer("bn1");
  if (!json.contains("overlap")) throw CompileError(path + ": missing field 'overlap'");
  if (!json["overlap"].is_boolean()) throw CompileError(path + ".overlap: expected true or false");
  s.overlap = json["overlap"].get<bool>();
  for (const auto& [field, knob] :
       {std::pair<const char*, bool*>{"pingpong", &s.pingpong}, {"persistent", &s.persistent}}) {
    if (!json.contains(field)) continue;
    if (!json[field].is_boolean()) throw CompileError(path + "." + field + ": expected true or false");
    *knob = json[field].get<bool>();
  }
  if (json.contains("operand")) {
    const nlohmann::json& operand = json["operand"];
    if (!operand.is_string() || (operand != "registers" && operand != "shared")) {
      throw CompileError(path + ".operand: expected \"registers\" or \"shared\", not " + operand.dump());
    }
    s.operand_in_shared = operand == "shared";
  }
  if (json.contains("store")) {
    const nlohmann::json& store = json["store"];
    if (!store.is_string() || (store != "direct" && store != "tma")) {
      throw CompileError(path + ".store: expected \"direct\" or \"tma\", not " + store.dump());
    }
    s.tma_store = store == "tma";
  }
  return s;
}

std::string to_string(const B2BSchedule& s) {
  return "b2b bm=" + std::to_string(s.bm) + " bn1=" + std::to_string(s.bn1) +
         " stages=" + std::to_string(s.stages) + (s.overlap ? " overlap" : "") +
         (s.pingpong ? " pingpong" : "") + (s.persistent ? " persistent" : "") +
         (s.operand_in_shared ? " operand=shared" : "") + (s.tma_store ? " store=tma" : "");
}

}  // namespace comfuse::schedule
