// Planning, scheduling and compiling the suite rows.
#include "suite_row.h"

#include <atomic>
#include <ctime>
#include <iostream>
#include <thread>

#include "codegen/b2b_emitter.h"
#include "schedule/b2b_mask.h"
#include "schedule/b2b_plan.h"
#include "search/replay.h"
#include "support/error.h"
#include "te/json.h"

namespace comfuse::bench {
namespace {

std::int64_t seconds_of(const std::string& timestamp) {
  std::tm tm{};
  strptime(timestamp.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return static_cast<std::int64_t>(timegm(&tm));
}

schedule::Schedule variant_schedule(const schedule::FusionPlan& plan, const std::string& variant) {
  schedule::Schedule s = schedule::default_schedule(plan);
  if (variant != "ping_pong" || !plan.has_reductions()) return s;
  schedule::Schedule ping_pong = s;
  ping_pong.bm = 64;
  ping_pong.warp_roles = schedule::WarpRoles::kPingPong;
  try {
    schedule::check_legal(plan, ping_pong);
    return ping_pong;
  } catch (const CompileError&) {
    return s;  // not legal for this plan (e.g. registers with two tiles per warpgroup)
  }
}

// The fused back-to-back kernel of `whole`: the tuning log's winner for it where there is one, else the
// default schedule's.
codegen::KernelSource fused_source(const std::string& name, const te::Program& whole,
                                   const std::vector<search::TuningRecord>& tuned,
                                   const runtime::DeviceFingerprint& target,
                                   const search::ReplayOptions& replay, bool* from_log) {
  if (!tuned.empty()) {
    try {
      codegen::KernelSource kernel = search::replay(tuned, whole, target, replay).kernel;
      *from_log = true;
      return kernel;
    } catch (const CompileError& error) {
      // No usable fused record for this workload and target: the default schedule, and why.
      std::cerr << name << ": fused kernel: default schedule (" << error.what() << ")\n";
    }
  }
  *from_log = false;
  return codegen::emit_b2b_kernel(schedule::plan_b2b(whole), codegen::B2BSchedule{}, te::workload_key(whole));
}

}  // namespace

Row prepare_row(const SuiteEntry& entry, const std::string& variant,
                const std::vector<search::TuningRecord>& tuned, const runtime::DeviceFingerprint& target,
                bool b2b_fused, const search::ReplayOptions& replay) {
  Row row;
  row.entry = entry;
  row.name = te::instance_name(te::workload_info(entry.workload), entry.shape);
  try {
    const std::vector<te::Program> programs =
        schedule::kernel_programs(te::build_workload(entry.workload, entry.shape));
    std::optional<std::int64_t> first, last;
    for (std::size_t p = 0; p < programs.size(); ++p) {
      Part part{programs[p], schedule::plan_fusion(programs[p]), {}, {}, {}, false};
      const auto& a = part.plan.anchor;
      row.flops += 2 * a.m * a.n * a.k;
      const std::string key = te::workload_key(part.program);
      part.source = codegen::emit_kernel(part.plan, variant_schedule(part.plan, variant), key);
      if (!tuned.empty() && variant.empty()) {
        try {
          part.source = search::replay(tuned, part.program, target, replay).kernel;
          part.from_log = true;
          for (const search::TuningRecord& r : tuned) {
            if (r.workload.key != key) continue;
            const std::int64_t t = seconds_of(r.timestamp);
            first = first ? std::min(*first, t) : t;
            last = last ? std::max(*last, t) : t;
          }
        } catch (const CompileError& error) {
          std::cerr << row.name << ": default schedule (" << error.what() << ")\n";
        }
      }
      row.parts.push_back(std::move(part));
    }
    bool all_logged = true;
    for (const Part& part : row.parts) all_logged = all_logged && part.from_log;
    row.schedule_source = all_logged ? "tuning_log" : "default";
    if (row.parts.size() == 2) row.schedule_source += " (unfused: two kernels)";
    if (all_logged && first) row.tune_seconds = static_cast<double>(*last - *first + 1);
    if (b2b_fused && row.parts.size() == 2) {
      row.fused_b2b.emplace(te::build_workload(entry.workload, entry.shape));
      try {
        row.fused_b2b->source =
            fused_source(row.name, row.fused_b2b->program, tuned, target, replay, &row.fused_b2b->from_log);
      } catch (const CompileError& error) {
        row.fused_b2b->unsupported = error.what();
      }
    }
  } catch (const CompileError& error) {
    row.unsupported = error.what();
    // No two-kernel plan (batched contractions): the fused back-to-back kernel may still run alone.
    if (b2b_fused) {
      try {
        FusedB2B fused(te::build_workload(entry.workload, entry.shape));
        fused.source = fused_source(row.name, fused.program, tuned, target, replay, &fused.from_log);
        row.flops = schedule::b2b_flops(schedule::plan_b2b(fused.program));
        row.fused_b2b.emplace(std::move(fused));
      } catch (const CompileError&) {
        // neither plan: the row stays unsupported with the single-kernel reason
      }
    }
  }
  return row;
}

void compile_rows(std::vector<Row>& rows) {
  std::vector<Part*> work;
  for (Row& row : rows) {
    for (Part& part : row.parts) work.push_back(&part);
  }
  std::atomic<std::size_t> next{0};
  auto compile_next = [&] {
    for (std::size_t i = next++; i < work.size(); i = next++) {
      Part* part = work[i];
      try {
        runtime::CompileOptions options;
        options.program_name = part->source.name + ".cu";
        part->compiled = runtime::compile(part->source.source, options);
      } catch (const std::exception& error) {
        part->compile_error = error.what();
      }
    }
  };
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < std::max(2u, std::thread::hardware_concurrency()); ++w)
    workers.emplace_back(compile_next);
  for (std::thread& t : workers) t.join();
  for (Row& row : rows) {
    for (const Part& part : row.parts) {
      if (row.compile_error.empty()) row.compile_error = part.compile_error;
    }
    if (row.fused_b2b && row.fused_b2b->unsupported.empty()) {  // few: compiled here, one after another
      try {
        runtime::CompileOptions options;
        options.program_name = row.fused_b2b->source.name + ".cu";
        row.fused_b2b->compiled = runtime::compile(row.fused_b2b->source.source, options);
      } catch (const std::exception& error) {
        row.fused_b2b->compile_error = error.what();
      }
    }
  }
}

}  // namespace comfuse::bench
