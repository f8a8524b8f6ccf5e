/* SPDX-License-Identifier: MIT */
/* SHA-256 with the CPU's SHA extensions when present: see core/sha256.h. */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "core/sha256.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHA_NI_CODE 1
#endif

#ifdef HAVE_SHA_NI_CODE
static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* The state lives as ABEF/CDGH register pairs; rounds go four at a time. */
__attribute__((target("sha,sse4.1,ssse3")))
static void blocks_ni(uint32_t st[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&st[0]);
	__m128i s1 = _mm_loadu_si128((const __m128i *)&st[4]);
	__m128i s0, w[4];

	tmp = _mm_shuffle_epi32(tmp, 0xb1);
	s1 = _mm_shuffle_epi32(s1, 0x1b);
	s0 = _mm_alignr_epi8(tmp, s1, 8);
	s1 = _mm_blend_epi16(s1, tmp, 0xf0);
	for (; n > 0; n--, p += 64) {
		__m128i save0 = s0, save1 = s1;

		for (int g = 0; g < 16; g++) {
			__m128i m, k;

			if (g < 4) {
				m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			} else {
				m = _mm_sha256msg1_epu32(w[(g - 4) & 3], w[(g - 3) & 3]);
				m = _mm_add_epi32(m, _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4));
				m = _mm_sha256msg2_epu32(m, w[(g - 1) & 3]);
			}
			w[g & 3] = m;
			k = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K256[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, k);
			k = _mm_shuffle_epi32(k, 0x0e);
			s0 = _mm_sha256rnds2_epu32(s0, s1, k);
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	s0 = _mm_blend_epi16(tmp, s1, 0xf0);
	s1 = _mm_alignr_epi8(s1, tmp, 8);
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}

static int ni_state = -1; /* -1 unknown, 0 no, 1 yes */

static bool have_ni(void)
{
	unsigned a, b, c, d;

	if (ni_state >= 0)
		return ni_state;
	ni_state = 0;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9)) &&
	    __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)))
		ni_state = 1;
	return ni_state;
}
#endif

bool shk_sha256_accelerated(void)
{
#ifdef HAVE_SHA_NI_CODE
	return have_ni();
#else
	return false;
#endif
}

void shk_sha256_force_portable(bool portable)
{
#ifdef HAVE_SHA_NI_CODE
	ni_state = portable ? 0 : -1;
#else
	(void)portable;
#endif
}

static const uint32_t IV[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

void shk_sha256_init(shk_sha256 *s)
{
	memset(s, 0, sizeof(*s));
#ifdef HAVE_SHA_NI_CODE
	s->ni = have_ni();
#endif
	if (s->ni)
		memcpy(s->h, IV, sizeof(IV));
	else
		crypto_hash_sha256_init(&s->sodium);
}

void shk_sha256_update(shk_sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (!s->ni) {
		crypto_hash_sha256_update(&s->sodium, p, len);
		return;
	}
#ifdef HAVE_SHA_NI_CODE
	s->total += len;
	if (s->buffered) {
		size_t take = 64 - s->buffered < len ? 64 - s->buffered : len;

		memcpy(s->buf + s->buffered, p, take);
		s->buffered += take;
		p += take;
		len -= take;
		if (s->buffered < 64)
			return;
		blocks_ni(s->h, s->buf, 1);
		s->buffered = 0;
	}
	if (len >= 64) {
		blocks_ni(s->h, p, len / 64);
		p += len / 64 * 64;
		len %= 64;
	}
	memcpy(s->buf, p, len);
	s->buffered = len;
#endif
}

void shk_sha256_final(shk_sha256 *s, uint8_t out[32])
{
	if (!s->ni) {
		crypto_hash_sha256_final(&s->sodium, out);
		return;
	}
#ifdef HAVE_SHA_NI_CODE
	{
		uint64_t bits = s->total * 8;
		size_t pad = s->buffered < 56 ? 56 - s->buffered : 120 - s->buffered;
		uint8_t tail[128] = { 0x80 };

		for (int i = 0; i < 8; i++)
			tail[pad + i] = (uint8_t)(bits >> (56 - 8 * i));
		shk_sha256_update(s, tail, pad + 8);
		for (int i = 0; i < 8; i++) {
			out[4 * i] = (uint8_t)(s->h[i] >> 24);
			out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
			out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
			out[4 * i + 3] = (uint8_t)s->h[i];
		}
	}
#endif
}

void shk_sha256_once(const void *data, size_t len, uint8_t out[32])
{
	shk_sha256 s;

	shk_sha256_init(&s);
	shk_sha256_update(&s, data, len);
	shk_sha256_final(&s, out);
}
