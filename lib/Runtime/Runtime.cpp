//===- Runtime.cpp - CUDA driver runtime ------------------------*- C++ -*-===//
//
// The driver and nvJitLink are loaded with dlopen; cuda.h and nvJitLink.h are
// used for their types only. Nothing here includes LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#include "fusec/Runtime/Runtime.h"
#include "fusec/Runtime/Faults.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include <cuda.h>
#include <nvJitLink.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <mutex>
#include <utility>
#include <vector>

namespace fusec::rt {

namespace {

#define FUSEC_STR(x) #x
#define FUSEC_XSTR(x) FUSEC_STR(x)

// Every driver entry point used; cuda.h maps several names to versioned
// symbols (cuMemAlloc -> cuMemAlloc_v2), which FUSEC_XSTR spells out.
#define FUSEC_CUDA_FUNCTIONS(X)                                                \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8)                                                                \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuLaunchKernelEx)                                                          \
  X(cuFuncSetAttribute)                                                        \
  X(cuTensorMapEncodeTiled)                                                    \
  X(cuTensorMapEncodeIm2col)                                                   \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamIsCapturing)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphExecDestroy)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)

struct Driver {
#define FUSEC_DECLARE(name) decltype(&::name) name = nullptr;
  FUSEC_CUDA_FUNCTIONS(FUSEC_DECLARE)
#undef FUSEC_DECLARE
  absl::Status status;
  CUcontext context = nullptr;
  CUdevice device = 0;
  int ordinal = 0;
};

std::string errorText(const Driver &d, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(r, &text);
  return absl::StrCat(name ? name : "CUDA error", " (", text ? text : "",
                      ") [", static_cast<int>(r), "]");
}

absl::Status cudaError(const Driver &d, CUresult r, absl::string_view what) {
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE ||
      r == CUDA_ERROR_NOT_INITIALIZED)
    code = absl::StatusCode::kUnavailable;
  else if (r == CUDA_ERROR_OUT_OF_MEMORY)
    code = absl::StatusCode::kResourceExhausted;
  else if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_IMAGE ||
           r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_NOT_FOUND ||
           r == CUDA_ERROR_INVALID_HANDLE)
    code = absl::StatusCode::kInvalidArgument;
  return absl::Status(code, absl::StrCat(what, ": ", errorText(d, r)));
}

Driver loadDriver() {
  Driver d;
  if (faultFires(FaultSite::Driver)) {
    d.status = absl::UnavailableError(
        "no CUDA driver: cannot load libcuda.so.1 (injected fault)");
    return d;
  }
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    d.status = absl::UnavailableError(
        absl::StrCat("no CUDA driver: cannot load libcuda.so.1 (",
                     err ? err : "unknown error", ")"));
    return d;
  }
#define FUSEC_LOAD(name)                                                       \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, FUSEC_XSTR(name)));   \
  if (!d.name) {                                                               \
    d.status = absl::UnavailableError(absl::StrCat(                            \
        "CUDA driver too old: libcuda.so.1 lacks ", FUSEC_XSTR(name)));        \
    return d;                                                                  \
  }
  FUSEC_CUDA_FUNCTIONS(FUSEC_LOAD)
#undef FUSEC_LOAD
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    d.status = cudaError(d, r, "no usable CUDA device: cuInit");
    d.status = absl::UnavailableError(d.status.message());
    return d;
  }
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    d.status = cudaError(d, r, "cuDeviceGetCount");
    return d;
  }
  if (const char *env = std::getenv("FUSEC_DEVICE"))
    d.ordinal = std::atoi(env);
  if (count == 0 || d.ordinal < 0 || d.ordinal >= count) {
    d.status = absl::UnavailableError(absl::StrCat(
        "no CUDA device: ", count, " devices, FUSEC_DEVICE asks for #",
        d.ordinal));
    return d;
  }
  if (CUresult r = d.cuDeviceGet(&d.device, d.ordinal); r != CUDA_SUCCESS) {
    d.status = cudaError(d, r, "cuDeviceGet");
    return d;
  }
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&d.context, d.device);
      r != CUDA_SUCCESS) {
    d.status = cudaError(d, r, "cuDevicePrimaryCtxRetain");
    return d;
  }
  return d;
}

const Driver &driver() {
  static const Driver *d = new Driver(loadDriver());
  return *d;
}

/// The driver with the primary context current on this thread, or why not.
absl::StatusOr<const Driver *> ready() {
  const Driver &d = driver();
  if (!d.status.ok())
    return d.status;
  thread_local CUcontext current = nullptr;
  if (current != d.context) {
    if (CUresult r = d.cuCtxSetCurrent(d.context); r != CUDA_SUCCESS)
      return cudaError(d, r, "cuCtxSetCurrent");
    current = d.context;
  }
  return &d;
}

#define FUSEC_ASSIGN_DRIVER(d)                                                 \
  auto d##OrError = ready();                                                   \
  if (!d##OrError.ok())                                                        \
    return d##OrError.status();                                                \
  const Driver &d = **d##OrError;

#define FUSEC_CU(d, call, what)                                                \
  if (CUresult fusecResult = (d).call; fusecResult != CUDA_SUCCESS)            \
    return cudaError(d, fusecResult, what);

//===----------------------------------------------------------------------===//
// nvJitLink
//===----------------------------------------------------------------------===//

struct JitLink {
  decltype(&::__nvJitLinkCreate_13_0) create = nullptr;
  decltype(&::__nvJitLinkDestroy_13_0) destroy = nullptr;
  decltype(&::__nvJitLinkAddData_13_0) addData = nullptr;
  decltype(&::__nvJitLinkComplete_13_0) complete = nullptr;
  decltype(&::__nvJitLinkGetLinkedCubinSize_13_0) cubinSize = nullptr;
  decltype(&::__nvJitLinkGetLinkedCubin_13_0) cubin = nullptr;
  decltype(&::__nvJitLinkGetErrorLogSize_13_0) errorLogSize = nullptr;
  decltype(&::__nvJitLinkGetErrorLog_13_0) errorLog = nullptr;
  absl::Status status;
};

JitLink loadJitLink() {
  JitLink j;
  std::vector<std::string> candidates = {"libnvJitLink.so.13",
                                         "libnvJitLink.so"};
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(env))
      candidates.push_back(absl::StrCat(root, "/lib64/libnvJitLink.so.13"));
  candidates.push_back("/usr/local/cuda/lib64/libnvJitLink.so.13");
  void *lib = nullptr;
  for (const std::string &c : candidates)
    if ((lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!lib) {
    j.status = absl::UnavailableError(
        "nvJitLink not found (libnvJitLink.so.13 in the loader path, "
        "$CUDA_HOME/lib64 or /usr/local/cuda/lib64)");
    return j;
  }
#define FUSEC_JIT(field, sym)                                                  \
  j.field = reinterpret_cast<decltype(j.field)>(dlsym(lib, #sym));             \
  if (!j.field) {                                                              \
    j.status = absl::UnavailableError("nvJitLink lacks " #sym);                \
    return j;                                                                  \
  }
  FUSEC_JIT(create, __nvJitLinkCreate_13_0)
  FUSEC_JIT(destroy, __nvJitLinkDestroy_13_0)
  FUSEC_JIT(addData, __nvJitLinkAddData_13_0)
  FUSEC_JIT(complete, __nvJitLinkComplete_13_0)
  FUSEC_JIT(cubinSize, __nvJitLinkGetLinkedCubinSize_13_0)
  FUSEC_JIT(cubin, __nvJitLinkGetLinkedCubin_13_0)
  FUSEC_JIT(errorLogSize, __nvJitLinkGetErrorLogSize_13_0)
  FUSEC_JIT(errorLog, __nvJitLinkGetErrorLog_13_0)
#undef FUSEC_JIT
  return j;
}

const JitLink &jitLink() {
  static const JitLink *j = new JitLink(loadJitLink());
  return *j;
}

/// The `.target` of a PTX module ("sm_90a"), or "" if it has none.
std::string ptxTarget(absl::string_view ptx) {
  size_t pos = ptx.find(".target");
  if (pos == absl::string_view::npos)
    return "";
  pos += 7;
  while (pos < ptx.size() && (ptx[pos] == ' ' || ptx[pos] == '\t'))
    ++pos;
  size_t end = pos;
  while (end < ptx.size() && (isalnum(static_cast<unsigned char>(ptx[end])) ||
                              ptx[end] == '_'))
    ++end;
  return std::string(ptx.substr(pos, end - pos));
}

} // namespace

absl::Status available() { return ready().status(); }

std::string DeviceInfo::arch() const {
  return absl::StrCat("sm_", computeMajor, computeMinor,
                      computeMajor >= 9 ? "a" : "");
}

absl::StatusOr<DeviceInfo> deviceInfo() {
  FUSEC_ASSIGN_DRIVER(d);
  DeviceInfo info;
  info.ordinal = d.ordinal;
  char name[256] = {0};
  FUSEC_CU(d, cuDeviceGetName(name, sizeof(name) - 1, d.device), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](CUdevice_attribute a, int *out) {
    return d.cuDeviceGetAttribute(out, a, d.device);
  };
  int l2 = 0;
  FUSEC_CU(d, cuDeviceGetAttribute(&info.computeMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device),
           "cuDeviceGetAttribute(compute capability)");
  attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.computeMinor);
  attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.smCount);
  attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2);
  info.l2Bytes = l2;
  size_t total = 0;
  FUSEC_CU(d, cuDeviceTotalMem(&total, d.device), "cuDeviceTotalMem");
  info.totalMemory = static_cast<int64_t>(total);
  d.cuDriverGetVersion(&info.driverVersion);
  return info;
}

//===----------------------------------------------------------------------===//
// Stream
//===----------------------------------------------------------------------===//

absl::StatusOr<Stream> Stream::create() {
  FUSEC_ASSIGN_DRIVER(d);
  CUstream s = nullptr;
  FUSEC_CU(d, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return Stream(s);
}

Stream::Stream(Stream &&o) noexcept : stream(std::exchange(o.stream, nullptr)) {}

Stream &Stream::operator=(Stream &&o) noexcept {
  std::swap(stream, o.stream);
  return *this;
}

Stream::~Stream() {
  if (stream && ready().ok())
    driver().cuStreamDestroy(static_cast<CUstream>(stream));
}

absl::StatusOr<bool> Stream::capturing() const {
  FUSEC_ASSIGN_DRIVER(d);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  FUSEC_CU(d, cuStreamIsCapturing(static_cast<CUstream>(stream), &status), "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

absl::Status Stream::synchronize() {
  FUSEC_ASSIGN_DRIVER(d);
  FUSEC_CU(d, cuStreamSynchronize(static_cast<CUstream>(stream)),
           "cuStreamSynchronize (an earlier asynchronous launch or copy may have failed)");
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

absl::StatusOr<DeviceBuffer> DeviceBuffer::allocate(int64_t bytes) {
  if (bytes < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a negative size (", bytes, " bytes)"));
  FUSEC_ASSIGN_DRIVER(d);
  DeviceBuffer b;
  b.bytes = bytes;
  if (bytes == 0)
    return b;
  CUdeviceptr p = 0;
  if (faultFires(FaultSite::Alloc))
    return absl::ResourceExhaustedError(absl::StrCat(
        "cuMemAlloc(", bytes, " bytes): CUDA_ERROR_OUT_OF_MEMORY (injected fault)"));
  FUSEC_CU(d, cuMemAlloc(&p, static_cast<size_t>(bytes)),
           absl::StrCat("cuMemAlloc(", bytes, " bytes)"));
  b.ptr = p;
  detail::addLiveDeviceBytes(bytes);
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&o) noexcept
    : ptr(std::exchange(o.ptr, 0)), bytes(std::exchange(o.bytes, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr, o.ptr);
  std::swap(bytes, o.bytes);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr && ready().ok()) {
    driver().cuMemFree(ptr);
    detail::addLiveDeviceBytes(-bytes);
  }
}

static absl::Status checkRange(int64_t want, int64_t have, const char *what) {
  if (want < 0 || want > have)
    return absl::OutOfRangeError(absl::StrCat(
        what, " of ", want, " bytes on a buffer of ", have, " bytes"));
  return absl::OkStatus();
}

absl::Status DeviceBuffer::copyFromHost(const void *src, int64_t n,
                                        Stream *stream) {
  if (auto st = checkRange(n, bytes, "copy to the device"); !st.ok())
    return st;
  FUSEC_ASSIGN_DRIVER(d);
  if (n == 0)
    return absl::OkStatus();
  if (stream) {
    FUSEC_CU(d, cuMemcpyHtoDAsync(ptr, src, n, static_cast<CUstream>(stream->handle())),
             absl::StrCat("cuMemcpyHtoDAsync(", n, " bytes)"));
  } else {
    FUSEC_CU(d, cuMemcpyHtoD(ptr, src, n), absl::StrCat("cuMemcpyHtoD(", n, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status DeviceBuffer::copyToHost(void *dst, int64_t n,
                                      Stream *stream) const {
  if (auto st = checkRange(n, bytes, "copy to the host"); !st.ok())
    return st;
  FUSEC_ASSIGN_DRIVER(d);
  if (n == 0)
    return absl::OkStatus();
  if (stream) {
    FUSEC_CU(d, cuMemcpyDtoHAsync(dst, ptr, n, static_cast<CUstream>(stream->handle())),
             absl::StrCat("cuMemcpyDtoHAsync(", n, " bytes)"));
  } else {
    FUSEC_CU(d, cuMemcpyDtoH(dst, ptr, n), absl::StrCat("cuMemcpyDtoH(", n, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status DeviceBuffer::copyFrom(const DeviceBuffer &src, int64_t n,
                                    Stream *stream) {
  if (auto st = checkRange(n, std::min(bytes, src.bytes), "device copy");
      !st.ok())
    return st;
  FUSEC_ASSIGN_DRIVER(d);
  if (n == 0)
    return absl::OkStatus();
  FUSEC_CU(d, cuMemcpyDtoDAsync(ptr, src.ptr, n,
                               stream ? static_cast<CUstream>(stream->handle()) : nullptr),
           absl::StrCat("cuMemcpyDtoDAsync(", n, " bytes)"));
  return absl::OkStatus();
}

absl::Status DeviceBuffer::fill(uint8_t byte) {
  FUSEC_ASSIGN_DRIVER(d);
  if (bytes == 0)
    return absl::OkStatus();
  FUSEC_CU(d, cuMemsetD8(ptr, byte, bytes), "cuMemsetD8");
  // cuMemsetD8 runs on the legacy stream, asynchronously to the host, and
  // fusec's streams do not wait for that stream (CU_STREAM_NON_BLOCKING):
  // finish it here, so work queued after fill() sees the bytes. (A kernel
  // writing an output after a pending poison fill lost its result under
  // load: the ONNX conformance with 16 processes on the H200.)
  FUSEC_CU(d, cuCtxSynchronize(), "cuCtxSynchronize after cuMemsetD8");
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Module and Kernel
//===----------------------------------------------------------------------===//

absl::StatusOr<Module> Module::loadCubin(absl::string_view image) {
  FUSEC_ASSIGN_DRIVER(d);
  // The driver needs the image aligned and alive for the call only.
  std::string copy(image);
  CUmodule m = nullptr;
  if (faultFires(FaultSite::Module))
    return absl::InternalError(absl::StrCat(
        "cuModuleLoadData(", image.size(),
        "-byte image): CUDA_ERROR_INVALID_IMAGE (injected fault)"));
  FUSEC_CU(d, cuModuleLoadData(&m, copy.data()),
           absl::StrCat("cuModuleLoadData(", image.size(), "-byte image)"));
  return Module(m);
}

absl::StatusOr<Module> Module::loadPtx(absl::string_view ptx) {
  FUSEC_ASSIGN_DRIVER(d);
  auto cubin = compilePtx(ptx);
  if (cubin.ok())
    return loadCubin(*cubin);
  if (cubin.status().code() != absl::StatusCode::kUnavailable)
    return cubin.status();
  // No nvJitLink: the driver's JIT, with its error log.
  std::string text(ptx);
  char log[8192] = {0};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUmodule m = nullptr;
  if (CUresult r = d.cuModuleLoadDataEx(&m, text.c_str(), 2, opts, vals);
      r != CUDA_SUCCESS)
    return cudaError(d, r, absl::StrCat("cuModuleLoadDataEx(PTX): ", log));
  return Module(m);
}

Module::Module(Module &&o) noexcept : module(std::exchange(o.module, nullptr)) {}

Module &Module::operator=(Module &&o) noexcept {
  std::swap(module, o.module);
  return *this;
}

Module::~Module() {
  if (module && ready().ok())
    driver().cuModuleUnload(static_cast<CUmodule>(module));
}

absl::StatusOr<Kernel> Module::kernel(absl::string_view name) const {
  FUSEC_ASSIGN_DRIVER(d);
  std::string entry(name);
  CUfunction f = nullptr;
  FUSEC_CU(d, cuModuleGetFunction(&f, static_cast<CUmodule>(module), entry.c_str()),
           absl::StrCat("cuModuleGetFunction('", entry, "')"));
  return Kernel(f, entry);
}

absl::Status Kernel::launch(Dim3 grid, Dim3 block, unsigned sharedBytes,
                            const Stream &stream, void **args, bool programmatic) const {
  FUSEC_ASSIGN_DRIVER(d);
  if (!function)
    return absl::FailedPreconditionError("launch of an empty Kernel");
  // Above 48 KiB a kernel opts in to its dynamic shared memory, once.
  if (sharedBytes > 48 * 1024 && sharedBytes > *optedInShared) {
    FUSEC_CU(d,
             cuFuncSetAttribute(static_cast<CUfunction>(function),
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(sharedBytes)),
             absl::StrCat("cuFuncSetAttribute('", entry, "', max dynamic shared memory ",
                          sharedBytes, " bytes)"));
    *optedInShared = sharedBytes;
  }
  if (!programmatic) {
    FUSEC_CU(d,
             cuLaunchKernel(static_cast<CUfunction>(function), grid.x, grid.y,
                            grid.z, block.x, block.y, block.z, sharedBytes,
                            static_cast<CUstream>(stream.handle()), args, nullptr),
             absl::StrCat("cuLaunchKernel('", entry, "', grid ", grid.x, "x",
                          grid.y, "x", grid.z, ", block ", block.x, "x", block.y,
                          "x", block.z, ")"));
    return absl::OkStatus();
  }
  // Programmatic dependent launch: the kernel may start once every CTA of
  // the kernel before it has run griddepcontrol.launch_dependents (or
  // exited); it waits for that kernel's completion itself.
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = sharedBytes;
  config.hStream = static_cast<CUstream>(stream.handle());
  config.attrs = &attribute;
  config.numAttrs = 1;
  FUSEC_CU(d, cuLaunchKernelEx(&config, static_cast<CUfunction>(function), args, nullptr),
           absl::StrCat("cuLaunchKernelEx('", entry, "', grid ", grid.x, "x", grid.y, "x",
                        grid.z, ", block ", block.x, "x", block.y, "x", block.z,
                        ", programmatic dependent launch)"));
  return absl::OkStatus();
}

absl::Status encodeTensorMap(const TensorMapSpec &spec, uint64_t address, void *out) {
  FUSEC_ASSIGN_DRIVER(d);
  size_t rank = spec.dims.size();
  if (rank < 1 || rank > 5 || spec.strides.size() + 1 != rank || spec.box.size() != rank)
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor map: ", rank, " dims, ", spec.strides.size(), " strides, ", spec.box.size(),
        " box sizes (1 to 5 dims, one stride fewer)"));
  CUtensorMapDataType type;
  switch (spec.elementBytes) {
  case 1: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  case 2: type = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
  case 4: type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
  case 8: type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
  default:
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map: element of ", spec.elementBytes, " bytes"));
  }
  CUtensorMapSwizzle swizzle;
  switch (spec.swizzleBytes) {
  case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default:
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map: swizzle of ", spec.swizzleBytes, " bytes"));
  }
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  if (!spec.elementStrides.empty() && spec.elementStrides.size() != rank)
    return absl::InvalidArgumentError(absl::StrCat("tensor map: ", spec.elementStrides.size(),
                                                   " element strides for ", rank, " dims"));
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = spec.dims[i];
    box[i] = spec.box[i];
    elementStrides[i] = spec.elementStrides.empty() ? 1 : spec.elementStrides[i];
    if (i + 1 < rank)
      strides[i] = spec.strides[i];
  }
  if (spec.im2col()) {
    // [C, spatial..., N]: a corner per spatial dim; the box is channels
    // per pixel by pixels per column.
    if (rank < 3 || spec.lower.size() + 2 != rank || spec.upper.size() + 2 != rank)
      return absl::InvalidArgumentError(absl::StrCat(
          "im2col tensor map: ", rank, " dims, ", spec.lower.size(), " lower and ",
          spec.upper.size(), " upper corners (3 to 5 dims, a corner per spatial dim)"));
    int lower[3], upper[3];
    for (size_t i = 0; i + 2 < rank; ++i) {
      lower[i] = spec.lower[i];
      upper[i] = spec.upper[i];
    }
    FUSEC_CU(d,
             cuTensorMapEncodeIm2col(static_cast<CUtensorMap *>(out), type,
                                     static_cast<cuuint32_t>(rank),
                                     reinterpret_cast<void *>(address), dims, strides, lower,
                                     upper, box[0], box[1], elementStrides,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             absl::StrCat("cuTensorMapEncodeIm2col(", rank, " dims of ", spec.elementBytes,
                          "-byte elements at 0x", absl::Hex(address), ", ", box[0],
                          " channels by ", box[1], " pixels)"));
    return absl::OkStatus();
  }
  FUSEC_CU(d,
           cuTensorMapEncodeTiled(static_cast<CUtensorMap *>(out), type,
                                  static_cast<cuuint32_t>(rank),
                                  reinterpret_cast<void *>(address), dims, strides, box,
                                  elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           absl::StrCat("cuTensorMapEncodeTiled(", rank, " dims of ", spec.elementBytes,
                        "-byte elements at 0x", absl::Hex(address), ")"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> compilePtx(absl::string_view ptx,
                                       absl::string_view arch) {
  const JitLink &j = jitLink();
  if (!j.status.ok())
    return j.status;
  if (faultFires(FaultSite::JitLink))
    return absl::InvalidArgumentError(
        "nvJitLink could not compile the PTX (code 6): (injected fault)");
  std::string target(arch);
  if (target.empty()) {
    target = ptxTarget(ptx);
    // Plain `sm_XY` PTX runs on newer devices: compile for the one present.
    if (auto info = deviceInfo(); info.ok() && !absl::EndsWith(target, "a"))
      target = info->arch();
  }
  if (target.empty())
    return absl::InvalidArgumentError(
        "compilePtx: no architecture given and the PTX has no .target");
  std::string archOpt = absl::StrCat("-arch=", target);
  const char *opts[] = {archOpt.c_str(), "-O3"};
  nvJitLinkHandle h = nullptr;
  if (nvJitLinkResult r = j.create(&h, 2, opts); r != NVJITLINK_SUCCESS)
    return absl::InvalidArgumentError(absl::StrCat(
        "nvJitLinkCreate(", archOpt, ") failed with code ", static_cast<int>(r)));
  std::string ptxCopy(ptx);
  std::string cubin;
  nvJitLinkResult r =
      j.addData(h, NVJITLINK_INPUT_PTX, ptxCopy.c_str(), ptxCopy.size() + 1,
                "fusec.ptx");
  if (r == NVJITLINK_SUCCESS)
    r = j.complete(h);
  if (r != NVJITLINK_SUCCESS) {
    size_t logSize = 0;
    j.errorLogSize(h, &logSize);
    std::string log(logSize, '\0');
    if (logSize)
      j.errorLog(h, log.data());
    j.destroy(&h);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    return absl::InvalidArgumentError(absl::StrCat(
        "nvJitLink could not compile the PTX for ", target, " (code ",
        static_cast<int>(r), "): ", log));
  }
  size_t size = 0;
  j.cubinSize(h, &size);
  cubin.resize(size);
  j.cubin(h, cubin.data());
  j.destroy(&h);
  return cubin;
}

//===----------------------------------------------------------------------===//
// Event
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

absl::StatusOr<Graph> Graph::capture(const Stream &stream,
                                     const std::function<absl::Status()> &launches) {
  FUSEC_ASSIGN_DRIVER(d);
  auto s = static_cast<CUstream>(stream.handle());
  // Thread-local: other threads' CUDA calls are not affected by (and do not
  // invalidate) this capture.
  FUSEC_CU(d, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
           "cuStreamBeginCapture");
  absl::Status body = launches();
  CUgraph graph = nullptr;
  CUresult end = d.cuStreamEndCapture(s, &graph);
  if (!body.ok()) {
    if (graph)
      d.cuGraphDestroy(graph);
    return body;
  }
  if (end != CUDA_SUCCESS)
    return cudaError(d, end, "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  CUresult inst = d.cuGraphInstantiateWithFlags(&exec, graph, 0);
  d.cuGraphDestroy(graph);
  if (inst != CUDA_SUCCESS)
    return cudaError(d, inst, "cuGraphInstantiate");
  return Graph(exec);
}

Graph::Graph(Graph &&o) noexcept : exec(std::exchange(o.exec, nullptr)) {}

Graph &Graph::operator=(Graph &&o) noexcept {
  std::swap(exec, o.exec);
  return *this;
}

Graph::~Graph() {
  if (exec && ready().ok())
    driver().cuGraphExecDestroy(static_cast<CUgraphExec>(exec));
}

absl::Status Graph::launch(const Stream &stream) const {
  FUSEC_ASSIGN_DRIVER(d);
  FUSEC_CU(d, cuGraphLaunch(static_cast<CUgraphExec>(exec),
                            static_cast<CUstream>(stream.handle())),
           "cuGraphLaunch");
  return absl::OkStatus();
}

absl::StatusOr<Event> Event::create() {
  FUSEC_ASSIGN_DRIVER(d);
  CUevent e = nullptr;
  FUSEC_CU(d, cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  return Event(e);
}

Event::Event(Event &&o) noexcept : event(std::exchange(o.event, nullptr)) {}

Event &Event::operator=(Event &&o) noexcept {
  std::swap(event, o.event);
  return *this;
}

Event::~Event() {
  if (event && ready().ok())
    driver().cuEventDestroy(static_cast<CUevent>(event));
}

absl::Status Event::record(const Stream &stream) {
  FUSEC_ASSIGN_DRIVER(d);
  FUSEC_CU(d, cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream.handle())),
           "cuEventRecord");
  return absl::OkStatus();
}

absl::Status Event::orderBefore(const Stream &stream) const {
  FUSEC_ASSIGN_DRIVER(d);
  FUSEC_CU(d, cuStreamWaitEvent(static_cast<CUstream>(stream.handle()), static_cast<CUevent>(event), 0),
           "cuStreamWaitEvent");
  return absl::OkStatus();
}

absl::Status Event::synchronize() {
  FUSEC_ASSIGN_DRIVER(d);
  FUSEC_CU(d, cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize");
  return absl::OkStatus();
}

absl::StatusOr<float> Event::elapsedMs(const Event &start, const Event &end) {
  FUSEC_ASSIGN_DRIVER(d);
  float ms = 0;
  FUSEC_CU(d, cuEventElapsedTime(&ms, static_cast<CUevent>(start.event), static_cast<CUevent>(end.event)),
           "cuEventElapsedTime");
  return ms;
}

} // namespace fusec::rt

//===----------------------------------------------------------------------===//
// The attention intrinsic
//===----------------------------------------------------------------------===//

#ifdef FUSEC_HAVE_ATTENTION_KERNEL
#include "attention.h"
#endif

namespace fusec::rt {
namespace {

using AttentionForwardFn = int (*)(const void *, const void *, const void *, void *, float *,
                                   int, int, int, int, int, int, float, int, int, int, void *);
using AttentionForwardMaskedFn = int (*)(const void *, const void *, const void *, void *,
                                         float *, int, int, int, int, int, int, float, int, int,
                                         int, const void *, void *);
using AttentionForwardStridedFn = int (*)(const void *, const void *, const void *, void *,
                                          float *, int, int, int, int, int, int, float, int, int,
                                          int, const void *, const long long *, void *);
using AttentionErrorFn = const char *(*)();

struct AttentionLibrary {
  AttentionForwardFn forward = nullptr;
  /// Null in a library older than the key mask.
  AttentionForwardMaskedFn forwardMasked = nullptr;
  /// Null in a library older than operand layouts.
  AttentionForwardStridedFn forwardStrided = nullptr;
  AttentionErrorFn lastError = nullptr;
  absl::Status status;
};

[[maybe_unused]] const AttentionLibrary &attentionLibrary() {
  static const AttentionLibrary lib = [] {
    AttentionLibrary l;
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("FUSEC_ATTENTION_LIB"); env && *env)
      candidates.push_back(env);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
      std::string dir(exe, static_cast<size_t>(n));
      dir = dir.substr(0, dir.rfind('/'));
      candidates.push_back(dir + "/../lib/libfusec_attention.so");
    }
    candidates.push_back("libfusec_attention.so");
    std::string tried;
    for (const std::string &c : candidates) {
      void *h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char *e = dlerror();
        absl::StrAppend(&tried, tried.empty() ? "" : "; ", e ? e : c);
        continue;
      }
      l.forward = reinterpret_cast<AttentionForwardFn>(dlsym(h, "fusec_attention_forward"));
      l.lastError = reinterpret_cast<AttentionErrorFn>(dlsym(h, "fusec_attention_last_error"));
      l.forwardMasked = reinterpret_cast<AttentionForwardMaskedFn>(
          dlsym(h, "fusec_attention_forward_masked"));
      l.forwardStrided = reinterpret_cast<AttentionForwardStridedFn>(
          dlsym(h, "fusec_attention_forward_strided"));
      if (l.forward && l.lastError)
        return l;
      absl::StrAppend(&tried, tried.empty() ? "" : "; ", c,
                      ": no fusec_attention_forward");
    }
    l.status = absl::UnavailableError(absl::StrCat(
        "the attention intrinsic (libfusec_attention.so, built by nvcc from "
        "runtime_kernels/) was not found: ",
        tried, "; set FUSEC_ATTENTION_LIB"));
    return l;
  }();
  return lib;
}

} // namespace

absl::Status validateAttention(const AttentionArgs &a) {
  auto bad = [](auto... parts) {
    return absl::InvalidArgumentError(absl::StrCat("attention: ", parts...));
  };
  if (a.dtype != AttentionArgs::kBf16 && a.dtype != AttentionArgs::kF16)
    return bad("element type must be bf16 or f16");
  if (a.headDim != 64 && a.headDim != 128 && a.headDim != 256)
    return bad("head dim ", a.headDim, " is not 64, 128 or 256");
  if (a.batch < 1 || a.heads < 1 || a.kvHeads < 1 || a.sq < 1 || a.skv < 1)
    return bad("batch, heads, kv heads and sequence lengths must be positive");
  if (a.heads % a.kvHeads != 0)
    return bad("kv heads (", a.kvHeads, ") must divide query heads (", a.heads, ")");
  if (static_cast<int64_t>(a.batch) * a.heads > 65535)
    return bad("batch x heads must be at most 65535");
  if (!(a.scale > 0.0f) || !(a.scale < 1e30f))
    return bad("scale must be positive and finite");
  if (a.flags < -1 || a.flags > 31)
    return bad("flags ", a.flags, " are not a set of the kernel's options (0-31)");
  for (int i = 0; i < 4; ++i) {
    const int64_t *st = a.strides + 3 * i;
    if (st[0] == 0 && st[1] == 0 && st[2] == 0)
      continue;
    for (int j = 0; j < 3; ++j)
      if (st[j] <= 0 || st[j] % 8 != 0 || st[j] >= (int64_t(1) << 39))
        return bad("strides of ", std::string(1, "QKVO"[i]),
                   " must be zero (contiguous) or positive multiples of 8 elements below 2^39");
  }
  return absl::OkStatus();
}

absl::Status attentionAvailable() {
#ifdef FUSEC_HAVE_ATTENTION_KERNEL
  return absl::OkStatus();
#else
  return attentionLibrary().status;
#endif
}

absl::Status attentionForward(const AttentionArgs &a, const Stream &stream) {
  if (auto st = validateAttention(a); !st.ok())
    return st;
#ifdef FUSEC_HAVE_ATTENTION_KERNEL
  // The kernel embedded in this runtime (runtime_kernels/attention_sm90.cu).
  auto ptr = [](uint64_t p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); };
  attention::Problem pr{ptr(a.q), ptr(a.k), ptr(a.v), ptr(a.o),
                        static_cast<float *>(ptr(a.lse)), a.batch, a.heads, a.kvHeads,
                        a.sq, a.skv, a.headDim, a.scale, a.causal, a.dtype,
                        (a.flags < 0 ? attention::defaultFlags(a.headDim) : a.flags) |
                            (a.programmatic ? attention::kProgrammatic : 0),
                        ptr(a.keyMask)};
  attention::Strides *layouts[] = {&pr.qStrides, &pr.kStrides, &pr.vStrides, &pr.oStrides};
  for (int i = 0; i < 4; ++i)
    *layouts[i] = {a.strides[3 * i], a.strides[3 * i + 1], a.strides[3 * i + 2]};
  if (attention::forward(pr, static_cast<cudaStream_t>(stream.handle())) != 0)
    return absl::InternalError(absl::StrCat("attention: ", attention::lastErrorMessage()));
  return absl::OkStatus();
#else
  const AttentionLibrary &lib = attentionLibrary();
  if (!lib.status.ok())
    return lib.status;
  // attention::defaultFlags (kPingPong | kPipeline, none at head dim 256),
  // and kProgrammatic (runtime_kernels/attention.h).
  int flags = (a.flags < 0 ? (a.headDim == 256 ? 0 : 4 | 8) : a.flags) | (a.programmatic ? 32 : 0);
  auto ptr = [](uint64_t p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); };
  int rc;
  const bool strided = std::any_of(std::begin(a.strides), std::end(a.strides),
                                   [](int64_t x) { return x != 0; });
  if (lib.forwardStrided) {
    long long strides[12];
    std::copy(std::begin(a.strides), std::end(a.strides), strides);
    rc = lib.forwardStrided(ptr(a.q), ptr(a.k), ptr(a.v), ptr(a.o),
                            static_cast<float *>(ptr(a.lse)), a.batch, a.heads, a.kvHeads, a.sq,
                            a.skv, a.headDim, a.scale, a.causal ? 1 : 0, a.dtype, flags,
                            ptr(a.keyMask), strided ? strides : nullptr, stream.handle());
  } else if (strided) {
    return absl::UnavailableError("attention: the attention library takes contiguous operands "
                                  "only (no fusec_attention_forward_strided); rebuild it");
  } else if (a.keyMask) {
    if (!lib.forwardMasked)
      return absl::UnavailableError("attention: the attention library has no key mask "
                                    "(fusec_attention_forward_masked); rebuild it");
    rc = lib.forwardMasked(ptr(a.q), ptr(a.k), ptr(a.v), ptr(a.o),
                           static_cast<float *>(ptr(a.lse)), a.batch, a.heads, a.kvHeads, a.sq,
                           a.skv, a.headDim, a.scale, a.causal ? 1 : 0, a.dtype, flags,
                           ptr(a.keyMask), stream.handle());
  } else {
    rc = lib.forward(ptr(a.q), ptr(a.k), ptr(a.v), ptr(a.o), static_cast<float *>(ptr(a.lse)),
                     a.batch, a.heads, a.kvHeads, a.sq, a.skv, a.headDim, a.scale,
                     a.causal ? 1 : 0, a.dtype, flags, stream.handle());
  }
  if (rc != 0)
    return absl::InternalError(absl::StrCat("attention: ", lib.lastError()));
  return absl::OkStatus();
#endif
}

} // namespace fusec::rt
