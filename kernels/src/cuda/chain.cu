// mmaemu CUDA backend: chains of FP8 block steps (docs/reference.md §2.2, §2.3), integer-exact.
//
// Compiled at run time with NVRTC (kernels/src/cuda/mod.rs prepends the decode tables, built from the model's
// format tables, as `__constant__ int MMAEMU_DECODE[2][256]`). This file mirrors model/src/chain.rs step for
// step, and kernels/src/cuda/emulate.rs mirrors this file in Rust (tested against the model on the host):
//   - an FP8 code decodes to (neg, sig, exp) with |x| = sig * 2^(exp - mbits); zeros have sig = 0;
//   - per block: the maximum product exponent over the nonzero products (and c's true exponent, early c),
//     floored at min_exp; the grid 2^g, g = e - frac; each product P = sig_a * sig_b shifted to the grid
//     with truncation toward zero; a 64-bit integer sum; the normalisation truncates to frac_out bits below
//     max(floor(log2|d|), -126); the fp32 bits are built with integer operations; a zero result is +0;
//   - late c (b200_mma_sync): the normalised block sum plus c with __fadd_rn (one IEEE RNE addition).
// Only integer instructions and __fadd_rn are used: no FMA contraction, no flush-to-zero can change a bit.
//
// Packed decode entry: bits 0-7 sig, bit 8 sign, bits 16-31 the operand exponent (signed).
// Inputs are finite codes (the plan replaces non-finite codes first); a non-finite code decodes as zero.

typedef unsigned long long u64;
typedef long long i64;

struct ChainParams {
    int nfma;      // products per block
    int frac;      // fraction bits of the aligned terms
    int frac_out;  // fraction bits of the block result
    int min_exp;   // floor of the block exponent
    int late;      // 1: c enters late (fp32 RNE addition), 0: early
    int mab;       // ma + mb: mantissa bits of A plus those of B
    int ta;        // decode table of A (0: e4m3, 1: e5m2)
    int tb;        // decode table of B
};

__device__ __forceinline__ int mm_sig(int d) { return d & 0xFF; }
__device__ __forceinline__ int mm_neg(int d) { return (d >> 8) & 1; }
__device__ __forceinline__ int mm_exp(int d) { return d >> 16; }

// Shift a magnitude left by sh (sh >= 0) or truncate it right by -sh (toward zero).
__device__ __forceinline__ u64 mm_align(u64 mag, int sh) {
    if (sh >= 0) return mag << sh;
    if (sh <= -64) return 0ull;
    return mag >> (-sh);
}

// The fp32 value (-1)^neg * mag * 2^exp, exactly representable (the callers guarantee it); beyond the range: Inf.
__device__ __forceinline__ float mm_from_parts(int neg, u64 mag, int exp) {
    unsigned sign = neg ? 0x80000000u : 0u;
    if (mag == 0ull) return __uint_as_float(sign);
    int lead = 63 - __clzll((i64)mag);
    int ev = lead + exp;
    if (ev > 127) return __uint_as_float(sign | 0x7F800000u);
    if (ev >= -126) {
        unsigned sig = lead >= 23 ? (unsigned)(mag >> (lead - 23)) : (unsigned)(mag << (23 - lead));
        return __uint_as_float(sign | ((unsigned)(ev + 127) << 23) | (sig & 0x7FFFFFu));
    }
    int shift = exp + 149;
    unsigned f = shift >= 0 ? (unsigned)(mag << shift) : (unsigned)(mag >> (-shift));
    return __uint_as_float(sign | f);
}

// §2.2 steps 6-8: sum * 2^g truncated to frac_out bits relative to max(floor(log2|d|), -126); zero is +0.
__device__ __forceinline__ float mm_normalise(i64 sum, int g, int frac_out) {
    if (sum == 0) return 0.0f;
    int neg = sum < 0;
    u64 mag = neg ? (u64)0 - (u64)sum : (u64)sum;
    int ed = 63 - __clzll((i64)mag) + g;
    if (ed < -126) ed = -126;
    int target = ed - frac_out;
    int exp = g;
    if (target > g) {
        int sh = target - g;
        mag = sh >= 64 ? 0ull : mag >> sh;
        exp = target;
    }
    if (mag == 0ull) return 0.0f;
    return mm_from_parts(neg, mag, exp);
}

// c's fp32 parts: |c| = csig * 2^cexp, csig < 2^24 (0 for zeros).
__device__ __forceinline__ void mm_parts(float c, int* cneg, unsigned* csig, int* cexp) {
    unsigned bits = __float_as_uint(c);
    unsigned field = (bits >> 23) & 0xFFu;
    unsigned f = bits & 0x7FFFFFu;
    *cneg = (int)(bits >> 31);
    if (field == 0u) {
        *csig = f;
        *cexp = -149;
    } else {
        *csig = f | 0x800000u;
        *cexp = (int)field - 150;
    }
}

// One product's exponent contribution: ep if the product is nonzero, INT_MIN otherwise.
__device__ __forceinline__ int mm_pexp(int da, int db) {
    return (mm_sig(da) != 0 && mm_sig(db) != 0) ? mm_exp(da) + mm_exp(db) : (int)0x80000000;
}

// One product's aligned, signed term on the grid 2^g.
__device__ __forceinline__ i64 mm_term(int da, int db, int mab, int g) {
    unsigned p = (unsigned)(mm_sig(da) * mm_sig(db));
    if (p == 0u) return 0;
    i64 t = (i64)mm_align((u64)p, mm_exp(da) + mm_exp(db) - mab - g);
    return (mm_neg(da) != mm_neg(db)) ? -t : t;
}

// The block's grid exponent g from the block maximum emax (and, early c, the accumulator acc, which must be
// finite); *csum receives c's aligned, signed term (early c) or 0.
__device__ __forceinline__ int mm_block_grid(const ChainParams& p, float acc, int emax, i64* csum) {
    int e = emax;
    *csum = 0;
    if (!p.late) {
        int cneg; unsigned csig; int cexp;
        mm_parts(acc, &cneg, &csig, &cexp);
        if (csig != 0u) {
            int ce = cexp + (31 - __clz((int)csig));
            if (ce > e) e = ce;
        }
        if (e < p.min_exp) e = p.min_exp;
        int g = e - p.frac;
        if (csig != 0u) {
            i64 t = (i64)mm_align((u64)csig, cexp - g);
            *csum = cneg ? -t : t;
        }
        return g;
    }
    if (e < p.min_exp) e = p.min_exp;
    return e - p.frac;
}

__device__ __forceinline__ float mm_block_finish(const ChainParams& p, float acc, i64 sum, int g) {
    float d = mm_normalise(sum, g, p.frac_out);
    return p.late ? __fadd_rn(d, acc) : d;
}

__device__ __forceinline__ float mm_canonical(float x) {
    return (x != x) ? __uint_as_float(0x7FFFFFFFu) : x;
}

// Generic kernel: one thread per output, any nfma; codes read from global memory.
// out[i * n + j] = chain over a[i, 0..l] * b[j, 0..l] from +0.
extern "C" __global__ void mmaemu_chain_generic(ChainParams p, const unsigned char* __restrict__ a,
                                                const unsigned char* __restrict__ b, float* __restrict__ out,
                                                int m, int n, int l) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) return;
    const unsigned char* ra = a + (size_t)i * (size_t)l;
    const unsigned char* rb = b + (size_t)j * (size_t)l;
    const int* ta = MMAEMU_DECODE[p.ta];
    const int* tb = MMAEMU_DECODE[p.tb];
    float acc = 0.0f;
    for (int k0 = 0; k0 < l; k0 += p.nfma) {
        if (!isfinite(acc)) break;  // finite operands cannot change an Inf or NaN accumulator
        int k1 = min(k0 + p.nfma, l);
        int emax = (int)0x80000000;
        for (int k = k0; k < k1; ++k) emax = max(emax, mm_pexp(ta[ra[k]], tb[rb[k]]));
        i64 sum;
        int g = mm_block_grid(p, acc, emax, &sum);
        for (int k = k0; k < k1; ++k) sum += mm_term(ta[ra[k]], tb[rb[k]], p.mab, g);
        acc = mm_block_finish(p, acc, sum, g);
    }
    out[(size_t)i * (size_t)n + (size_t)j] = mm_canonical(acc);
}

// Tiled kernel: 16 x 16 threads, each computing a 4 x 4 micro-tile (rows ty + 16 r, columns tx + 16 c) of a
// 64 x 64 output tile; one block of nfma (<= 32) decoded codes of A and B is staged in shared memory at a time.
#define MM_T 16
#define MM_R 4
#define MM_TILE (MM_T * MM_R)
#define MM_MAXNF 32

// The decoded code at (row, k) of a [rows, l] matrix, or 0 (a zero) outside it: the padding of a tile.
__device__ __forceinline__ int mm_code(const int* t, const unsigned char* __restrict__ x, int row, int rows, int k,
                                       int l) {
    return (row < rows && k < l) ? t[x[(size_t)row * (size_t)l + k]] : 0;
}

// A thread's place: (tx, ty) in the 16 x 16 thread block, tid its linear index, and the first output row i0
// (of A) and column j0 (row of B) of the block's 64 x 64 tile.
struct MmPlace {
    int tx, ty, tid, i0, j0;
};
__device__ __forceinline__ MmPlace mm_place() {
    MmPlace q;
    q.tx = threadIdx.x;
    q.ty = threadIdx.y;
    q.tid = q.ty * MM_T + q.tx;
    q.i0 = blockIdx.y * MM_TILE;
    q.j0 = blockIdx.x * MM_TILE;
    return q;
}

// One element of a block's staging, x in [0, MM_TILE * nfma): tile row x / nfma at block position
// x % nfma, with the decoded codes of A's row i0 + row and B's row j0 + row at k0 + k (zeros outside the
// matrices: a zero product takes no part, so a ragged tail equals a shorter block).
struct MmStaged {
    int row, k, a, b;
};
__device__ __forceinline__ MmStaged mm_stage(const ChainParams& p, const unsigned char* __restrict__ a,
                                             const unsigned char* __restrict__ b, int x, const MmPlace& q, int k0,
                                             int m, int n, int l) {
    MmStaged s;
    s.row = x / p.nfma;
    s.k = x - s.row * p.nfma;
    s.a = mm_code(MMAEMU_DECODE[p.ta], a, q.i0 + s.row, m, k0 + s.k, l);
    s.b = mm_code(MMAEMU_DECODE[p.tb], b, q.j0 + s.row, n, k0 + s.k, l);
    return s;
}

// Write a thread's 4 x 4 micro-tile (rows i + 16 r, columns j + 16 c) of the [m, n] output, canonical NaN.
__device__ __forceinline__ void mm_store_tile(float* __restrict__ out, const float (&acc)[MM_R][MM_R], int i, int j,
                                              int m, int n) {
#pragma unroll
    for (int r = 0; r < MM_R; ++r) {
        int ii = i + MM_T * r;
        if (ii >= m) continue;
#pragma unroll
        for (int c = 0; c < MM_R; ++c) {
            int jj = j + MM_T * c;
            if (jj < n) out[(size_t)ii * (size_t)n + (size_t)jj] = mm_canonical(acc[r][c]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(MM_T * MM_T)
mmaemu_chain_tiled(ChainParams p, const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                   float* __restrict__ out, int m, int n, int l) {
    __shared__ int sa[MM_TILE][MM_MAXNF + 1];
    __shared__ int sb[MM_TILE][MM_MAXNF + 1];
    const MmPlace q = mm_place();
    const int nf = p.nfma;
    float acc[MM_R][MM_R] = {};

    for (int k0 = 0; k0 < l; k0 += nf) {
        __syncthreads();
        // Stage the block (codes beyond l or beyond the matrix are zeros).
        for (int x = q.tid; x < MM_TILE * nf; x += MM_T * MM_T) {
            MmStaged s = mm_stage(p, a, b, x, q, k0, m, n, l);
            sa[s.row][s.k] = s.a;
            sb[s.row][s.k] = s.b;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < MM_R; ++r) {
            const int* ar = sa[q.ty + MM_T * r];
#pragma unroll
            for (int c = 0; c < MM_R; ++c) {
                const int* br = sb[q.tx + MM_T * c];
                float cur = acc[r][c];
                if (!isfinite(cur)) continue;
                int emax = (int)0x80000000;
                for (int k = 0; k < nf; ++k) emax = max(emax, mm_pexp(ar[k], br[k]));
                i64 sum;
                int g = mm_block_grid(p, cur, emax, &sum);
                for (int k = 0; k < nf; ++k) sum += mm_term(ar[k], br[k], p.mab, g);
                acc[r][c] = mm_block_finish(p, cur, sum, g);
            }
        }
    }
    mm_store_tile(out, acc, q.i0 + q.ty, q.j0 + q.tx, m, n);
}

// Narrow kernel: early-c presets whose block sums fit 32 bits ((nfma + 1) * 2^(frac + 2) < 2^31), with
// frac >= ma + mb, nfma <= 32 and -400 <= min_exp <= 400 (ada, hopper). The 64 x 64 tile and 4 x 4 micro-tile of
// the tiled kernel, but each block's codes are decoded once when staged: signed significands (A's scaled by
// 2^(frac - mab)) and exponents (zeros at MM_NZEXP, so that a product with a zero operand never wins the
// maximum: its exponent is <= -497 < -400 <= min_exp); the k loops run outside the 16 outputs (8 shared
// loads per 16 products); a term is one multiply, one shift and a sign fix in 32 bits:
//   trunc(sa * sb * 2^(frac - mab) / 2^d), d = E - ea - eb >= 0 (E: the block exponent, g = E - frac),
// which is mm_term's align(|sa * sb|, ea + eb - mab - g) with its sign; d is clamped to 31, where both give
// 0 (|sa * sb| * 2^(frac - mab) < 2^(frac + 2) < 2^31).
#define MM_NZEXP (-512)

extern "C" __global__ void __launch_bounds__(MM_T * MM_T)
mmaemu_chain_narrow(ChainParams p, const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                    float* __restrict__ out, int m, int n, int l) {
    __shared__ int qa[MM_TILE][MM_MAXNF + 1];  // A: signed significand * 2^(frac - mab)
    __shared__ int xa[MM_TILE][MM_MAXNF + 1];  // A: operand exponent (MM_NZEXP for zeros)
    __shared__ int qb[MM_TILE][MM_MAXNF + 1];  // B: signed significand
    __shared__ int xb[MM_TILE][MM_MAXNF + 1];  // B: operand exponent (MM_NZEXP for zeros)
    const MmPlace q = mm_place();
    const int nf = p.nfma;
    const int scale = 1 << (p.frac - p.mab);
    float acc[MM_R][MM_R] = {};

    for (int k0 = 0; k0 < l; k0 += nf) {
        __syncthreads();
        // Stage and decode the block; codes beyond l or beyond the matrix are zeros.
        for (int x = q.tid; x < MM_TILE * nf; x += MM_T * MM_T) {
            MmStaged s = mm_stage(p, a, b, x, q, k0, m, n, l);
            int sa = mm_sig(s.a), sb = mm_sig(s.b);
            qa[s.row][s.k] = (mm_neg(s.a) ? -sa : sa) * scale;
            xa[s.row][s.k] = sa != 0 ? mm_exp(s.a) : MM_NZEXP;
            qb[s.row][s.k] = mm_neg(s.b) ? -sb : sb;
            xb[s.row][s.k] = sb != 0 ? mm_exp(s.b) : MM_NZEXP;
        }
        __syncthreads();
        // Pass 1: the block maximum of the product exponents, per output.
        int e[MM_R][MM_R];
#pragma unroll
        for (int r = 0; r < MM_R; ++r)
#pragma unroll
            for (int c = 0; c < MM_R; ++c) e[r][c] = 2 * MM_NZEXP;
        for (int k = 0; k < nf; ++k) {
            int ea[MM_R], eb[MM_R];
#pragma unroll
            for (int r = 0; r < MM_R; ++r) ea[r] = xa[q.ty + MM_T * r][k];
#pragma unroll
            for (int c = 0; c < MM_R; ++c) eb[c] = xb[q.tx + MM_T * c][k];
#pragma unroll
            for (int r = 0; r < MM_R; ++r)
#pragma unroll
                for (int c = 0; c < MM_R; ++c) e[r][c] = max(e[r][c], ea[r] + eb[c]);
        }
        // The grid (with c, the floor) and c's aligned term; e becomes the block exponent E = g + frac. A
        // non-finite accumulator is left as it is (finite operands cannot change it).
        int g[MM_R][MM_R], sum[MM_R][MM_R];
#pragma unroll
        for (int r = 0; r < MM_R; ++r)
#pragma unroll
            for (int c = 0; c < MM_R; ++c) {
                float cur = acc[r][c];
                i64 cs;
                g[r][c] = mm_block_grid(p, isfinite(cur) ? cur : 0.0f, e[r][c], &cs);
                sum[r][c] = (int)cs;
                e[r][c] = g[r][c] + p.frac;
            }
        // Pass 2: the aligned, truncated terms.
        for (int k = 0; k < nf; ++k) {
            int sa[MM_R], ea[MM_R], sb[MM_R], eb[MM_R];
#pragma unroll
            for (int r = 0; r < MM_R; ++r) {
                sa[r] = qa[q.ty + MM_T * r][k];
                ea[r] = xa[q.ty + MM_T * r][k];
            }
#pragma unroll
            for (int c = 0; c < MM_R; ++c) {
                sb[c] = qb[q.tx + MM_T * c][k];
                eb[c] = xb[q.tx + MM_T * c][k];
            }
#pragma unroll
            for (int r = 0; r < MM_R; ++r)
#pragma unroll
                for (int c = 0; c < MM_R; ++c) {
                    int prod = sa[r] * sb[c];
                    int d = min(e[r][c] - ea[r] - eb[c], 31);
                    int mag = abs(prod) >> d;
                    sum[r][c] += prod < 0 ? -mag : mag;
                }
        }
#pragma unroll
        for (int r = 0; r < MM_R; ++r)
#pragma unroll
            for (int c = 0; c < MM_R; ++c)
                if (isfinite(acc[r][c])) acc[r][c] = mm_normalise((i64)sum[r][c], g[r][c], p.frac_out);
    }
    mm_store_tile(out, acc, q.i0 + q.ty, q.j0 + q.tx, m, n);
}
