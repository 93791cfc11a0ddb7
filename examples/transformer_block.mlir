// A pre-norm transformer decoder block (Llama-style), bf16 storage:
//   h   = x + Wo · attention(RMSNorm(x) · Wqkv)         (causal, 4 heads of 64)
//   out = h + Wdown · (silu(RMSNorm(h) · Wgate) * (RMSNorm(h) · Wup))
// One sequence of 128 tokens, model width 256, MLP width 512. scripts/demo
// decomposes it and prints each op's cost; fusec-run --reference runs it.
func.func @transformer_block(
    %x: tensor<128x256xbf16>, %attn_norm: tensor<256xbf16>,
    %wqkv: tensor<256x768xbf16>, %wo: tensor<256x256xbf16>,
    %mlp_norm: tensor<256xbf16>, %wgate: tensor<256x512xbf16>,
    %wup: tensor<256x512xbf16>, %wdown: tensor<512x256xbf16>)
    -> tensor<128x256xbf16> {
  // Attention.
  %h = fusec.rms_norm %x, %attn_norm {epsilon = 1.0e-6 : f64}
      : (tensor<128x256xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  %qkv = fusec.matmul %h, %wqkv
      : (tensor<128x256xbf16>, tensor<256x768xbf16>) -> tensor<128x768xbf16>
  %q2 = fusec.slice %qkv offsets [0, 0] strides [1, 1]
      : tensor<128x768xbf16> -> tensor<128x256xbf16>
  %k2 = fusec.slice %qkv offsets [0, 256] strides [1, 1]
      : tensor<128x768xbf16> -> tensor<128x256xbf16>
  %v2 = fusec.slice %qkv offsets [0, 512] strides [1, 1]
      : tensor<128x768xbf16> -> tensor<128x256xbf16>
  %q3 = fusec.reshape %q2 : tensor<128x256xbf16> -> tensor<1x128x4x64xbf16>
  %k3 = fusec.reshape %k2 : tensor<128x256xbf16> -> tensor<1x128x4x64xbf16>
  %v3 = fusec.reshape %v2 : tensor<128x256xbf16> -> tensor<1x128x4x64xbf16>
  %q = fusec.transpose %q3 perm [0, 2, 1, 3]
      : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %k = fusec.transpose %k3 perm [0, 2, 1, 3]
      : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %v = fusec.transpose %v3 perm [0, 2, 1, 3]
      : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %o = fusec.attention %q, %k, %v {scale = 0.125 : f64, causal}
      : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>,
         tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  %o3 = fusec.transpose %o perm [0, 2, 1, 3]
      : tensor<1x4x128x64xbf16> -> tensor<1x128x4x64xbf16>
  %o2 = fusec.reshape %o3 : tensor<1x128x4x64xbf16> -> tensor<128x256xbf16>
  %proj = fusec.matmul %o2, %wo
      : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xbf16>
  %r1 = fusec.add %x, %proj : tensor<128x256xbf16>

  // SwiGLU MLP.
  %m = fusec.rms_norm %r1, %mlp_norm {epsilon = 1.0e-6 : f64}
      : (tensor<128x256xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  %gate = fusec.matmul %m, %wgate
      : (tensor<128x256xbf16>, tensor<256x512xbf16>) -> tensor<128x512xbf16>
  %up = fusec.matmul %m, %wup
      : (tensor<128x256xbf16>, tensor<256x512xbf16>) -> tensor<128x512xbf16>
  %act = fusec.silu %gate : tensor<128x512xbf16>
  %glu = fusec.mul %act, %up : tensor<128x512xbf16>
  %down = fusec.matmul %glu, %wdown
      : (tensor<128x512xbf16>, tensor<512x256xbf16>) -> tensor<128x256xbf16>
  %out = fusec.add %r1, %down : tensor<128x256xbf16>
  return %out : tensor<128x256xbf16>
}
