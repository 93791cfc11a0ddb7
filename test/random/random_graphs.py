#!/usr/bin/env python3
"""Random valid fusec graphs, each checked by `fusec-run --reference
--verify-pipeline`: the graph before and after a pass pipeline on the same
random inputs, in the reference interpreter (issue #19, random differential
testing).

usage: random_graphs.py FUSEC_RUN [--count N] [--seed S] [--pipeline P]
                        [--dtype f32|bf16|f16|mixed] [--keep DIR]

Each graph draws 3 to 12 ops from elementwise (binary with broadcasts,
unary, transcendentals), reductions over any dims, movement (transpose,
reshape, slice, concat, broadcast), casts, composites (softmax, layer_norm,
rms_norm, gelu, silu) and matmuls, on odd and size-1 shapes. A graph whose
check fails is written to --keep (or the temp dir) and named; the exit
status is the number of failures (capped at 1), so that a ctest entry fails
on any mismatch or crash.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile


def ttype(shape, dt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dt + ">"


class Graph:
    def __init__(self, rng, dtype):
        self.rng = rng
        self.dtype = dtype
        self.args = []    # (name, shape, dt)
        self.values = []  # (name, shape, dt)
        self.lines = []
        self.n = 0

    def dt(self):
        if self.dtype == "mixed":
            return self.rng.choice(["f32", "f32", "bf16", "f16"])
        return self.dtype

    def fresh(self):
        self.n += 1
        return f"%v{self.n}"

    def shape(self):
        rank = self.rng.choice([1, 2, 2, 3, 3, 4])
        return [self.rng.choice([1, 2, 3, 5, 7, 8, 16, 17, 32, 33, 64]) for _ in range(rank)]

    def arg(self, shape, dt):
        name = f"%a{len(self.args)}"
        self.args.append((name, list(shape), dt))
        self.values.append((name, list(shape), dt))
        return self.values[-1]

    def pick(self, dt=None, rank_min=0):
        pool = [v for v in self.values if (dt is None or v[2] == dt) and len(v[1]) >= rank_min]
        if not pool or self.rng.random() < 0.15:
            return self.arg(self.shape() if rank_min <= 1 else
                            [self.rng.choice([2, 3, 8, 17]) for _ in range(max(rank_min, 2))],
                            dt or self.dt())
        return self.rng.choice(pool[-6:])

    def emit(self, text, shape, dt):
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        self.values.append((name, list(shape), dt))

    def op(self):
        r = self.rng.random()
        if r < 0.25:
            self.binary()
        elif r < 0.40:
            self.unary()
        elif r < 0.52:
            self.reduce()
        elif r < 0.66:
            self.movement()
        elif r < 0.72:
            self.cast()
        elif r < 0.88:
            self.composite()
        else:
            self.matmul()

    def binary(self):
        a = self.pick()
        name, shape, dt = a
        kind = self.rng.choice(["add", "sub", "mul", "max", "min"])
        if self.rng.random() < 0.3 and len(shape) >= 2:
            # A broadcast operand along the last dim.
            b = self.arg([shape[-1]], dt)
            bb = self.fresh()
            self.lines.append(f"  {bb} = fusec.broadcast {b[0]} dims [{len(shape) - 1}] : "
                              f"{ttype([shape[-1]], dt)} -> {ttype(shape, dt)}")
            other = bb
        else:
            same = [v for v in self.values if v[1] == shape and v[2] == dt and v[0] != name]
            other = self.rng.choice(same)[0] if same else self.arg(shape, dt)[0]
        self.emit(f"fusec.{kind} {name}, {other} : {ttype(shape, dt)}", shape, dt)

    def unary(self):
        name, shape, dt = self.pick()
        kind = self.rng.choice(["neg", "abs", "tanh", "sigmoid", "exp", "erf", "silu", "gelu"])
        if kind == "exp":
            # Bounded first, so that exp stays finite in every type.
            t = self.fresh()
            self.lines.append(f"  {t} = fusec.tanh {name} : {ttype(shape, dt)}")
            name = t
        self.emit(f"fusec.{kind} {name} : {ttype(shape, dt)}", shape, dt)

    def reduce(self):
        name, shape, dt = self.pick(rank_min=2)
        rank = len(shape)
        dims = sorted(self.rng.sample(range(rank), self.rng.randint(1, rank - 1)))
        kind = self.rng.choice(["sum", "max", "min", "mean"])
        out = [d for i, d in enumerate(shape) if i not in dims]
        self.emit(f"fusec.reduce {kind} {name} dims [{', '.join(map(str, dims))}] : "
                  f"{ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)

    def movement(self):
        name, shape, dt = self.pick(rank_min=2)
        kind = self.rng.choice(["transpose", "reshape", "slice", "concat"])
        rank = len(shape)
        if kind == "transpose":
            perm = list(range(rank))
            self.rng.shuffle(perm)
            out = [shape[p] for p in perm]
            self.emit(f"fusec.transpose {name} perm [{', '.join(map(str, perm))}] : "
                      f"{ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)
        elif kind == "reshape":
            n = 1
            for d in shape:
                n *= d
            out = [n] if self.rng.random() < 0.5 or rank < 2 else [shape[0], n // shape[0]]
            self.emit(f"fusec.reshape {name} : {ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)
        elif kind == "slice":
            offsets, out = [], []
            for d in shape:
                o = self.rng.randint(0, d - 1)
                offsets.append(o)
                out.append(self.rng.randint(1, d - o))
            self.emit(f"fusec.slice {name} offsets [{', '.join(map(str, offsets))}] strides "
                      f"[{', '.join('1' for _ in shape)}] : {ttype(shape, dt)} -> {ttype(out, dt)}",
                      out, dt)
        else:
            dim = self.rng.randrange(rank)
            other = list(shape)
            other[dim] = self.rng.choice([1, 2, 5])
            b = self.arg(other, dt)
            out = list(shape)
            out[dim] += other[dim]
            self.emit(f"fusec.concat {name}, {b[0]} dim {dim} : ({ttype(shape, dt)}, "
                      f"{ttype(other, dt)}) -> {ttype(out, dt)}", out, dt)

    def cast(self):
        name, shape, dt = self.pick()
        to = self.rng.choice([d for d in ("f32", "bf16", "f16") if d != dt])
        if self.dtype != "mixed" and to != "f32":
            to = "f32" if dt != "f32" else dt
            if to == dt:
                return self.unary()
        self.emit(f"fusec.cast {name} : {ttype(shape, dt)} to {ttype(shape, to)}", shape, to)

    def composite(self):
        name, shape, dt = self.pick(rank_min=2)
        kind = self.rng.choice(["softmax", "layer_norm", "rms_norm", "gelu_tanh"])
        t = ttype(shape, dt)
        if kind == "softmax":
            self.emit(f"fusec.softmax {name} dim {self.rng.randrange(len(shape))} : {t}", shape, dt)
        elif kind == "gelu_tanh":
            self.emit(f"fusec.gelu {name} {{tanh}} : {t}", shape, dt)
        else:
            v = ttype([shape[-1]], dt)
            g = self.arg([shape[-1]], dt)
            if kind == "layer_norm":
                b = self.arg([shape[-1]], dt)
                self.emit(f"fusec.layer_norm {name}, {g[0]}, {b[0]} {{epsilon = 1.0e-5 : f64}} : "
                          f"({t}, {v}, {v}) -> {t}", shape, dt)
            else:
                self.emit(f"fusec.rms_norm {name}, {g[0]} {{epsilon = 1.0e-5 : f64}} : ({t}, {v}) -> {t}",
                          shape, dt)

    def matmul(self):
        name, shape, dt = self.pick(rank_min=2)
        k = shape[-1]
        n = self.rng.choice([1, 3, 8, 16, 33])
        transpose = self.rng.random() < 0.5
        w_shape = [n, k] if transpose else [k, n]
        w = self.arg(w_shape, dt)
        out = shape[:-1] + [n]
        attr = " {transpose_rhs}" if transpose else ""
        self.emit(f"fusec.matmul {name}, {w[0]}{attr} : ({ttype(shape, dt)}, {ttype(w_shape, dt)}) "
                  f"-> {ttype(out, dt)}", out, dt)

    def text(self, ops):
        for _ in range(ops):
            self.op()
        # Return the last two computed values (or one).
        results = [v for v in self.values if v[0].startswith("%v")][-2:]
        if not results:
            results = [self.values[-1]]
        params = ", ".join(f"{n}: {ttype(s, d)}" for n, s, d in self.args)
        rtypes = ", ".join(ttype(s, d) for _, s, d in results)
        body = "\n".join(self.lines)
        return (f"func.func @g({params}) -> ({rtypes}) {{\n{body}\n"
                f"  return {', '.join(n for n, _, _ in results)} : {rtypes}\n}}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("fusec_run")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pipeline", default="fusec-pipeline")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16", "mixed"])
    p.add_argument("--keep")
    p.add_argument("--timeout", type=float, default=60)
    a = p.parse_args()
    keep = a.keep or tempfile.mkdtemp(prefix="fusec-random-")
    os.makedirs(keep, exist_ok=True)
    failures = []
    for i in range(a.count):
        rng = random.Random(a.seed * 1000003 + i)
        text = Graph(rng, a.dtype).text(rng.randint(3, 12))
        path = os.path.join(keep, f"graph_{a.seed}_{i}.mlir")
        with open(path, "w") as f:
            f.write(text)
        try:
            r = subprocess.run([a.fusec_run, path, "--reference", f"--verify-pipeline={a.pipeline}",
                                "--trials=1", f"--seed={i + 1}"],
                               capture_output=True, text=True, timeout=a.timeout)
            ok, why = r.returncode == 0, (r.stdout + r.stderr)[-800:]
        except subprocess.TimeoutExpired:
            ok, why = False, f"timed out after {a.timeout} s"
        if ok:
            os.remove(path)
        else:
            failures.append((path, why))
            print(f"FAIL {path}:\n{why}", flush=True)
    print(f"random graphs ({a.dtype}, {a.pipeline}, seed {a.seed}): "
          f"{a.count - len(failures)}/{a.count} pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
