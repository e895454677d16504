// Builds the README's post-LayerNorm program, prints it with its workload key, and evaluates it with the
// CPU reference on random inputs.
#include <cstdlib>
#include <iostream>

#include "post_layernorm_dsl.h"
#include "te/interpreter.h"
#include "te/json.h"
#include "te/printer.h"

int main(int argc, char** argv) {
  using namespace comfuse;
  const std::int64_t M = argc > 1 ? std::atoll(argv[1]) : 64, K = argc > 2 ? std::atoll(argv[2]) : 96,
                     N = argc > 3 ? std::atoll(argv[3]) : 128;
  const te::Program program = examples::post_layernorm_program(M, K, N);
  std::cout << te::to_string(program) << "key " << te::workload_key(program) << "\n";
  std::vector<te::HostBuffer> inputs;
  std::uint64_t seed = 1;
  for (const te::Tensor& input : program.inputs())
    inputs.push_back(te::HostBuffer::random(input.dtype(), input.shape(), seed++));
  const te::HostBuffer out = te::evaluate(program, inputs).at(0);
  double row0_mean = 0;
  for (std::int64_t j = 0; j < N; ++j) row0_mean += out.get(j) / static_cast<double>(N);
  std::cout << "out[0, 0:4] =";
  for (std::int64_t j = 0; j < 4 && j < N; ++j) std::cout << " " << out.get(j);
  std::cout << "\nmean of row 0 = " << row0_mean << " (beta's mean shifts it from 0)\n";
  return 0;
}
