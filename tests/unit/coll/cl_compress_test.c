/*  cl_compress_test.c - selftest of the binary16 conversions and of the
    wire codecs (cl_compress_* in cl_reduce.h).

    Conversions: every binary16 value to float and back; float -> half on a
    strided sweep of all 2^32 float patterns plus every rounding boundary
    (midpoints between adjacent halves and their neighbours); double ->
    half on the boundaries where rounding through float would round twice;
    all against a slow reference, and against the compiler's _Float16 when
    it has one.  Codecs: exact byte format, round-trip error bounds,
    specials, block tails, misaligned buffers, bad lengths and arguments,
    and arbitrary bytes of the right length.
*/
#include "cl_half.h"
#include "cl_reduce.h"
#include "cl_reduce_testutil.h"
#include <float.h>
#include <string.h>

/* ---- conversions ------------------------------------------------------- */

static void test_half_to_float(void)
{
    int bad = 0, bad_rt = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = cl_half_to_float(h);
        double want = ref_half_to_double((uint16_t)h);
        if (isnan(want)) {
            /* NaN stays NaN with its sign and payload (upper bits). */
            uint32_t b = cl_half_f32_bits(f);
            bad += !isnan(f) || (b >> 31) != (h >> 15) || ((b >> 13) & 0x3ff) != (h & 0x3ff);
        } else {
            bad += (double)f != want || !signbit(f) != !signbit(want);
        }
        uint32_t back = cl_half_from_float(f);
        if (ref_half_is_nan((uint16_t)h))
            bad_rt += !ref_half_is_nan((uint16_t)back) || (back & 0x200) == 0; /* quiet */
        else
            bad_rt += back != h;
        bad_rt += cl_half_from_double((double)f) != back;
    }
    CHECK(bad == 0, "half -> float: %d of 65536 wrong", bad);
    CHECK(bad_rt == 0, "half -> float -> half: %d of 65536 wrong", bad_rt);
}

static int check_f2h(float f)
{
    uint16_t got = (uint16_t)cl_half_from_float(f);
    uint16_t want = ref_half_from_double((double)f);
    int ok = half_same(got, want);
#ifdef __FLT16_MAX__
    _Float16 n = (_Float16)f;
    uint16_t nb;
    memcpy(&nb, &n, 2);
    ok = ok && half_same(got, nb);
#endif
    return ok;
}

static void test_float_to_half(void)
{
    int bad = 0;
    /* Every 251st pattern: all exponents, many mantissas, NaNs, both signs. */
    for (uint64_t b = 0; b <= 0xffffffffull; b += 251)
        bad += !check_f2h(cl_half_bits_f32((uint32_t)b));
    CHECK(bad == 0, "float -> half, strided sweep: %d wrong", bad);
    bad = 0;
    /* Midpoints between adjacent halves and one float ulp either side. */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        for (int s = 0; s < 2; s++) {
            double lo = ref_half_to_double((uint16_t)h), hi = ref_half_to_double((uint16_t)(h + 1));
            float mid = (float)((lo + hi) / 2); /* exact in float */
            float cand[3] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)};
            for (int c = 0; c < 3; c++)
                bad += !check_f2h(s ? -cand[c] : cand[c]);
        }
    }
    CHECK(bad == 0, "float -> half at rounding boundaries: %d wrong", bad);
    CHECK(cl_half_from_float(65519.996f) == 0x7bff, "just below 65520 -> 65504");
    CHECK(cl_half_from_float(65520.0f) == 0x7c00, "65520 -> inf");
    CHECK(cl_half_from_float(-1e30f) == 0xfc00, "-1e30 -> -inf");
    CHECK(cl_half_from_float(-0.0f) == 0x8000, "-0 kept");
    CHECK(cl_half_from_float(0x1p-25f) == 0, "2^-25 ties to even 0");
    CHECK(cl_half_from_float(0x1.000002p-25f) == 1, "just above 2^-25 -> min subnormal");
}

static void test_double_to_half(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = ref_half_to_double((uint16_t)h), hi = ref_half_to_double((uint16_t)(h + 1));
        double mid = (lo + hi) / 2;
        /* Within a float ulp of the midpoint: rounding through float
           would land on the tie and round to even instead. */
        double cand[5] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY), mid + mid * 0x1p-40,
                          mid - mid * 0x1p-40};
        for (int c = 0; c < 5; c++)
            for (int s = 0; s < 2; s++) {
                double d = s ? -cand[c] : cand[c];
                bad += !half_same((uint16_t)cl_half_from_double(d), ref_half_from_double(d));
            }
    }
    for (int i = 0; i < 200000; i++) {
        double d = ldexp(rng_uniform(-1, 1), (int)(rng_next() % 80) - 40);
        bad += !half_same((uint16_t)cl_half_from_double(d), ref_half_from_double(d));
    }
    CHECK(bad == 0, "double -> half: %d wrong", bad);
    CHECK(cl_half_from_double(NAN) == 0x7e00 || ref_half_is_nan((uint16_t)cl_half_from_double(NAN)),
          "NaN");
    CHECK(cl_half_from_double(1e300) == 0x7c00 && cl_half_from_double(-INFINITY) == 0xfc00,
          "overflow and -inf");
    CHECK(cl_half_from_double(1e-300) == 0 && cl_half_from_double(-1e-300) == 0x8000, "underflow");
}

/* ---- codecs -------------------------------------------------------------- */

static void test_bounds(void)
{
    CHECK(cl_compress_bound(CL_COMPRESS_NONE, COLLAB_DOUBLE_INT, 10) == 160, "none bound");
    CHECK(cl_compress_bound(CL_COMPRESS_FP16, COLLAB_FLOAT, 10) == 20, "fp16 float bound");
    CHECK(cl_compress_bound(CL_COMPRESS_FP16, COLLAB_DOUBLE, 3) == 6, "fp16 double bound");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_FLOAT, 256) == 256 + 4, "int8 one block");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_FLOAT, 257) == 257 + 8, "int8 tail block");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_DOUBLE, 1000) == 1000 + 4 * 8, "int8 double");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_FLOAT, 0) == 0, "count 0");
    /* Codecs other than NONE mean NONE for non-float types. */
    CHECK(cl_compress_bound(CL_COMPRESS_FP16, COLLAB_INT32, 10) == 40, "fp16 on int32 is raw");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_FLOAT16, 10) == 20, "int8 on float16 is raw");
    CHECK(cl_compress_bound((cl_compress_t)3, COLLAB_FLOAT, 10) == 0, "unknown codec");
    CHECK(cl_compress_bound((cl_compress_t)-1, COLLAB_FLOAT, 10) == 0, "negative codec");
    CHECK(cl_compress_bound(CL_COMPRESS_NONE, COLLAB_DTYPE_COUNT, 10) == 0, "bad type");
    CHECK(cl_compress_bound(CL_COMPRESS_NONE, COLLAB_DOUBLE, SIZE_MAX / 4) == 0, "overflow");
    CHECK(cl_compress_bound(CL_COMPRESS_FP16, COLLAB_FLOAT, SIZE_MAX) == 0, "fp16 overflow");
    CHECK(cl_compress_bound(CL_COMPRESS_INT8, COLLAB_DOUBLE, SIZE_MAX - 10) == 0, "int8 overflow");
}

static void test_int8_format(void)
{
    /* One block: max |x| = 127 so s = 1; q rounds half away from zero. */
    float x[5] = {127.0f, -63.5f, 0.5f, -0.49f, 2.5f};
    unsigned char buf[4 + 5];
    CHECK(cl_compress_encode(CL_COMPRESS_INT8, COLLAB_FLOAT, x, 5, buf) == 9, "int8 size");
    const unsigned char want[9] = {0x00, 0x00, 0x80, 0x3f, 127, (unsigned char)-64, 1, 0, 3};
    CHECK(memcmp(buf, want, 9) == 0, "int8 bytes: %02x %02x %02x %02x | %d %d %d %d %d", buf[0],
          buf[1], buf[2], buf[3], (int8_t)buf[4], (int8_t)buf[5], (int8_t)buf[6], (int8_t)buf[7],
          (int8_t)buf[8]);
    float y[5];
    CHECK(cl_compress_decode(CL_COMPRESS_INT8, COLLAB_FLOAT, buf, 9, 5, y) == 0, "int8 decode");
    CHECK(y[0] == 127 && y[1] == -64 && y[2] == 1 && y[3] == 0 && y[4] == 3, "int8 values");
    /* FP16 bytes are little-endian binary16. */
    float f[2] = {1.0f, -2.0f};
    unsigned char h[4];
    CHECK(cl_compress_encode(CL_COMPRESS_FP16, COLLAB_FLOAT, f, 2, h) == 4, "fp16 size");
    CHECK(h[0] == 0x00 && h[1] == 0x3c && h[2] == 0x00 && h[3] == 0xc0, "fp16 bytes");
}

/* Round trip of count random elements (with specials in some blocks) at
   byte offset `off`; checks the documented error bounds. */
static void roundtrip(cl_compress_t c, collab_dtype_t t, size_t count, size_t off, int specials)
{
    const size_t ext = t == COLLAB_FLOAT ? 4 : 8;
    const size_t bytes = cl_compress_bound(c, t, count);
    unsigned char *src = malloc(count * ext + 1), *enc = malloc(bytes + 1),
                  *dec = malloc(count * ext + 1);
    double *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
    for (size_t i = 0; i < count; i++) {
        /* Magnitudes vary per block, so scales differ. */
        double mag = ldexp(1.0, (int)((i / 256) % 20) - 10);
        x[i] = rng_uniform(-mag, mag);
        if (specials && i % 997 == 13)
            x[i] = (i / 997) % 3 == 0 ? NAN : (i / 997) % 3 == 1 ? INFINITY : -INFINITY;
        if (t == COLLAB_FLOAT) {
            float f = (float)x[i];
            x[i] = f;
            memcpy(src + off + i * 4, &f, 4);
        } else {
            memcpy(src + off + i * 8, &x[i], 8);
        }
    }
    size_t n = cl_compress_encode(c, t, src + off, count, enc + off);
    CHECK(n == bytes, "encode wrote %zu of %zu bytes", n, bytes);
    int rc = cl_compress_decode(c, t, enc + off, bytes, count, dec + off);
    CHECK(rc == 0, "decode rc %d", rc);
    for (size_t i = 0; i < count; i++) {
        if (t == COLLAB_FLOAT) {
            float f;
            memcpy(&f, dec + off + i * 4, 4);
            y[i] = f;
        } else {
            memcpy(&y[i], dec + off + i * 8, 8);
        }
    }
    int bad = 0;
    for (size_t b = 0; b < count; b += 256) {
        size_t m = count - b < 256 ? count - b : 256;
        double amax = 0;
        int special = 0;
        for (size_t j = 0; j < m; j++) {
            special |= !isfinite(x[b + j]);
            amax = fabs(x[b + j]) > amax ? fabs(x[b + j]) : amax;
        }
        for (size_t j = 0; j < m; j++) {
            double xi = x[b + j], yi = y[b + j];
            if (c == CL_COMPRESS_FP16) {
                uint16_t want = ref_half_from_double(xi);
                double wv = ref_half_to_double(want);
                bad += isnan(xi) ? !isnan(yi) : yi != wv;
            } else if (special) {
                bad += !isnan(yi); /* the whole block signals the overflow */
            } else {
                double s = amax / 127;
                bad += fabs(yi - xi) > s * 0.5 * (1 + 1e-5) + fabs(xi) * 1e-6;
            }
        }
    }
    CHECK(bad == 0, "%s round trip of %zu %s at offset %zu: %d elements off",
          c == CL_COMPRESS_FP16 ? "fp16" : "int8", count, t == COLLAB_FLOAT ? "float" : "double",
          off, bad);
    /* Decoding is deterministic: the same bytes give the same bits. */
    unsigned char *dec2 = malloc(count * ext + 1);
    cl_compress_decode(c, t, enc + off, bytes, count, dec2);
    CHECK(memcmp(dec2, dec + off, count * ext) == 0, "decode deterministic");
    free(dec2);
    free(src);
    free(enc);
    free(dec);
    free(x);
    free(y);
}

static void test_roundtrips(void)
{
    static const size_t counts[] = {1, 5, 255, 256, 257, 1000, 4096 + 77};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        for (int c = CL_COMPRESS_FP16; c <= CL_COMPRESS_INT8; c++) {
            roundtrip((cl_compress_t)c, COLLAB_FLOAT, counts[i], i % 2, 0);
            roundtrip((cl_compress_t)c, COLLAB_DOUBLE, counts[i], (i + 1) % 2, 0);
            roundtrip((cl_compress_t)c, COLLAB_FLOAT, counts[i], 1, 1);
            roundtrip((cl_compress_t)c, COLLAB_DOUBLE, counts[i], 0, 1);
        }
    }
    /* INT8 special cases: all-zero block, double beyond float range, a
       NaN block next to a clean one. */
    double z[300];
    memset(z, 0, sizeof z);
    z[299] = -1e300;
    unsigned char e[300 + 16];
    double back[300];
    size_t n = cl_compress_encode(CL_COMPRESS_INT8, COLLAB_DOUBLE, z, 300, e);
    CHECK(n == 316 && cl_compress_decode(CL_COMPRESS_INT8, COLLAB_DOUBLE, e, n, 300, back) == 0,
          "int8 zeros");
    CHECK(back[0] == 0 && back[255] == 0 && back[299] == -1e300 && back[256] == 0,
          "zero block and 1e300 (%g)", back[299]);
    float nb[512];
    for (int i = 0; i < 512; i++)
        nb[i] = (float)i;
    nb[3] = NAN;
    unsigned char e2[512 + 8];
    float nb2[512];
    n = cl_compress_encode(CL_COMPRESS_INT8, COLLAB_FLOAT, nb, 512, e2);
    cl_compress_decode(CL_COMPRESS_INT8, COLLAB_FLOAT, e2, n, 512, nb2);
    CHECK(isnan(nb2[0]) && isnan(nb2[255]) && fabsf(nb2[300] - 300.0f) <= 511.0f / 254 &&
              nb2[511] == 511.0f,
          "NaN poisons only its block");
    /* FP16 of doubles: one rounding, overflow to inf, -0 kept. */
    double d[4] = {65520.0, -0.0, 1.0 + 0x1p-11 + 0x1p-40, 1e-9};
    unsigned char e3[8];
    double d2[4];
    cl_compress_encode(CL_COMPRESS_FP16, COLLAB_DOUBLE, d, 4, e3);
    cl_compress_decode(CL_COMPRESS_FP16, COLLAB_DOUBLE, e3, 8, 4, d2);
    CHECK(isinf(d2[0]) && d2[1] == 0 && signbit(d2[1]) && d2[2] == 1.0 + 0x1p-10 && d2[3] == 0,
          "fp16 doubles: %g %g %.17g %g", d2[0], d2[1], d2[2], d2[3]);
    /* NONE and non-float types: raw bytes. */
    int32_t iv[3] = {1, -2, 3}, iv2[3];
    unsigned char e4[12];
    CHECK(cl_compress_encode(CL_COMPRESS_FP16, COLLAB_INT32, iv, 3, e4) == 12 &&
              memcmp(e4, iv, 12) == 0,
          "fp16 on int32 is raw");
    CHECK(cl_compress_decode(CL_COMPRESS_INT8, COLLAB_INT32, e4, 12, 3, iv2) == 0 &&
              memcmp(iv2, iv, 12) == 0,
          "int8 on int32 is raw");
}

static void test_bad_input(void)
{
    float x[300], y[300];
    for (int i = 0; i < 300; i++)
        x[i] = (float)i - 150;
    unsigned char e[300 * sizeof(float) + 1]; /* large enough for every codec */
    for (int c = CL_COMPRESS_NONE; c <= CL_COMPRESS_INT8; c++) {
        size_t b = cl_compress_bound((cl_compress_t)c, COLLAB_FLOAT, 300);
        CHECK(cl_compress_encode((cl_compress_t)c, COLLAB_FLOAT, x, 300, e) == b, "encode");
        for (int i = 0; i < 300; i++)
            y[i] = 42.0f;
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, e, b - 1, 300, y) ==
                  COLLAB_ERR_ARG,
              "short input, codec %d", c);
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, e, b + 1, 300, y) ==
                  COLLAB_ERR_ARG,
              "long input, codec %d", c);
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, e, 0, 300, y) == COLLAB_ERR_ARG,
              "empty input, codec %d", c);
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, NULL, b, 300, y) == COLLAB_ERR_ARG,
              "NULL input, codec %d", c);
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, e, b, 300, NULL) == COLLAB_ERR_ARG,
              "NULL output, codec %d", c);
        CHECK(y[0] == 42.0f && y[299] == 42.0f, "rejected input leaves dst alone");
        CHECK(cl_compress_decode((cl_compress_t)c, COLLAB_FLOAT, e, 0, 0, y) == 0, "count 0");
    }
    CHECK(cl_compress_decode((cl_compress_t)7, COLLAB_FLOAT, e, 4, 1, y) == COLLAB_ERR_ARG,
          "unknown codec");
    CHECK(cl_compress_decode(CL_COMPRESS_NONE, (collab_dtype_t)99, e, 4, 1, y) == COLLAB_ERR_ARG,
          "unknown type");
    CHECK(cl_compress_decode(CL_COMPRESS_NONE, COLLAB_DOUBLE, e, 0, SIZE_MAX / 4, y) ==
              COLLAB_ERR_ARG,
          "count whose size overflows");
    CHECK(cl_compress_encode((cl_compress_t)7, COLLAB_FLOAT, x, 10, e) == 0, "encode bad codec");
    CHECK(cl_compress_encode(CL_COMPRESS_FP16, COLLAB_FLOAT, NULL, 10, e) == 0, "encode NULL");

    /* Arbitrary bytes of the right length decode without touching memory
       outside the buffers (exact-size heap blocks; run under ASan in CI). */
    for (int round = 0; round < 200; round++) {
        size_t count = (size_t)(rng_next() % 700) + 1;
        collab_dtype_t t = round % 2 ? COLLAB_FLOAT : COLLAB_DOUBLE;
        cl_compress_t c = (cl_compress_t)(1 + round % 2);
        size_t len = cl_compress_bound(c, t, count);
        unsigned char *junk = malloc(len);
        void *out = malloc(count * (t == COLLAB_FLOAT ? 4 : 8));
        for (size_t i = 0; i < len; i++)
            junk[i] = (unsigned char)rng_next();
        CHECK(cl_compress_decode(c, t, junk, len, count, out) == 0, "junk of the right length");
        free(junk);
        free(out);
    }
}

int main(void)
{
    rng_seed("cl_compress_test");
    test_half_to_float();
    test_float_to_half();
    test_double_to_half();
    test_bounds();
    test_int8_format();
    test_roundtrips();
    test_bad_input();
    if (s_failures != 0) {
        fprintf(stderr, "cl_compress_test: %d failure(s)\n", s_failures);
        return 1;
    }
    printf("cl_compress_test: OK\n");
    return 0;
}
