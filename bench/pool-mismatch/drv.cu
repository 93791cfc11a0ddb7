#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#define CK(x) do { CUresult r = (x); if (r) { const char *s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); exit(1); } } while (0)
int main(int argc, char **argv) {
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuCtxCreate(&c, NULL, 0, d));
  CUmodule m; CK(cuModuleLoad(&m, argv[1])); CUfunction f; CK(cuModuleGetFunction(&f, m, "max_pool"));
  float in[48], out[18]; unsigned s = 12345;
  for (int i = 0; i < 48; ++i) { s = s * 1103515245u + 12345u; in[i] = (float)((int)((s >> 16) % 2001) - 1000) / 100.0f; }
  CUdeviceptr di, dout; CK(cuMemAlloc(&di, sizeof in)); CK(cuMemAlloc(&dout, sizeof out));
  CK(cuMemcpyHtoD(di, in, sizeof in)); CK(cuMemsetD32(dout, 0, 18));
  void *args[] = {&di, &dout};
  int block = argc > 2 ? atoi(argv[2]) : 128;
  CK(cuLaunchKernel(f, 1, 1, 1, block, 1, 1, 0, 0, args, 0)); CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(out, dout, sizeof out));
  int bad = 0;
  for (int ch = 0; ch < 3; ++ch) for (int oh = 0; oh < 2; ++oh) for (int ow = 0; ow < 3; ++ow) {
    float mx = -1e30f;
    for (int th = 0; th < 2; ++th) for (int tw = 0; tw < 3; ++tw) {
      int h = oh * 2 - 1 + th, w = ow * 3 - 2 + tw;
      if (h >= 0 && h < 2 && w >= 0 && w < 8 && in[(ch * 2 + h) * 8 + w] > mx) mx = in[(ch * 2 + h) * 8 + w];
    }
    int o = (ch * 2 + oh) * 3 + ow;
    if (mx != out[o]) { ++bad; printf("  element %d: want %g got %g\n", o, mx, out[o]); }
  }
  printf("%s block %d: %d of 18 wrong\n", argv[1], block, bad);
  return 0;
}
