/*  cl_base58.c - base58 with the Bitcoin alphabet (peer ids).

    The input is a big-endian number; each leading zero byte is written as
    '1' (the digit zero) and the rest is converted by repeated
    multiply-and-add on a byte array, O(n^2), which is nothing for 32-byte
    keys.  Decoding is exact: the text must describe exactly the number of
    bytes the caller asks for, leading '1's included, so "the same key with
    a digit dropped" never decodes.  Inputs are capped (CL_BASE58_MAX_BYTES)
    so that a hostile text cannot make us spin.
*/
#include "util/cl_identity.h"

#include <string.h>

#define CL_BASE58_MAX_BYTES 1024

static const char s_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/* Digit value of c, or -1 when c is not in the alphabet. */
static int s_digit(char c)
{
    const char *p = c != '\0' ? strchr(s_alphabet, c) : NULL;
    return p == NULL ? -1 : (int)(p - s_alphabet);
}

int cl_base58_encode(const uint8_t *in, size_t len, char *out, size_t outlen)
{
    if (out == NULL || outlen == 0 || (in == NULL && len > 0) || len > CL_BASE58_MAX_BYTES)
        return -1;
    size_t zeros = 0;
    while (zeros < len && in[zeros] == 0)
        zeros++;
    /* log(256)/log(58) < 1.37: digits needed for the remaining bytes. */
    uint8_t digits[CL_BASE58_MAX_BYTES * 138 / 100 + 1];
    size_t size = (len - zeros) * 138 / 100 + 1;
    size_t used = 0; /* significant digits, stored at the end of digits[] */
    memset(digits, 0, size);
    for (size_t i = zeros; i < len; i++) {
        unsigned carry = in[i];
        size_t j = 0;
        for (size_t k = size; k-- > 0 && (carry != 0 || j < used); j++) {
            carry += 256u * digits[k];
            digits[k] = (uint8_t)(carry % 58);
            carry /= 58;
        }
        used = j;
    }
    size_t skip = size - used;
    size_t total = zeros + used;
    if (total + 1 > outlen)
        return -1;
    memset(out, '1', zeros);
    for (size_t k = 0; k < used; k++)
        out[zeros + k] = s_alphabet[digits[skip + k]];
    out[total] = '\0';
    return 0;
}

int cl_base58_decode(const char *in, uint8_t *out, size_t outlen)
{
    if (in == NULL || (out == NULL && outlen > 0) || outlen > CL_BASE58_MAX_BYTES)
        return -1;
    size_t textlen = strnlen(in, 2 * outlen + 2);
    if (textlen > 2 * outlen + 1) /* far longer than any encoding of outlen bytes */
        return -1;
    size_t ones = 0;
    while (ones < textlen && in[ones] == '1')
        ones++;
    if (ones > outlen)
        return -1;
    uint8_t num[CL_BASE58_MAX_BYTES];
    memset(num, 0, outlen);
    size_t used = 0; /* significant bytes at the end of num[] */
    for (size_t i = ones; i < textlen; i++) {
        int d = s_digit(in[i]);
        if (d < 0)
            return -1;
        unsigned carry = (unsigned)d;
        size_t j = 0;
        for (size_t k = outlen; k-- > 0 && (carry != 0 || j < used); j++) {
            carry += 58u * num[k];
            num[k] = (uint8_t)(carry & 0xff);
            carry >>= 8;
        }
        if (carry != 0)
            return -1; /* more than outlen bytes */
        used = j;
    }
    /* Drop bytes that are zero at the top of the number (used can count
       them when a carry ran through a zero digit). */
    while (used > 0 && num[outlen - used] == 0)
        used--;
    if (ones + used != outlen)
        return -1;
    memcpy(out, num, outlen); /* leading ones -> zero bytes, already zero */
    return 0;
}
