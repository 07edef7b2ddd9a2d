// XYZZ curve formulas (G1 over Fp, G2 over Fp2), run by a tiny interpreter over a register file
// of Fp elements so that each curve operation holds only one or two copies of the Fp operations
// (for G2 the host expands every Fp2 instruction into Fp instructions, so G2 costs no more code
// than G1). Mesa inlines every function call, and its compile time grows faster than linearly
// with the inlined size: straight-line formulas took minutes per pipeline there (and did not
// finish compiling in 100 s on NVIDIA's driver, docs/wgpu.md), these take about a second.
// Programs (built by the host, see shaders.rs):
//   ADD_A / ADD_B: P + Q, both XYZZ (P in r0..r3, Q in r4..r7, P and R of the formula in r12, r13)
//   MADD_A / MADD_B: P + Q, Q affine in r4, r5
//   DBL: 2·P in place
// An Fp instruction is op << 18 | d << 12 | a << 6 | b: f_d = f_a (op) f_b with op 0 mul,
// 1 add, 2 sub, 3 copy; $C_get / $C_set map curve register i to Fp registers.

struct $CAff {
    x: $FE,
    y: $FE,
}

struct $CXyzz {
    X: $FE,
    Y: $FE,
    ZZ: $FE,
    ZZZ: $FE,
}

$PROGRAM

fn $C_run(prog: vec2<u32>) {
    for (var i = prog.x; i < prog.x + prog.y; i++) {
        let ins = $C_PROG[i];
        let op = ins >> 18u;
        let x = $C_RF[(ins >> 6u) & 63u];
        let y = $C_RF[ins & 63u];
        var r = x;
        if (op == 0u) {
            r = fp_mul(x, y);
        } else if (op == 1u) {
            r = fp_add(x, y);
        } else if (op == 2u) {
            r = fp_sub(x, y);
        }
        $C_RF[(ins >> 12u) & 63u] = r;
    }
}

fn $C_inf() -> $CXyzz {
    return $CXyzz($F_zero(), $F_zero(), $F_zero(), $F_zero());
}

fn $C_is_inf(p: $CXyzz) -> bool {
    return $F_is_zero(p.ZZ);
}

fn $C_aff_is_inf(a: $CAff) -> bool {
    return $F_is_zero(a.x) && $F_is_zero(a.y);
}

fn $C_load_p(p: $CXyzz) {
    $C_set(0u, p.X);
    $C_set(1u, p.Y);
    $C_set(2u, p.ZZ);
    $C_set(3u, p.ZZZ);
}

fn $C_result() -> $CXyzz {
    return $CXyzz($C_get(0u), $C_get(1u), $C_get(2u), $C_get(3u));
}

fn $C_dbl(p: $CXyzz) -> $CXyzz {
    if ($C_is_inf(p)) {
        return p;
    }
    $C_load_p(p);
    $C_run($C_DBL);
    return $C_result();
}

fn $C_add_affine(p: $CXyzz, q: $CAff) -> $CXyzz {
    if ($C_aff_is_inf(q)) {
        return p;
    }
    if ($C_is_inf(p)) {
        return $CXyzz(q.x, q.y, $F_one(), $F_one());
    }
    $C_load_p(p);
    $C_set(4u, q.x);
    $C_set(5u, q.y);
    $C_run($C_MADD_A);
    var next = $C_MADD_B;
    if ($F_is_zero($C_get(12u))) {
        if (!$F_is_zero($C_get(13u))) {
            return $C_inf();
        }
        next = $C_DBL; // P == Q: double P
    }
    $C_run(next);
    return $C_result();
}

fn $C_add(p: $CXyzz, q: $CXyzz) -> $CXyzz {
    if ($C_is_inf(q)) {
        return p;
    }
    if ($C_is_inf(p)) {
        return q;
    }
    $C_load_p(p);
    $C_set(4u, q.X);
    $C_set(5u, q.Y);
    $C_set(6u, q.ZZ);
    $C_set(7u, q.ZZZ);
    $C_run($C_ADD_A);
    var next = $C_ADD_B;
    if ($F_is_zero($C_get(12u))) {
        if (!$F_is_zero($C_get(13u))) {
            return $C_inf();
        }
        next = $C_DBL;
    }
    $C_run(next);
    return $C_result();
}

// k·P for a small k (double and add, most significant bit first).
fn $C_mul_small(p: $CXyzz, k: u32) -> $CXyzz {
    if (k == 0u || $C_is_inf(p)) {
        return $C_inf();
    }
    var acc = p;
    let top = 31u - countLeadingZeros(k);
    for (var b = i32(top) - 1; b >= 0; b--) {
        acc = $C_dbl(acc);
        if (((k >> u32(b)) & 1u) != 0u) {
            acc = $C_add(acc, p);
        }
    }
    return acc;
}
