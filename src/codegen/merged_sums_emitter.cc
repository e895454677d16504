// Epilogue emission of the merged row reductions (centered sums: one-pass variance, shifted sums per thread
// and Chan's combine; rescaled sums: online softmax), and the device helpers only some epilogues need.
#include "codegen/epilogue_emitter.h"

#include <algorithm>

#include "codegen/epilogue_names.h"
#include "codegen/expr_emitter.h"

namespace comfuse::codegen {

// A centered sum exchanges its squared deviations, count and mean (chan_combine takes count, mean, M2); a
// rescaled sum its sum and running maximum.
const EpilogueEmitter::PartialForm* EpilogueEmitter::partial_form(const Slot& slot) {
  static const PartialForm kCentered{
      "chan_combine", {{"n", 1, "_n", "0.0f"}, {"mean", 2, "_c", "0.0f"}, {"m2", 0, "", "0.0f"}}};
  static const PartialForm kRescaled{"rescaled_combine",
                                     {{"s", 0, "", "0.0f"}, {"m", 1, "_m", identity(te::ReduceOp::kMax)}}};
  if (slot.centered != nullptr) return &kCentered;
  if (slot.rescaled != nullptr) return &kRescaled;
  return nullptr;
}

std::vector<std::pair<int, std::string>> EpilogueEmitter::exchanged(const Slot& slot) {
  const PartialForm* form = partial_form(slot);
  if (form == nullptr) return {{0, ""}};
  std::vector<std::pair<int, std::string>> floats;
  for (const PartialForm::Part& part : form->parts) floats.emplace_back(part.offset, part.suffix);
  std::sort(floats.begin(), floats.end());
  return floats;
}

void EpilogueEmitter::merged_start(CodeStream& out, const Slot& slot,
                                   const std::function<std::string(const PartialForm::Part&)>& first) const {
  std::string locals;
  for (const PartialForm::Part& part : partial_form(slot)->parts) {
    locals += (locals.empty() ? "" : ", ") + part.local + " = " + first(part);
  }
  out.line("float " + locals + ";");
}

std::string EpilogueEmitter::merged_combine(const Slot& slot,
                                            const std::function<std::string(int offset)>& other) const {
  const PartialForm& form = *partial_form(slot);
  std::string args;
  for (const PartialForm::Part& part : form.parts) args += part.local + ", ";
  for (std::size_t i = 0; i < form.parts.size(); ++i)
    args += (i > 0 ? ", " : "") + other(form.parts[i].offset);
  return form.combine_fn + "(" + args + ");";
}

void EpilogueEmitter::merged_store(CodeStream& out, const Slot& slot) const {
  const std::string name = slot_name(slot.stage, slot.index);
  std::string stores;
  for (const PartialForm::Part& part : partial_form(slot)->parts) {
    stores += (stores.empty() ? "" : ", ") + name + part.suffix + "[h] = " + part.local;
  }
  out.line(stores + ";");
}

void EpilogueEmitter::helpers(CodeStream& out) const {
  if (schedule_.approximate_math) {
    define_approximate_math(out, "2^x on the special-function unit (approximate_math: exp of the elements).",
                            "tanh on the special-function unit (approximate_math: tanh of the elements).");
    out.line();
  }
  if (schedule_.fenced_exchange_arrive) {
    out.line(
        "// An arrival on a peer's mbarrier without release semantics (a cluster fence before it releases).");
    out.open("__device__ __forceinline__ void mbar_arrive_cluster_relaxed(u32 remote_bar)");
    out.line(
        R"(asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote_bar) : "memory");)");
    out.close();
    out.line();
  }
  if (schedule_.relaxed_exchange_wait) {
    out.line(
        "// Waits for a cluster exchange: relaxed cluster-scope polls (no L1 invalidation a spin), then one");
    out.line("// cluster-scope fence, which makes the peers' distributed-shared-memory writes visible.");
    out.open("__device__ __forceinline__ void mbar_wait_cluster_relaxed(u64* bar, u32 parity)");
    out.line("u32 done;");
    out.open("do");
    out.line(
        R"(asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 p, [%1], %2; )"
        R"(selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");)");
    out.close(" while (!done);");
    out.line(R"(asm volatile("fence.acq_rel.cluster;" ::: "memory");)");
    out.close();
    out.line();
  }
  if (!plan_.rescaled.empty()) {
    out.line(
        "// Two (sum of exp(x - max), max) partials into the first: both rescaled to the larger maximum.");
    out.open("__device__ __forceinline__ void rescaled_combine(float& s, float& m, float sb, float mb)");
    out.line("const float top = fmaxf(m, mb);");
    out.line("if (top == __int_as_float(0xff800000)) return;  // both empty");
    out.line("s = (m == top ? s : s * expf(m - top)) + (mb == top ? sb : sb * expf(mb - top));");
    out.line("m = top;");
    out.close();
    out.line();
  }
  if (plan_.centered.empty()) return;
  out.line(
      "// Chan's combine of two (count, mean, sum of squared deviations about the mean) partials into the");
  out.line(
      "// first: exact in real arithmetic, and without the cancellation of a sum of squares minus a square.");
  out.open(
      "__device__ __forceinline__ void chan_combine(float& n, float& mean, float& m2, float nb, float meanb, "
      "float m2b)");
  out.line("if (nb == 0.0f) return;");
  out.line("const float total = n + nb;");
  out.line("const float delta = meanb - mean;");
  out.line("const float w = nb / total;");
  out.line("mean = fmaf(delta, w, mean);");
  out.line("m2 = m2 + m2b + delta * delta * n * w;");
  out.line("n = total;");
  out.close();
  out.line();
}

// Each thread sums its values shifted by its first one (close to the mean, so the squares do not cancel).
void EpilogueEmitter::centered_update(CodeStream& out, const Slot& slot, const std::string& value,
                                      bool interior) const {
  const std::string name = slot_name(slot.stage, slot.index);
  out.open("if (inb)");
  out.line("const float cx = " + value + ";");
  if (interior && schedule::tiles_per_warpgroup(plan_, schedule_) == 1) {
    // The warpgroup's one tile of the row block, wholly inside: elements 0 and 2 open rows h = 0 and 1.
    out.line("if ((i & 1) == 0 && i < 4) " + name +
             "_c[h] = cx;  // the shift: the row's first element here");
  } else {
    out.line("if (" + name + "_n[h] == 0.0f) " + name + "_c[h] = cx;");
  }
  out.line("const float d = cx - " + name + "_c[h];");
  out.line(name + "_s[h] += d;");
  out.line(name + "[h] = fmaf(d, d, " + name + "[h]);");
  out.line(name + "_n[h] += 1.0f;");
  out.close();
}

void EpilogueEmitter::centered_finish_thread(CodeStream& out, const Slot& slot) const {
  const std::string name = slot_name(slot.stage, slot.index);
  out.open("for (int h = 0; h < 2; ++h)");
  out.line("// '" + slot.owner.name() + "': this thread's count, mean and sum of squared deviations");
  out.line("const float n = " + name + "_n[h], s = " + name + "_s[h];");
  out.line(name + "_c[h] = n > 0.0f ? " + name + "_c[h] + s / n : 0.0f;");
  out.line(name + "[h] = n > 0.0f ? fmaxf(" + name + "[h] - s * s / n, 0.0f) : 0.0f;");
  out.close();
}

// A running maximum and the sum of exp(x - it), rescaled when it grows; x = -inf adds nothing.
void EpilogueEmitter::rescaled_update(CodeStream& out, const Slot& slot, const std::string& value) const {
  const std::string name = slot_name(slot.stage, slot.index);
  out.open("if (inb)");
  out.line("const float cx = " + value + ";");
  if (schedule_.branchless_online_update) {
    // A new maximum rescales the sum by exp(m - cx) and adds exp(0) = 1; otherwise exp(cx - m) is added. Both
    // are exp(-|cx - m|); -inf (a masked term) adds nothing, and the first finite term finds m = -inf.
    out.line("const float d = cx - " + name + "_m[h];");
    out.line("const float e = cx == __int_as_float(0xff800000) ? 0.0f : expf(-fabsf(d));");
    out.line(name + "[h] = d > 0.0f ? fmaf(" + name + "[h], e, 1.0f) : " + name + "[h] + e;");
    out.line(name + "_m[h] = fmaxf(" + name + "_m[h], cx);");
    out.close();
    return;
  }
  out.open("if (cx > " + name + "_m[h])");
  out.line(name + "[h] *= expf(" + name + "_m[h] - cx);");
  out.line(name + "_m[h] = cx;");
  out.close();
  out.line("if (cx != __int_as_float(0xff800000)) " + name + "[h] += expf(cx - " + name + "_m[h]);");
  out.close();
}

// Over the quad: the combine is symmetric (a sum of the two rescaled partials), so every lane ends the same.
void EpilogueEmitter::rescaled_quad_combine(CodeStream& out, const Slot& slot) const {
  const std::string name = slot_name(slot.stage, slot.index);
  out.open("for (int h = 0; h < 2; ++h)");
  out.line("float s = " + name + "[h], m = " + name + "_m[h];");
  out.open("for (int x = 1; x <= 2; x *= 2)");
  out.line("const float os = __shfl_xor_sync(0xffffffffu, s, x);");
  out.line("const float om = __shfl_xor_sync(0xffffffffu, m, x);");
  out.line("rescaled_combine(s, m, os, om);");
  out.close();
  out.line(name + "[h] = s, " + name + "_m[h] = m;");
  out.close();
}

// Over the quad, the lower lane's partial first, so that every lane of a row ends with the same bits.
void EpilogueEmitter::centered_quad_combine(CodeStream& out, const Slot& slot) const {
  const std::string name = slot_name(slot.stage, slot.index);
  out.open("for (int h = 0; h < 2; ++h)");
  out.line("float n = " + name + "_n[h], mean = " + name + "_c[h], m2 = " + name + "[h];");
  out.open("for (int x = 1; x <= 2; x *= 2)");
  out.line("const float on = __shfl_xor_sync(0xffffffffu, n, x);");
  out.line("const float om = __shfl_xor_sync(0xffffffffu, mean, x);");
  out.line("const float oq = __shfl_xor_sync(0xffffffffu, m2, x);");
  out.open("if (lane & x)");
  out.line("const float tn = n, tm = mean, tq = m2;");
  out.line("n = on, mean = om, m2 = oq;");
  out.line("chan_combine(n, mean, m2, tn, tm, tq);");
  out.close();
  out.line("else chan_combine(n, mean, m2, on, om, oq);");
  out.close();
  out.line(name + "_n[h] = n, " + name + "_c[h] = mean, " + name + "[h] = m2;");
  out.close();
}

}  // namespace comfuse::codegen
