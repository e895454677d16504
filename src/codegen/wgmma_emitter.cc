// wgmma step functions as inline PTX.
#include "codegen/wgmma_emitter.h"

namespace comfuse::codegen {
namespace {

std::string type_of(te::DType operand) {
  return operand == te::DType::bf16 ? "bf16" : "f16";
}

std::string accumulator_list(int regs) {
  std::string registers;
  for (int r = 0; r < regs; ++r) registers += (r ? ", %" : "%") + std::to_string(r);
  return registers;
}

std::string accumulator_operands(int regs) {
  std::string outputs;
  for (int r = 0; r < regs; ++r)
    outputs += std::string(r ? ", " : "") + "\"+f\"(d[" + std::to_string(r) + "])";
  return outputs;
}

}  // namespace

void emit_wgmma_ss(CodeStream& out, const std::string& name, int n, te::DType operand, bool b_n_major) {
  const int regs = n / 2;
  const std::string type = type_of(operand);
  out.line("// One m64n" + std::to_string(n) +
           "k16 tensor-core step: d += A(desc_a) * B(desc_b)^T, or d = ... when scale_d is 0.");
  out.open("__device__ __forceinline__ void " + name + "(float (&d)[" + std::to_string(regs) +
           "], u64 desc_a, u64 desc_b, int scale_d)");
  out.line("asm volatile(");
  out.line("    \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 2) + ", 0;\\n\"");
  out.line("    \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." + type +
           " {" + accumulator_list(regs) + "}, %" + std::to_string(regs) + ", %" + std::to_string(regs + 1) +
           ", p, 1, 1, 0, " + (b_n_major ? "1" : "0") + ";\\n}\\n\"");
  out.line("    : " + accumulator_operands(regs));
  out.line("    : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));");
  out.close();
}

void emit_wgmma_rs(CodeStream& out, const std::string& name, int n, te::DType operand, bool b_n_major) {
  const int regs = n / 2;
  const std::string type = type_of(operand);
  const std::string a = "{%" + std::to_string(regs) + ", %" + std::to_string(regs + 1) + ", %" +
                        std::to_string(regs + 2) + ", %" + std::to_string(regs + 3) + "}";
  out.line(
      "// One m64n" + std::to_string(n) +
      "k16 tensor-core step with A from registers: d += A(a) * B(desc_b)^T, or d = ... when scale_d is 0.");
  out.open("__device__ __forceinline__ void " + name + "(float (&d)[" + std::to_string(regs) +
           "], const u32 (&a)[4], u64 desc_b, int scale_d)");
  out.line("asm volatile(");
  out.line("    \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 5) + ", 0;\\n\"");
  out.line("    \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." + type +
           " {" + accumulator_list(regs) + "}, " + a + ", %" + std::to_string(regs + 4) + ", p, 1, 1, " +
           (b_n_major ? "1" : "0") + ";\\n}\\n\"");
  out.line("    : " + accumulator_operands(regs));
  out.line("    : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc_b), \"r\"(scale_d));");
  out.close();
}

}  // namespace comfuse::codegen
