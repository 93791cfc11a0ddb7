#!/usr/bin/env python3
# A small interpreter for the straight-line PTX subset of fusec's movement
# kernels (integer and f32 arithmetic, selects, predicated branches, global
# loads and stores), run one thread after another: a check of generated PTX
# without a GPU. Usage: ptx_interp.py KERNEL.ptx INPUT_FLOATS OUTPUT_FLOATS
# THREADS (one input and one output pointer; prints the random inputs, then
# the outputs).
import re, struct, sys
def f2b(f): return struct.unpack('<I', struct.pack('<f', f))[0]
def b2f(b): return struct.unpack('<f', struct.pack('<I', b & 0xffffffff))[0]
src = open(sys.argv[1]).read()
body = src[src.index('{', src.index('.entry')) + 1: src.rindex('}')]
lines = [l.split('//')[0].strip() for l in body.split('\n')]
lines = [l for l in lines if l and not l.startswith('.reg')]
labels = {}
prog = []
for l in lines:
    if l.endswith(':'):
        labels[l[:-1]] = len(prog); continue
    prog.append(l.rstrip(';'))
def width(t):
    m = re.search(r'(\d+)$', t); return int(m.group(1))
def run(tid, ntid, ctaid, nctaid, mem, params):
    R = {'%tid.x': tid, '%ntid.x': ntid, '%ctaid.x': ctaid, '%nctaid.x': nctaid}
    def val(o):
        if o in R: return R[o]
        if o.startswith('0f'): return int(o[2:], 16)
        return int(o, 0) if not o.startswith('-') else int(o, 0)
    pc = 0
    while pc < len(prog):
        ins = prog[pc]; pc += 1
        pred = None
        if ins.startswith('@'):
            p, ins = ins.split(None, 1)
            neg = p[1] == '!'; pv = R[p[2:] if neg else p[1:]]
            if (not pv) if not neg else pv: continue
        op, _, rest = ins.partition(' ') if ' ' in ins else (ins, '', '')
        op = ins.split()[0]; rest = ins[len(op):].strip()
        if op.startswith('ld.param'):
            d, a = [x.strip() for x in rest.split(',')]; R[d] = params[a.strip('[]')]; continue
        if op.startswith('griddep'): continue
        if op.startswith('bra'):
            pc = labels[rest]; continue
        if op == 'ret': return
        if op.startswith('st.global'):
            m = re.match(r'\[(%\w+)(?:\+(\d+))?\],\s*(.*)', rest); addr = R[m.group(1)] + int(m.group(2) or 0)
            vals = [v.strip() for v in m.group(3).strip('{}').split(',')]
            for k, v in enumerate(vals): mem[addr + 4 * k] = val(v) & 0xffffffff
            continue
        if op.startswith('ld.global'):
            d, a = [x.strip() for x in rest.split(',', 1)]
            a = a.strip('[]')
            if '+' in a:
                r_, off = a.split('+'); addr = R[r_] + int(off)
            else: addr = R[a]
            if addr not in mem: raise Exception(f'bad load {addr:#x} at {ins}')
            R[d] = mem[addr]; continue
        ops = [x.strip() for x in rest.split(',')]
        parts = op.split('.')
        base = parts[0]; t = parts[-1]; w = width(t)
        mask = (1 << w) - 1
        def sgn(x): x &= mask; return x - (1 << w) if x >> (w - 1) else x
        if base == 'mov': R[ops[0]] = val(ops[1]); continue
        if base == 'cvt':
            dt, st = parts[1], parts[2]; sw = width(st); dw = width(dt)
            x = val(ops[1]) & ((1 << sw) - 1)
            if st.startswith('s') and x >> (sw - 1): x -= 1 << sw
            R[ops[0]] = x & ((1 << dw) - 1); continue
        if base == 'setp':
            cmpop = parts[1]; a, b = val(ops[1]), val(ops[2])
            if t.startswith('f'): a, b = b2f(a), b2f(b)
            elif t.startswith('s'): a, b = sgn(a), sgn(b)
            else: a, b = a & mask, b & mask
            R[ops[0]] = {'eq': a == b, 'ne': a != b, 'gt': a > b, 'lt': a < b, 'ge': a >= b, 'le': a <= b}[cmpop]; continue
        if base == 'selp': R[ops[0]] = val(ops[1]) if R[ops[3]] else val(ops[2]); continue
        if base == 'max' or base == 'min':
            a, b = val(ops[1]), val(ops[2])
            if t == 'f32':
                fa, fb = b2f(a), b2f(b); r = max(fa, fb) if base == 'max' else min(fa, fb); R[ops[0]] = f2b(r); continue
            if t.startswith('s'): a, b = sgn(a), sgn(b)
            else: a, b = a & mask, b & mask
            R[ops[0]] = (max(a, b) if base == 'max' else min(a, b)) & mask; continue
        a = val(ops[1]); b = val(ops[2]) if len(ops) > 2 else None
        if base == 'mul':
            mode = parts[1]
            if mode == 'wide':
                if t.startswith('s'): a, b = sgn(a), sgn(b)
                else: a, b = a & mask, b & mask
                R[ops[0]] = (a * b) & ((1 << (2 * w)) - 1)
            elif mode == 'hi':
                if t.startswith('s'): r = (sgn(a) * sgn(b)) >> w
                else: r = ((a & mask) * (b & mask)) >> w
                R[ops[0]] = r & mask
            else: R[ops[0]] = (a * b) & mask
            continue
        if base == 'add': R[ops[0]] = (a + b) & mask; continue
        if base == 'sub': R[ops[0]] = (a - b) & mask; continue
        if base == 'and': R[ops[0]] = (a & b) & mask; continue
        if base == 'or': R[ops[0]] = (a | b) & mask; continue
        if base == 'xor': R[ops[0]] = (a ^ b) & mask; continue
        if base == 'shl': R[ops[0]] = (a << b) & mask; continue
        if base == 'shr':
            R[ops[0]] = ((sgn(a) >> b) if t.startswith('s') else ((a & mask) >> b)) & mask; continue
        if base == 'mad':
            c = val(ops[3]); R[ops[0]] = (a * b + c) & mask if parts[1] == 'lo' else None; continue
        raise Exception('unknown ' + ins)
import random
random.seed(1)
N_IN = int(sys.argv[2]); N_OUT = int(sys.argv[3])
IN, OUT = 0x10000, 0x20000
mem = {}
xs = [random.uniform(-2, 2) for _ in range(N_IN)]
for i, x in enumerate(xs): mem[IN + 4 * i] = f2b(x)
for i in range(N_OUT): mem[OUT + 4 * i] = f2b(-999.0)
params = {'max_pool_param_0': IN, 'max_pool_param_1': OUT}
for t in range(int(sys.argv[4])): run(t, int(sys.argv[4]), 0, 1, mem, params)
print(' '.join(f'{b2f(mem[IN + 4 * i]):.4f}' for i in range(N_IN)))
print(' '.join(f'{b2f(mem[OUT + 4 * i]):.4f}' for i in range(N_OUT)))
