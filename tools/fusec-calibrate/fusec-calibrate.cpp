//===- fusec-calibrate.cpp - Measure the roofs of the GPU at hand -*- C++ -*-===//
//
// Runs PTX micro-kernels through the runtime and writes a target file whose
// measured figures override its base target's (lib/Target/targets/*.json):
// copy bandwidth, the bf16 tensor-core rate (wgmma, sm_90a), the FP32 FMA
// rate, the SFU ex2 rate and the back-to-back launch gap; and which 16-byte
// load the code generator should use for streamed and for re-read tensors
// (the file's "codegen" choices: the fastest of each variant, measured).
// LLVM-free.
//
//   fusec-calibrate -o h200-measured.json [--base=h200] [--name=h200-measured]
//                   [--copy-mib=2048] [--runs=7]
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "fusec/Runtime/Runtime.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace fusec;
using namespace fusec::calibrate;

namespace {

struct Options {
  std::string output;
  std::string base;
  std::string name;
  int64_t copyMiB = 2048;
  int runs = 7;
  std::string emitKernels;
};

void usage() {
  std::fprintf(stderr,
               "usage: fusec-calibrate -o FILE.json [--base=h200|h100|b200] "
               "[--name=NAME] [--copy-mib=N] [--runs=N]\n"
               "       fusec-calibrate --emit-kernels=DIR  (write the micro-kernels' PTX)\n"
               "Measures the GPU at hand and writes a target file for "
               "--fusec-roofline-report=target=FILE.json.\n");
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "fusec-calibrate: error: %s\n", msg.c_str());
  return 2;
}

/// Median over `runs` of a timed launch sequence, in milliseconds.
absl::StatusOr<double> medianMs(const rt::Stream &stream, int runs,
                                const std::function<absl::Status()> &work) {
  auto start = rt::Event::create(), end = rt::Event::create();
  if (!start.ok())
    return start.status();
  if (!end.ok())
    return end.status();
  if (auto st = work(); !st.ok()) // warm-up
    return st;
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    if (auto st = start->record(stream); !st.ok())
      return st;
    if (auto st = work(); !st.ok())
      return st;
    if (auto st = end->record(stream); !st.ok())
      return st;
    if (auto st = end->synchronize(); !st.ok())
      return st;
    auto e = rt::Event::elapsedMs(*start, *end);
    if (!e.ok())
      return e.status();
    ms.push_back(*e);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Measurement {
  std::string figure; // target-file key
  double value = 0;   // in the key's unit
  std::string detail; // how it was measured
};

} // namespace

int main(int argc, char **argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      if (a.compare(0, n, flag) == 0 && a.size() > n && a[n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    if ((a == "-o" || a == "--output") && i + 1 < argc)
      opt.output = argv[++i];
    else if (const char *v = val("--output"))
      opt.output = v;
    else if (const char *v = val("--base"))
      opt.base = v;
    else if (const char *v = val("--name"))
      opt.name = v;
    else if (const char *v = val("--copy-mib"))
      opt.copyMiB = std::atoll(v);
    else if (const char *v = val("--runs"))
      opt.runs = std::max(1, std::atoi(v));
    else if (const char *v = val("--emit-kernels"))
      opt.emitKernels = v;
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      usage();
      return fail("unknown argument '" + a + "'");
    }
  }
  if (!opt.emitKernels.empty()) {
    // Every micro-kernel's PTX, for ptxas (no GPU needed).
    std::vector<std::pair<std::string, std::string>> kernels = {
        {"fma", fmaPtx()}, {"ex2", ex2Ptx()}, {"wgmma", wgmmaPtx()}, {"empty", emptyPtx()}};
    for (StreamVariant v : {StreamVariant::Plain, StreamVariant::NoAllocate,
                            StreamVariant::L2_256B, StreamVariant::EvictFirst})
      kernels.push_back({absl::StrCat("copy_", streamVariantName(v)), copyPtx(v)});
    for (KeepVariant v : {KeepVariant::Plain, KeepVariant::EvictLast, KeepVariant::NC})
      kernels.push_back({absl::StrCat("keep_", keepVariantName(v)), keepPtx(v)});
    for (auto &[name, ptx] : kernels) {
      std::ofstream f(opt.emitKernels + "/" + name + ".ptx");
      if (!(f << ptx))
        return fail("cannot write " + opt.emitKernels + "/" + name + ".ptx");
    }
    std::printf("wrote %zu kernels to %s\n", kernels.size(), opt.emitKernels.c_str());
    return 0;
  }
  if (opt.output.empty()) {
    usage();
    return fail("no output file (-o)");
  }
  if (auto st = rt::available(); !st.ok())
    return fail(std::string(st.message()));
  auto info = rt::deviceInfo();
  if (!info.ok())
    return fail(std::string(info.status().message()));
  if (opt.base.empty()) {
    std::string n = info->name;
    opt.base = n.find("H200") != std::string::npos   ? "h200"
               : n.find("H100") != std::string::npos ? "h100"
               : n.find("B200") != std::string::npos ? "b200"
                                                     : "";
    if (opt.base.empty())
      return fail("unknown device '" + n + "': give --base");
  }
  if (opt.name.empty())
    opt.name = opt.base + "-measured";
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  std::string where = absl::StrCat(info->name, " (", info->arch(), ", ",
                                   info->smCount, " SMs, CUDA driver API ",
                                   info->driverVersion / 1000, ".",
                                   info->driverVersion % 1000 / 10, "), ", date);
  std::printf("fusec-calibrate on %s\n", where.c_str());

  auto stream = rt::Stream::create();
  if (!stream.ok())
    return fail(std::string(stream.status().message()));
  auto load = [&](const std::string &ptx, const char *entry)
      -> absl::StatusOr<std::pair<rt::Module, rt::Kernel>> {
    auto m = rt::Module::loadPtx(ptx);
    if (!m.ok())
      return m.status();
    auto k = m->kernel(entry);
    if (!k.ok())
      return k.status();
    return std::make_pair(std::move(*m), *k);
  };
  const unsigned sms = static_cast<unsigned>(info->smCount);
  std::vector<Measurement> results;
  struct ChoiceMade {
    std::string key, value, detail;
  };
  std::vector<ChoiceMade> choices;
  auto out = rt::DeviceBuffer::allocate(int64_t(sms) * 64 * 1024 * 4);
  if (!out.ok())
    return fail(std::string(out.status().message()));

  // Copy bandwidth: bytes read + written, best launch shape.
  {
    int64_t bytes = opt.copyMiB << 20;
    auto src = rt::DeviceBuffer::allocate(bytes), dst = rt::DeviceBuffer::allocate(bytes);
    if (!src.ok() || !dst.ok())
      return fail("cannot allocate the copy buffers");
    (void)src->fill(0x5A);
    (void)dst->fill(0x00);
    auto k = load(copyPtx(), "copy");
    if (!k.ok())
      return fail(std::string(k.status().message()));
    double best = 0;
    std::string bestShape;
    for (auto [blocksPerSm, threads] : {std::pair{2u, 1024u}, {4u, 512u}, {8u, 256u}, {16u, 256u}, {32u, 128u}}) {
      uint64_t s = src->devicePtr(), d = dst->devicePtr(), n16 = bytes / 16;
      rt::Dim3 grid{sms * blocksPerSm}, block{threads};
      auto ms = medianMs(*stream, opt.runs, [&] {
        return k->second.launchWith(grid, block, 0, *stream, s, d, n16);
      });
      if (!ms.ok())
        return fail(std::string(ms.status().message()));
      double tbps = 2.0 * bytes / (*ms * 1e-3) / 1e12;
      std::printf("  copy %4u x %4u threads: %.3f ms, %.3f TB/s\n", grid.x, threads, *ms, tbps);
      if (tbps > best) {
        best = tbps;
        bestShape = absl::StrCat(grid.x, "x", threads);
      }
    }
    // The copy must have copied: every byte of dst is src's 0x5A (dst was
    // zeroed before the first launch).
    {
      std::vector<uint8_t> host(static_cast<size_t>(bytes));
      if (auto st = dst->copyToHost(host.data(), bytes); !st.ok())
        return fail(std::string(st.message()));
      for (size_t i = 0; i < host.size(); ++i)
        if (host[i] != 0x5A)
          return fail(absl::StrCat("the copy kernel is wrong: byte ", i, " is ",
                                   host[i], ", expected 90"));
    }
    results.push_back({"hbm_tb_per_s", best,
                       absl::StrFormat("copy of %d MiB (read + written), four 16-byte loads in flight per thread, grid %s, median of %d",
                                       opt.copyMiB, bestShape, opt.runs)});

    // Which 16-byte load streams fastest: the same copy with each variant,
    // at the best shape. A variant must win by more than 1% to replace plain.
    double plain = 0, fastest = 0;
    StreamVariant chosen = StreamVariant::Plain;
    std::string all;
    for (StreamVariant v : {StreamVariant::Plain, StreamVariant::NoAllocate,
                            StreamVariant::L2_256B, StreamVariant::EvictFirst}) {
      auto kv = load(copyPtx(v), "copy");
      if (!kv.ok())
        return fail(std::string(kv.status().message()));
      unsigned blocks = static_cast<unsigned>(std::stoul(bestShape.substr(0, bestShape.find('x'))));
      unsigned threads = static_cast<unsigned>(std::stoul(bestShape.substr(bestShape.find('x') + 1)));
      uint64_t s = src->devicePtr(), d = dst->devicePtr(), n16 = bytes / 16;
      auto ms = medianMs(*stream, opt.runs, [&] {
        return kv->second.launchWith(rt::Dim3{blocks}, rt::Dim3{threads}, 0, *stream, s, d, n16);
      });
      if (!ms.ok())
        return fail(std::string(ms.status().message()));
      double tbps = 2.0 * bytes / (*ms * 1e-3) / 1e12;
      std::printf("  stream load %-12s %.3f TB/s\n", streamVariantName(v), tbps);
      absl::StrAppend(&all, all.empty() ? "" : ", ", streamVariantName(v), " ",
                      absl::StrFormat("%.3f", tbps));
      if (v == StreamVariant::Plain)
        plain = fastest = tbps;
      else if (tbps > fastest && tbps > plain * 1.01)
        fastest = tbps, chosen = v;
    }
    choices.push_back({"stream_load", streamVariantName(chosen),
                       absl::StrCat("copy of ", opt.copyMiB, " MiB with each load (TB/s): ", all)});

    // Which load keeps a re-read table best: a stream plus a 16 KiB table
    // every CTA reads.
    double keepPlain = 0, keepBest = 0;
    KeepVariant keepChosen = KeepVariant::Plain;
    std::string keepAll;
    auto table = rt::DeviceBuffer::allocate(16 << 10);
    if (!table.ok())
      return fail(std::string(table.status().message()));
    (void)table->fill(0x11);
    for (KeepVariant v : {KeepVariant::Plain, KeepVariant::EvictLast, KeepVariant::NC}) {
      auto kv = load(keepPtx(v), "keep");
      if (!kv.ok())
        return fail(std::string(kv.status().message()));
      uint64_t s = src->devicePtr(), g = table->devicePtr(), d = dst->devicePtr();
      uint64_t n16 = bytes / 16, mask = (16 << 10) / 16 - 1;
      auto ms = medianMs(*stream, opt.runs, [&] {
        return kv->second.launchWith(rt::Dim3{sms * 8}, rt::Dim3{256}, 0, *stream, s, g, d, n16, mask);
      });
      if (!ms.ok())
        return fail(std::string(ms.status().message()));
      double tbps = 2.0 * bytes / (*ms * 1e-3) / 1e12;
      std::printf("  keep load %-12s %.3f TB/s\n", keepVariantName(v), tbps);
      absl::StrAppend(&keepAll, keepAll.empty() ? "" : ", ", keepVariantName(v), " ",
                      absl::StrFormat("%.3f", tbps));
      if (v == KeepVariant::Plain)
        keepPlain = keepBest = tbps;
      else if (tbps > keepBest && tbps > keepPlain * 1.01)
        keepBest = tbps, keepChosen = v;
    }
    choices.push_back({"keep_load", keepVariantName(keepChosen),
                       absl::StrCat("a ", opt.copyMiB, " MiB stream plus a 16 KiB table every CTA re-reads, "
                                    "with each load of the table (TB/s): ", keepAll)});
  }

  // FP32 FMA rate.
  {
    auto k = load(fmaPtx(), "fma");
    if (!k.ok())
      return fail(std::string(k.status().message()));
    uint32_t iters = 65536;
    rt::Dim3 grid{sms * 8}, block{256};
    uint64_t o = out->devicePtr();
    auto ms = medianMs(*stream, opt.runs, [&] {
      return k->second.launchWith(grid, block, 0, *stream, o, iters);
    });
    if (!ms.ok())
      return fail(std::string(ms.status().message()));
    double flops = 2.0 * kFmaChains * iters * grid.x * block.x;
    double tflops = flops / (*ms * 1e-3) / 1e12;
    std::printf("  fp32 fma: %.3f ms, %.2f TFLOP/s\n", *ms, tflops);
    results.push_back({"fp32_tflops", tflops,
                       absl::StrFormat("%d independent fma.rn.f32 chains per thread, %d x %d threads, median of %d",
                                       kFmaChains, grid.x, block.x, opt.runs)});
  }

  // SFU ex2 rate.
  double ex2PerSecond = 0;
  {
    auto k = load(ex2Ptx(), "ex2");
    if (!k.ok())
      return fail(std::string(k.status().message()));
    uint32_t iters = 16384;
    rt::Dim3 grid{sms * 8}, block{256};
    uint64_t o = out->devicePtr();
    auto ms = medianMs(*stream, opt.runs, [&] {
      return k->second.launchWith(grid, block, 0, *stream, o, iters);
    });
    if (!ms.ok())
      return fail(std::string(ms.status().message()));
    ex2PerSecond = double(kEx2Chains) * iters * grid.x * block.x / (*ms * 1e-3);
    std::printf("  sfu ex2: %.3f ms, %.3f Tex2/s\n", *ms, ex2PerSecond / 1e12);
  }

  // bf16 tensor cores: wgmma m64n256k16 from shared memory (sm_90a only).
  if (info->computeMajor == 9) {
    auto k = load(wgmmaPtx(), "wgmma");
    if (!k.ok())
      return fail(std::string(k.status().message()));
    uint32_t iters = 4096;
    double best = 0;
    std::string bestShape;
    for (unsigned perSm : {1u, 2u, 3u}) {
      rt::Dim3 grid{sms * perSm}, block{128};
      uint64_t o = out->devicePtr();
      auto ms = medianMs(*stream, opt.runs, [&] {
        return k->second.launchWith(grid, block, 0, *stream, o, iters);
      });
      if (!ms.ok())
        return fail(std::string(ms.status().message()));
      double tflops = kWgmmaFlops * kWgmmaUnroll * iters * grid.x / (*ms * 1e-3) / 1e12;
      std::printf("  bf16 wgmma %u warpgroup(s)/SM: %.3f ms, %.1f TFLOP/s\n", perSm, *ms, tflops);
      if (tflops > best) {
        best = tflops;
        bestShape = absl::StrCat(perSm, " warpgroup(s) per SM");
      }
    }
    results.push_back({"tensor_tflops_bf16", best,
                       absl::StrFormat("wgmma.mma_async m64n256k16 bf16->f32 from shared memory, %s, median of %d",
                                       bestShape, opt.runs)});
  } else {
    std::printf("  bf16 tensor rate: skipped (the wgmma kernel needs sm_90a)\n");
  }

  // Launch gap: back-to-back empty kernels.
  {
    auto k = load(emptyPtx(), "empty");
    if (!k.ok())
      return fail(std::string(k.status().message()));
    const int n = 2000;
    auto ms = medianMs(*stream, opt.runs, [&]() -> absl::Status {
      for (int i = 0; i < n; ++i)
        if (auto st = k->second.launch(rt::Dim3{1}, rt::Dim3{32}, 0, *stream, nullptr); !st.ok())
          return st;
      return absl::OkStatus();
    });
    if (!ms.ok())
      return fail(std::string(ms.status().message()));
    double us = *ms * 1e3 / n;
    std::printf("  launch: %.3f us per back-to-back empty kernel\n", us);
    results.push_back({"launch_us", us,
                       absl::StrFormat("%d back-to-back empty kernels on one stream, median of %d", n, opt.runs)});
  }

  results.push_back({"sfu_ex2_per_clock_per_sm", 0,
                     absl::StrFormat("%d independent ex2.approx.ftz.f32 chains per thread: %.4g ex2/s, "
                                     "divided by SMs x the base target's boost clock",
                                     kEx2Chains, ex2PerSecond)});

  std::string json = absl::StrCat(
      "{\n  \"base\": \"", opt.base, "\",\n  \"name\": \"", opt.name,
      "\",\n  \"description\": \"Measured by fusec-calibrate on ", where,
      "; figures not listed come from the base target ", opt.base,
      ".\",\n  \"measured\": {\"ex2_per_s\": ", absl::StrFormat("%.6g", ex2PerSecond),
      ", \"sm_count\": ", sms, "},\n  \"figures\": {\n");
  for (size_t i = 0; i < results.size(); ++i) {
    const Measurement &m = results[i];
    std::string value = m.figure == "sfu_ex2_per_clock_per_sm"
                            ? "SFU_PER_CLOCK"
                            : absl::StrFormat("%.4g", m.value);
    absl::StrAppend(&json, "    \"", m.figure, "\": {\"value\": ", value,
                    ", \"source\": \"measured: fusec-calibrate, ", m.detail,
                    ", ", where, "\"}", i + 1 < results.size() ? "," : "", "\n");
  }
  absl::StrAppend(&json, "  },\n  \"codegen\": {\n");
  for (size_t i = 0; i < choices.size(); ++i)
    absl::StrAppend(&json, "    \"", choices[i].key, "\": {\"value\": \"", choices[i].value,
                    "\", \"source\": \"measured: fusec-calibrate, ", choices[i].detail, ", median of ",
                    opt.runs, ", ", where, "\"}", i + 1 < choices.size() ? "," : "", "\n");
  absl::StrAppend(&json, "  }\n}\n");
  // Per clock per SM, at the base target's boost clock (the SM clock under
  // this load is not exposed without NVML).
  double ghz = opt.base == "b200" ? 1.965 : 1.98;
  double perClock = ex2PerSecond / (double(sms) * ghz * 1e9);
  json.replace(json.find("SFU_PER_CLOCK"), 13, absl::StrFormat("%.4g", perClock));
  std::printf("  sfu ex2: %.2f per clock per SM at %.3f GHz\n", perClock, ghz);
  std::ofstream file(opt.output);
  if (!file)
    return fail("cannot write " + opt.output);
  file << json;
  std::printf("wrote %s\n", opt.output.c_str());
  return 0;
}
