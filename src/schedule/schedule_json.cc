// The schedule's JSON and text forms: the names of its enumerations, the optional knobs, and the parse that
// names the field of any mistake.
#include <algorithm>
#include <utility>

#include "schedule/schedule.h"
#include "support/error.h"

namespace comfuse::schedule {
namespace {

template <typename Enum, std::size_t N>
Enum parse_enum(const nlohmann::json& value, const std::string& path, const Enum (&all)[N],
                std::string_view (*name)(Enum)) {
  if (!value.is_string()) throw CompileError(path + ": expected a string");
  const std::string text = value.get<std::string>();
  std::string valid;
  for (Enum e : all) {
    if (name(e) == text) return e;
    valid += (valid.empty() ? "" : ", ") + std::string(name(e));
  }
  throw CompileError(path + ": unknown value '" + text + "' (valid: " + valid + ")");
}

int parse_int(const nlohmann::json& object, const std::string& key, const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end()) throw CompileError(path + ": missing field '" + key + "'");
  if (!it->is_number_integer()) throw CompileError(path + "." + key + ": expected an integer");
  const auto value = it->get<std::int64_t>();
  if (value < -(1 << 30) || value > (1 << 30)) {
    throw CompileError(path + "." + key + ": " + std::to_string(value) + " is out of range");
  }
  return static_cast<int>(value);
}

constexpr WarpRoles kAllWarpRoles[] = {WarpRoles::kCooperative, WarpRoles::kPingPong};
constexpr ReductionPlacement kAllPlacements[] = {ReductionPlacement::kCta, ReductionPlacement::kCluster,
                                                 ReductionPlacement::kDeferred};
constexpr ValueHome kAllHomes[] = {ValueHome::kRegisters, ValueHome::kL2Stash, ValueHome::kShared};

}  // namespace

std::string_view warp_roles_name(WarpRoles roles) {
  switch (roles) {
    case WarpRoles::kCooperative:
      return "cooperative";
    case WarpRoles::kPingPong:
      return "ping_pong";
  }
  return "?";
}

std::string_view reduction_placement_name(ReductionPlacement placement) {
  switch (placement) {
    case ReductionPlacement::kCta:
      return "cta";
    case ReductionPlacement::kCluster:
      return "cluster";
    case ReductionPlacement::kDeferred:
      return "deferred";
  }
  return "?";
}

std::string_view value_home_name(ValueHome home) {
  switch (home) {
    case ValueHome::kRegisters:
      return "registers";
    case ValueHome::kL2Stash:
      return "l2_stash";
    case ValueHome::kShared:
      return "shared";
  }
  return "?";
}

std::span<const OptionalKnob> optional_knobs() {
  static constexpr OptionalKnob kKnobs[] = {
      {"persistent", &Schedule::persistent},
      {"tma_store", &Schedule::tma_store},
      {"vector_loads", &Schedule::vector_loads},
      {"batched_reads", &Schedule::batched_reads},
      {"deep_reads", &Schedule::deep_reads},
      {"one_pass_variance", &Schedule::one_pass_variance},
      {"prefetch_inputs", &Schedule::prefetch_inputs},
      {"online_softmax", &Schedule::online_softmax},
      {"relaxed_exchange_wait", &Schedule::relaxed_exchange_wait},
      {"carry_in_accumulator", &Schedule::carry_in_accumulator},
      {"tma_inputs", &Schedule::tma_inputs},
      {"fenced_exchange_arrive", &Schedule::fenced_exchange_arrive},
      {"interior_tiles", &Schedule::interior_tiles},
      {.name = "bf16_stash", .field = &Schedule::bf16_stash, .rounds = true},
      {"branchless_online_update", &Schedule::branchless_online_update},
      {"finish_row_split", &Schedule::finish_row_split},
      {.name = "approximate_math", .field = &Schedule::approximate_math, .rounds = true},
      {"multicast_b", &Schedule::multicast_b},
      {.name = "reciprocal_division",
       .field = &Schedule::reciprocal_division,
       .rounds = true,
       .within_an_ulp = true},
      {.name = "stash_terms", .field = &Schedule::stash_terms, .rounds = true},
      {"wide_finish", &Schedule::wide_finish},
      {"reverse_finish", &Schedule::reverse_finish},
      {"stash_evict_last", &Schedule::stash_evict_last},
      {.name = "store_chunks", .field = &Schedule::store_chunks, .frees_stage = true},
      {"one_input_slot", &Schedule::one_input_slot},
      {"staged_pairs", &Schedule::staged_pairs},
      {"stash_in_slot", &Schedule::stash_in_slot},
      {"streaming_hints", &Schedule::streaming_hints},
      {"global_exchange", &Schedule::global_exchange},
      {"unstaged_vectors", &Schedule::unstaged_vectors},
      {"resident_vectors", &Schedule::resident_vectors},
      {"box_reads", &Schedule::box_reads},
      {.name = "packed_rounding", .field = &Schedule::packed_rounding, .refines = true},
      {.name = "shared_pointers", .field = &Schedule::shared_pointers, .refines = true},
      {.name = "finish_reductions", .field = &Schedule::finish_reductions, .rounds = true},
      {"persistent_finish", &Schedule::persistent_finish},
      {"early_handoff", &Schedule::early_handoff},
  };
  return kKnobs;
}

namespace {

Schedule with_refinements_set(Schedule s, bool on) {
  for (const OptionalKnob& knob : optional_knobs()) {
    if (knob.refines) s.*knob.field = on;
  }
  return s;
}

}  // namespace

Schedule with_refinements(Schedule s) {
  return with_refinements_set(std::move(s), true);
}

Schedule without_refinements(Schedule s) {
  return with_refinements_set(std::move(s), false);
}

bool rounds(const Schedule& s) {
  const auto knobs = optional_knobs();
  return std::any_of(knobs.begin(), knobs.end(),
                     [&](const OptionalKnob& knob) { return knob.rounds && s.*knob.field; });
}

bool rounds_past_an_ulp(const Schedule& s) {
  const auto knobs = optional_knobs();
  return std::any_of(knobs.begin(), knobs.end(), [&](const OptionalKnob& knob) {
    return knob.rounds && !knob.within_an_ulp && s.*knob.field;
  });
}

nlohmann::json to_json(const Schedule& s) {
  nlohmann::json json{{"bm", s.bm},
                      {"bn", s.bn},
                      {"bk", s.bk},
                      {"stages", s.stages},
                      {"cluster_n", s.cluster_n},
                      {"warp_roles", warp_roles_name(s.warp_roles)},
                      {"reduction", reduction_placement_name(s.reduction)},
                      {"carried", value_home_name(s.carried)},
                      {"raster_group_m", s.raster_group_m}};
  for (const OptionalKnob& knob : optional_knobs()) {
    if (s.*knob.field) json[knob.name] = true;
  }
  return json;
}

Schedule schedule_from_json(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object()) throw CompileError(path + ": expected an object");
  static const char* const kFields[] = {"bm",         "bn",        "bk",      "stages",        "cluster_n",
                                        "warp_roles", "reduction", "carried", "raster_group_m"};
  const auto knobs = optional_knobs();
  for (const auto& [key, value] : json.items()) {
    const auto named = [&](const char* name) { return key == name; };
    if (std::none_of(std::begin(kFields), std::end(kFields), named) &&
        std::none_of(knobs.begin(), knobs.end(), [&](const OptionalKnob& k) { return named(k.name); })) {
      throw CompileError(path + ": unknown field '" + key + "'");
    }
  }
  Schedule s;
  s.bm = parse_int(json, "bm", path);
  s.bn = parse_int(json, "bn", path);
  s.bk = parse_int(json, "bk", path);
  s.stages = parse_int(json, "stages", path);
  s.cluster_n = parse_int(json, "cluster_n", path);
  s.raster_group_m = parse_int(json, "raster_group_m", path);
  for (const char* key : {"warp_roles", "reduction", "carried"}) {
    if (!json.contains(key)) throw CompileError(path + ": missing field '" + key + "'");
  }
  s.warp_roles = parse_enum(json["warp_roles"], path + ".warp_roles", kAllWarpRoles, warp_roles_name);
  s.reduction = parse_enum(json["reduction"], path + ".reduction", kAllPlacements, reduction_placement_name);
  s.carried = parse_enum(json["carried"], path + ".carried", kAllHomes, value_home_name);
  // Optional: added after the first logs were written, absent meaning false.
  for (const OptionalKnob& knob : knobs) {
    if (const auto it = json.find(knob.name); it != json.end()) {
      if (!it->is_boolean()) throw CompileError(path + "." + knob.name + ": expected true or false");
      s.*knob.field = it->get<bool>();
    }
  }
  return s;
}

std::string to_string(const Schedule& s) {
  std::string text = "BM=" + std::to_string(s.bm) + " BN=" + std::to_string(s.bn) +
                     " BK=" + std::to_string(s.bk) + " stages=" + std::to_string(s.stages) +
                     " cluster_n=" + std::to_string(s.cluster_n) + " " +
                     std::string(warp_roles_name(s.warp_roles)) +
                     " reduction=" + std::string(reduction_placement_name(s.reduction)) +
                     " carried=" + std::string(value_home_name(s.carried)) +
                     " raster_group_m=" + std::to_string(s.raster_group_m);
  for (const OptionalKnob& knob : optional_knobs()) {
    if (s.*knob.field) text += std::string(" ") + knob.name;
  }
  return text;
}

std::vector<KnobSetting> parse_knob_settings(const std::vector<std::string>& texts,
                                             const std::string& context) {
  nlohmann::json all = to_json(Schedule{});
  for (const OptionalKnob& knob : optional_knobs()) all[knob.name] = false;
  std::vector<KnobSetting> settings;
  for (const std::string& text : texts) {
    const std::string where = context + " '" + text + "': ";
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw CompileError(where + "expected knob=value");
    const std::string knob = text.substr(0, eq), value_text = text.substr(eq + 1);
    if (!all.contains(knob)) {
      std::string knobs;
      for (const auto& [key, value] : all.items()) knobs += (knobs.empty() ? "" : ", ") + key;
      throw CompileError(where + "no knob '" + knob + "' (knobs: " + knobs + ")");
    }
    nlohmann::json value = value_text;  // strings as they are; numbers and booleans parsed
    if (all[knob].is_boolean() && (value_text == "true" || value_text == "false"))
      value = value_text == "true";
    if (all[knob].is_number_integer()) {
      try {
        std::size_t used = 0;
        value = std::stoi(value_text, &used);
        if (used != value_text.size()) throw std::invalid_argument(value_text);
      } catch (const std::exception&) {
        throw CompileError(where + knob + " takes an integer");
      }
    }
    if (value.type() != all[knob].type())
      throw CompileError(where + knob + " takes " + all[knob].type_name());
    settings.push_back({knob, value});
  }
  return settings;
}

Schedule with_knobs(const Schedule& schedule, const std::vector<KnobSetting>& settings,
                    const std::string& context) {
  nlohmann::json json = to_json(schedule);
  for (const KnobSetting& setting : settings) json[setting.knob] = setting.value;
  return schedule_from_json(json, context);
}

}  // namespace comfuse::schedule
