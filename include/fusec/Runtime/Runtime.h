//===- Runtime.h - CUDA driver runtime: devices, memory, launches -*- C++ -*-===//
//
// The LLVM-free runtime that loads and launches kernels. The CUDA driver is
// loaded at run time (dlopen of libcuda.so.1), so a program linked against
// this starts on a machine with no GPU or no driver; every call then returns
// a clean absl::Status saying so. Errors name the CUDA error and what was
// being done; nothing aborts on a user error.
//
// All objects use the primary context of one device (FUSEC_DEVICE, default 0)
// and make it current on the calling thread as needed.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_RUNTIME_H
#define FUSEC_RUNTIME_RUNTIME_H

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <memory>
#include <functional>
#include <string>
#include <vector>

namespace fusec::rt {

/// OK if a CUDA driver and a device are usable; otherwise why not
/// (absl::StatusCode::kUnavailable for "no driver" and "no device").
absl::Status available();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int smCount = 0;
  int64_t totalMemory = 0;
  int64_t l2Bytes = 0;
  int driverVersion = 0;
  /// "sm_90a" style architecture name for codegen (the `a` suffix for the
  /// architecture-specific features of sm_90 and later).
  std::string arch() const;
};
absl::StatusOr<DeviceInfo> deviceInfo();

/// A CUDA stream. Move-only; destroyed with the object.
class Stream {
public:
  static absl::StatusOr<Stream> create();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  ~Stream();
  absl::Status synchronize();
  /// Whether a CUDA graph capture is recording this stream's work.
  absl::StatusOr<bool> capturing() const;
  /// The CUstream handle.
  void *handle() const { return stream; }

private:
  explicit Stream(void *s) : stream(s) {}
  void *stream = nullptr;
};

/// Device memory. Move-only; freed with the object.
class DeviceBuffer {
public:
  static absl::StatusOr<DeviceBuffer> allocate(int64_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  /// Copies `bytes` bytes in; asynchronous on `stream` when given (the host
  /// memory must then stay alive until the stream reaches the copy).
  absl::Status copyFromHost(const void *src, int64_t bytes,
                            Stream *stream = nullptr);
  absl::Status copyToHost(void *dst, int64_t bytes,
                          Stream *stream = nullptr) const;
  absl::Status copyFrom(const DeviceBuffer &src, int64_t bytes,
                        Stream *stream = nullptr);
  /// Sets every byte; complete when it returns (before any stream's later
  /// work).
  absl::Status fill(uint8_t byte);

  /// The CUdeviceptr.
  uint64_t devicePtr() const { return ptr; }
  int64_t size() const { return bytes; }

private:
  uint64_t ptr = 0;
  int64_t bytes = 0;
};

/// A grid or block shape.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// A kernel entry of a loaded module. Valid while its Module lives.
class Kernel {
public:
  Kernel() = default;
  /// Launches with `args[i]` pointing at the i-th kernel parameter.
  /// `programmatic`: with programmatic dependent launch allowed (sm_90 on;
  /// the kernel must run griddepcontrol.wait before it reads what the
  /// kernel before it in the stream writes).
  absl::Status launch(Dim3 grid, Dim3 block, unsigned sharedBytes,
                      const Stream &stream, void **args, bool programmatic = false) const;
  /// Typed convenience: launch(grid, block, 0, stream, ptrA, ptrB, n).
  template <typename... Args>
  absl::Status launchWith(Dim3 grid, Dim3 block, unsigned sharedBytes,
                          const Stream &stream, Args... args) const {
    void *ptrs[] = {static_cast<void *>(&args)..., nullptr};
    return launch(grid, block, sharedBytes, stream, ptrs);
  }
  const std::string &name() const { return entry; }
  void *handle() const { return function; }

private:
  friend class Module;
  Kernel(void *f, std::string name)
      : function(f), entry(std::move(name)), optedInShared(std::make_shared<unsigned>(0)) {}
  void *function = nullptr;
  std::string entry;
  /// The dynamic shared memory this function was allowed (above 48 KiB a
  /// kernel must opt in; launch does it once), shared by copies.
  std::shared_ptr<unsigned> optedInShared = std::make_shared<unsigned>(0);
};

/// A TMA descriptor's shape (cuTensorMapEncodeTiled): dims in elements and
/// strides in bytes (dims 1 and up), innermost first; the box a copy moves;
/// the shared-memory swizzle in bytes (0, 32, 64, 128). Out-of-bounds
/// elements read as zero and are not written. `elementStrides` (empty: all
/// 1) is the traversal stride of each dim. With `lower` and `upper` (a
/// corner per spatial dim of a channels-last [C, spatial..., N] tensor) the
/// map is an im2col one (cuTensorMapEncodeIm2col): the box is channels per
/// pixel by pixels per column.
struct TensorMapSpec {
  int elementBytes = 2;
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box;
  int swizzleBytes = 128;
  std::vector<int> lower, upper;
  std::vector<uint32_t> elementStrides;
  bool im2col() const { return !lower.empty(); }
};

/// Encodes the 128-byte CUtensorMap of `spec` over device address `address`
/// into `out` (64-byte aligned). Needs the driver (no GPU work).
absl::Status encodeTensorMap(const TensorMapSpec &spec, uint64_t address, void *out);

/// A loaded module. Move-only; unloaded with the object.
class Module {
public:
  /// Loads a cubin (or fatbin) image.
  static absl::StatusOr<Module> loadCubin(absl::string_view image);
  /// Compiles PTX for this device with nvJitLink where present, else lets
  /// the driver JIT it.
  static absl::StatusOr<Module> loadPtx(absl::string_view ptx);
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  ~Module();
  absl::StatusOr<Kernel> kernel(absl::string_view name) const;

private:
  explicit Module(void *m) : module(m) {}
  void *module = nullptr;
};

/// Compiles PTX to a cubin for `arch` ("sm_90a"; empty: this device's, or the
/// PTX's own `.target`) with nvJitLink, in process. Needs no GPU, only the
/// nvJitLink library (CUDA 12+). kUnavailable if nvJitLink is absent.
absl::StatusOr<std::string> compilePtx(absl::string_view ptx,
                                       absl::string_view arch = "");

/// A CUDA event for timing.
class Event {
public:
  static absl::StatusOr<Event> create();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  ~Event();
  absl::Status record(const Stream &stream);
  absl::Status synchronize();
  /// Makes the work `stream` is given from now on wait until this event
  /// (as last recorded) completes: an order between streams.
  absl::Status orderBefore(const Stream &stream) const;
  /// Milliseconds from `start` to `end` (both recorded and complete).
  static absl::StatusOr<float> elapsedMs(const Event &start, const Event &end);

private:
  explicit Event(void *e) : event(e) {}
  void *event = nullptr;
};

/// A CUDA graph: the launches and copies one callback enqueues on a stream,
/// captured once and replayed with a single launch.
class Graph {
public:
  /// Captures what `launches` enqueues on `stream` (nothing runs during
  /// the capture). An error from `launches` or from the capture (an
  /// operation that cannot be captured) is returned, and the stream is
  /// usable again.
  static absl::StatusOr<Graph> capture(const Stream &stream,
                                       const std::function<absl::Status()> &launches);
  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&other) noexcept;
  ~Graph();
  /// Enqueues the captured work on `stream`.
  absl::Status launch(const Stream &stream) const;

private:
  explicit Graph(void *e) : exec(e) {}
  void *exec = nullptr;
};

/// The attention intrinsic (runtime_kernels/attention_sm90.cu, the
/// FlashAttention-style forward kernel for sm_90a): O = softmax(Q Kᵀ ·
/// scale) V and the logsumexp. Q [B, Hq, Sq, D], K and V [B, Hkv, Skv, D],
/// O like Q, contiguous bf16 or f16; LSE [B, Hq, Sq] f32 (0: not written).
struct AttentionArgs {
  enum Dtype { kBf16 = 0, kF16 = 1 };
  uint64_t q = 0, k = 0, v = 0, o = 0, lse = 0; ///< device pointers
  /// [batch, skv] bytes, nonzero where a key is visible (a padding mask on
  /// top of `causal`); 0: every key is.
  uint64_t keyMask = 0;
  int batch = 0, heads = 0, kvHeads = 0, sq = 0, skv = 0, headDim = 0;
  float scale = 0;
  bool causal = false;
  int dtype = kBf16;
  /// Sets of the kernel's measured options (runtime_kernels/attention.h);
  /// -1: attention::defaultFlags (ping-pong and pipelining at head dims 64
  /// and 128, neither at 256: the fastest sets measured on the H200,
  /// bench/results/2026-12-04-h200-attention-persistent).
  int flags = -1;
  /// Launched with programmatic dependent launch allowed: the kernel may
  /// start while the kernel before it in the stream drains (it waits for
  /// that kernel before it touches memory).
  bool programmatic = false;
  /// Element strides (batch, head, seq) of Q, K, V and O in turn, each
  /// operand's head dim contiguous; a triple of zeros: that operand is
  /// contiguous [B, H, S, D]. (B, S, H, D) is {S·H·D, D, H·D}.
  int64_t strides[12] = {};
};

/// Checks the problem without a GPU: head dim 64, 128 or 256, kv heads
/// dividing heads, positive sizes, a positive finite scale, strides zero or
/// positive multiples of 8 elements. kInvalidArgument saying which.
absl::Status validateAttention(const AttentionArgs &args);

/// Whether the intrinsic is there: built into this runtime (when the build
/// had nvcc: the sm_90a fatbin is embedded), else its library
/// (libfusec_attention.so) loaded from $FUSEC_ATTENTION_LIB, ../lib/ beside
/// this executable or the loader's search path. kUnavailable saying where
/// it looked.
absl::Status attentionAvailable();

/// Validates, then enqueues the intrinsic on `stream`.
absl::Status attentionForward(const AttentionArgs &args, const Stream &stream);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_RUNTIME_H
