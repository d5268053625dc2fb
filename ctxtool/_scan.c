/* ctxtool._scan: the scan's metadata lines, read in C (optional; ctxtool/scanloop.py without it).
 *
 * Most lines of a real Claude Code file (progress, queue, api-request...: 80% of the lines, 60% of
 * the bytes) become an entry from four top-level fields: type, uuid, parentUuid and timestamp.
 * ``Meta.line`` checks such a line is valid JSON (RFC 8259, UTF-8 as strictly as Python decodes it),
 * reads those fields and appends the entry ``scanloop.meta_entry`` would make, in one call. It
 * declines (returns None) every line it is not sure of, which the Python loop then reads as
 * before: a line whose type is one ``normalize`` reads whole, or is no string; any escape in a key
 * or in one of those four values; one of those keys written twice; a parent that is neither a
 * string nor null; a timestamp that is no string, or not of the form the client writes
 * (``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z``: others go to ``parse_ts``); a lone surrogate escape
 * anywhere; nesting deeper than MAX_DEPTH; a line ending other than "\n"; and anything invalid.
 * So an accepted line's entry is the one the Python loop makes (tests/test_native_scan.py).
 *
 * Given ``claude``, Meta takes a Claude Code file's other lines too, those normalize reads whole
 * (attachments, prompts, responses, system lines, checkpoints): ``_scan_claude.c``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 200

typedef const unsigned char *cp;

/* ------------------------------------------------------------------------------------------ JSON */

static inline cp skip_ws(cp p, cp end) {  /* (most calls meet no white space: one compare, a byte above ' ') */
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* The walks between tokens, compact JSON (as the agents write it) first: white space is looked for only where a byte
 * below '!' stands. next_token: the first byte at or after p that is no white space. colon_then: p past a key's
 * closing quote; the value's first byte after the colon, NULL when no colon follows. */
static inline cp next_token(cp p, cp end) {
    return p < end && *p <= ' ' ? skip_ws(p, end) : p;
}

static inline cp colon_then(cp p, cp end) {
    if (p < end && *p != ':') p = skip_ws(p, end);
    if (p >= end || *p != ':') return NULL;
    return next_token(p + 1, end);
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 sequence starting at p (a byte >= 0x80), as strictly as Python's decoder: its length,
 * or 0 if invalid. */
static inline int utf8_seq(cp p, cp end) {
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3) return 0;
        unsigned char c1 = p[1];
        if (c == 0xE0) { if (c1 < 0xA0 || c1 > 0xBF) return 0; }
        else if (c == 0xED) { if (c1 < 0x80 || c1 > 0x9F) return 0; }
        else if ((c1 & 0xC0) != 0x80) return 0;
        if ((p[2] & 0xC0) != 0x80) return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4) return 0;
        unsigned char c1 = p[1];
        if (c == 0xF0) { if (c1 < 0x90 || c1 > 0xBF) return 0; }
        else if (c == 0xF4) { if (c1 < 0x80 || c1 > 0x8F) return 0; }
        else if ((c1 & 0xC0) != 0x80) return 0;
        if ((p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        return 4;
    }
    return 0;
}

/* A \\uXXXX escape at p (its backslash), with the low surrogate's escape after a high one: the position past it, and
 * the code point (>= 0x10000 for a pair); NULL when invalid or a lone surrogate (declined). */
static inline cp u_escape(cp p, cp end, unsigned *out) {
    if (end - p < 6) return NULL;
    int a = hexval(p[2]), b = hexval(p[3]), c2 = hexval(p[4]), d = hexval(p[5]);
    if ((a | b | c2 | d) < 0) return NULL;
    unsigned u = (unsigned)(a << 12 | b << 8 | c2 << 4 | d);
    p += 6;
    if (u >= 0xD800 && u <= 0xDBFF) {  /* a high surrogate: a low one must follow */
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return NULL;
        a = hexval(p[2]); b = hexval(p[3]); c2 = hexval(p[4]); d = hexval(p[5]);
        if ((a | b | c2 | d) < 0) return NULL;
        unsigned l = (unsigned)(a << 12 | b << 8 | c2 << 4 | d);
        if (l < 0xDC00 || l > 0xDFFF) return NULL;
        u = 0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00);
        p += 6;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
        return NULL;
    }
    *out = u;
    return p;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Eight bytes of a string (read little-endian) and what to look at in them: the high bit of each byte that is a quote,
 * a backslash, a control byte or >= 0x80, 0 when none is. (A borrow can mark a byte above a marked one too: the lowest
 * mark, the first such byte, is always right.) */
static inline uint64_t special8(uint64_t x) {
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x) | x) & HIGHS;
}

/* how many bytes at p (at least 16 readable) come before the first one to look at (as special8 tells): 16 when none in
 * these 16. SSE2 (every x86-64 has it); elsewhere two runs of 8. */
static inline int plain_run8(cp p);
#if defined(__SSE2__) && defined(__GNUC__)
/* the bytes to look at among the 16 at p (at least 16 readable): bit k set when p[k] is one */
static inline unsigned special16(cp p) {
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    __m128i q = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
    __m128i b = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
    __m128i c = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));  /* < 0x20 or >= 0x80: below 0x20 as signed bytes */
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, b), c));
}
#endif

static inline int plain_run16(cp p) {
#if defined(__SSE2__) && defined(__GNUC__)
    unsigned m = special16(p);
    return m ? __builtin_ctz(m) : 16;
#else
    int k = plain_run8(p);
    return k < 8 ? k : 8 + plain_run8(p + 8);
#endif
}

/* how many bytes at p (at least 8 readable) come before the first one to look at: 8 when none in these 8 */
static inline int plain_run8(cp p) {
    uint64_t x;
    memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
    uint64_t m = special8(x);
    return m ? __builtin_ctzll(m) >> 3 : 8;
#else
    int k = 0;
    while (k < 8 && p[k] != '"' && p[k] != '\\' && p[k] >= 0x20 && p[k] < 0x80) k++;
    return k;
#endif
}

/* how many bytes from p come before the first one to look at (a quote, backslash, control byte or byte >= 0x80),
 * looked at 16 and then 8 at a time: the last few bytes before ``end`` are left to the caller's byte loop */
static inline Py_ssize_t plain_len(cp p, cp end) {
    cp q = p;
    while (end - q >= 16) {
        int k = plain_run16(q);
        q += k;
        if (k < 16) return q - p;
    }
    while (end - q >= 8) {  /* (fewer than 16 bytes left) */
        int k = plain_run8(q);
        q += k;
        if (k < 8) return q - p;
    }
    return q - p;
}

/* the bytes a backslash escapes by itself in JSON: 1 */
static const unsigned char SIMPLE_ESCAPE[256] = {['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1,
                                                 ['t'] = 1};

/* One byte to look at (bit i of *m) in the block of ``w`` bytes at *pp, as a string's blocks are walked (the bytes to
 * look at dealt with in order from one load; a simple escape's two bytes, and a non-ASCII character's that ends in the
 * block, passed over by clearing their bits; a \u escape, or a character that runs into the next block, moves *pp on,
 * and the next block is loaded from there): 0 when the walk goes on in the block, 1 at the closing quote (*pp past
 * it), 2 when *pp moved on, -1 when the string is invalid. */
static inline int block_byte(cp *pp, cp end, int i, int w, uint32_t *m, int *esc) {
    cp p = *pp;
    unsigned char c = p[i];
    if (c == '"') {
        *pp = p + i + 1;
        return 1;
    }
    if (c == '\\') {
        *esc = 1;
        if (p + i + 1 >= end) return -1;
        if (SIMPLE_ESCAPE[p[i + 1]]) {
            if (i == w - 1) {  /* the escaped byte is the next block's first */
                *pp = p + w + 1;
                return 2;
            }
            *m &= ~((2u << (i + 1)) - 1);  /* (bits 0 to i + 1; all of them at i = 30) */
            return 0;
        }
        unsigned u;
        if (p[i + 1] != 'u' || !(p = u_escape(p + i, end, &u))) return -1;
        *pp = p;
        return 2;
    }
    if (c < 0x20) return -1;
    int n = utf8_seq(p + i, end);  /* (>= 0x80) */
    if (!n) return -1;
    if (i + n < w) {  /* the character ends in this block: on from the byte after it */
        *m &= ~((2u << (i + n - 1)) - 1);  /* (bits 0 to i + n - 1) */
        return 0;
    }
    *pp = p + i + n;
    return 2;
}

/* A string, p just past its opening quote. Returns the position past the closing quote, or NULL
 * (invalid, or a lone surrogate escape: declined). *esc is set when it holds an escape. */
static cp long_string_from(cp p, cp end, int *esc);
#if defined(__GNUC__) && defined(__x86_64__) && !defined(CTXTOOL_NO_AVX2)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* scan_long_string 32 bytes at a time, where the CPU has AVX2 (chosen once, at import: ``long_string``): the same walk
 * as the 16-byte one below (the bytes to look at dealt with in order from one load), half the loads and masks on the
 * long texts most bytes of a session are in. The last bytes (fewer than 32) go the 16-byte way. */
__attribute__((target("avx2"))) static cp scan_long_string_avx2(cp p, cp end, int *esc) {
    *esc = 0;
    const __m256i quote = _mm256_set1_epi8('"'), slash = _mm256_set1_epi8('\\');
    const __m256i space = _mm256_set1_epi8(0x20);
    while (end - p >= 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)p);
        __m256i q = _mm256_cmpeq_epi8(x, quote);
        __m256i b = _mm256_cmpeq_epi8(x, slash);
        __m256i c = _mm256_cmpgt_epi8(space, x);  /* < 0x20 or >= 0x80: below 0x20 as signed bytes */
        uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(q, b), c));
        int r = 0;
        while (m && !(r = block_byte(&p, end, __builtin_ctz(m), 32, &m, esc))) {}
        if (r == 1) return p;
        if (r < 0) return NULL;
        if (r == 0) p += 32;  /* (else p moved on: the next block from there) */
    }
    int e2 = 0;
    cp r = long_string_from(p, end, &e2);
    *esc |= e2;
    return r;
}
#endif

static cp scan_long_string_plain(cp p, cp end, int *esc) {
    *esc = 0;
    return long_string_from(p, end, esc);
}

/* the way scan_long_string goes on this CPU: set at import (``choose_long_string``) */
static cp (*long_string)(cp, cp, int *) = scan_long_string_plain;

static void choose_long_string(void) {
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && !getenv("CTXTOOL_NO_AVX2")) long_string = scan_long_string_avx2;
#endif
}

static inline cp scan_long_string(cp p, cp end, int *esc) {
    return long_string(p, end, esc);
}

/* scan_long_string's walk from p, *esc set (never cleared) when an escape is met */
static cp long_string_from(cp p, cp end, int *esc) {
#if defined(__SSE2__) && defined(__GNUC__)
    /* 16 bytes at a time (special16, block_byte); the last bytes (fewer than 16) go the way below */
    while (end - p >= 16) {
        uint32_t m = special16(p);
        int r = 0;
        while (m && !(r = block_byte(&p, end, __builtin_ctz(m), 16, &m, esc))) {}
        if (r == 1) return p;
        if (r < 0) return NULL;
        if (r == 0) p += 16;  /* (else p moved on: the next block from there) */
    }
#endif
    for (;;) {
        p += plain_len(p, end);
        if (p >= end) return NULL;
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= end) return NULL;
            unsigned char e = p[1];
            if (SIMPLE_ESCAPE[e]) {
                p += 2;
                continue;
            }
            unsigned u;
            if (e != 'u' || !(p = u_escape(p, end, &u))) return NULL;
            continue;
        }
        if (c >= 0x80) {
            int n = utf8_seq(p, end);
            if (!n) return NULL;
            p += n;
            continue;
        }
        p++;
    }
}

/* scan_long_string, with its most common case inline: a string whose closing quote is the first byte to look at among
 * the next 16 (most keys and short values), found from one load, with no call */
static inline cp scan_string(cp p, cp end, int *esc) {
#if defined(__SSE2__) && defined(__GNUC__)
    if (end - p >= 16) {
        unsigned m = special16(p);
        if (m) {
            int i = __builtin_ctz(m);
            if (p[i] == '"') {
                *esc = 0;
                return p + i + 1;
            }
        }
    }
#endif
    return scan_long_string(p, end, esc);
}

/* the most digits of an integer this module takes: orjson refuses one of more than ~310 (beyond a double's range), and
 * Python's json fallback refuses one of more than sys.get_int_max_str_digits() (4300, at least 640 however it is set):
 * such a line is left to them */
#define MAX_INT_DIGITS 640

static cp scan_number(cp p, cp end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    cp digits = p;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < end && *p >= '0' && *p <= '9') p++; }
    else return NULL;
    if (p - digits > MAX_INT_DIGITS && !(p < end && (*p == '.' || *p == 'e' || *p == 'E'))) return NULL;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

static cp scan_value(cp p, cp end, int depth);

static cp scan_container(cp p, cp end, int depth, unsigned char close) {
    /* p just past '{' or '[' */
    if (depth > MAX_DEPTH) return NULL;
    p = skip_ws(p, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            int esc;
            if (p >= end || *p != '"') return NULL;
            p = scan_string(p + 1, end, &esc);
            if (!p || !(p = colon_then(p, end))) return NULL;
        }
        p = scan_value(p, end, depth + 1);
        if (!p) return NULL;
        p = next_token(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = next_token(p + 1, end); continue; }
        if (*p == close) return p + 1;
        return NULL;
    }
}

static cp scan_value(cp p, cp end, int depth) {
    if (p >= end) return NULL;
    int esc;
    switch (*p) {
    case '"': return scan_string(p + 1, end, &esc);
    case '{': return scan_container(p + 1, end, depth, '}');
    case '[': return scan_container(p + 1, end, depth, ']');
    case 't': return (end - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
    case 'f': return (end - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
    case 'n': return (end - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
    default: return scan_number(p, end);
    }
}

/* ------------------------------------------------------------------------------------- timestamps */

static inline int digits(cp p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

static int64_t days_from_civil(int y, int m, int d) {  /* days since 1970-01-01 (proleptic Gregorian) */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* ``datetime.fromisoformat(s).timestamp()`` for s = YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z, the form the
 * clients write; 0 for any other string (the caller asks parse_ts). Python computes it as whole
 * microseconds divided by 10**6 (both below 2**53: one correctly rounded division), as here. */
static unsigned char iso_date[10];  /* the last date iso_z read (its ten bytes, checked), and its day: a file's */
static int64_t iso_day;  /* lines mostly share one */
static int iso_dated = 0;

static int iso_z(cp s, Py_ssize_t n, double *out) {
    int y, mo, d, h, mi, se, frac = 0;
    if (n != 20 && n != 24 && n != 27) return 0;
    if (s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n - 1] != 'Z') return 0;
    if (!digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se)) return 0;
    if (n > 20) {
        if (s[19] != '.') return 0;
        if (!digits(s + 20, (int)n - 21, &frac)) return 0;
        if (n == 24) frac *= 1000;
    }
    if (h > 23 || mi > 59 || se > 59) return 0;
    int64_t day;
    if (iso_dated && memcmp(s, iso_date, 10) == 0) {
        day = iso_day;
    } else {
        if (s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d)) return 0;
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        if (y < 1 || mo < 1 || mo > 12 || d < 1) return 0;
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (d > mdays[mo - 1] + (mo == 2 && leap)) return 0;
        day = days_from_civil(y, mo, d);
        memcpy(iso_date, s, 10);
        iso_day = day;
        iso_dated = 1;
    }
    int64_t secs = day * 86400 + h * 3600 + mi * 60 + se;
    int64_t us = secs * 1000000 + frac;
    /* Python divides exactly representable ints as doubles; beyond 2**53 (after 2255) it rounds once
     * where this would round twice: such a time is left to parse_ts */
    if (us > (INT64_C(1) << 53) || us < -(INT64_C(1) << 53)) return 0;
    *out = (double)us / 1e6;
    return 1;
}

/* ------------------------------------------------------------------------------------------ Meta */

/* the slots of model.FullEntry, Kinds, Call, Result and Usage (Meta's attachments, Builder, Whole) */
static const char *FULL_SLOTS[] = {"index", "lineno", "offset", "length", "eol", "kind", "type", "id", "parent", "role",
                                   "ts", "obj", "blocks", "_m", "stop", "msg_key", "model", "calls", "results", "nblocks",
                                   "empty", "blank_text", "signed_thinking", "chars", "kinds", "tool_chars", "usage", "extra"};
#define NFULL 28
static const char *KINDS_SLOTS[] = {"text", "thinking", "tool_call", "tool_result", "image", "summary"};
static const char *CALL_SLOTS[] = {"idx", "id", "name", "problem", "chars"};
static const char *RESULT_SLOTS[] = {"idx", "id", "name", "is_error", "chars"};
static const char *USAGE_SLOTS[] = {"input", "output", "cache_read", "cache_write", "total", "placeholder"};
enum { F_INDEX, F_LINENO, F_OFFSET, F_LENGTH, F_EOL, F_KIND, F_TYPE, F_ID, F_PARENT, F_ROLE, F_TS, F_OBJ, F_BLOCKS, F_M,
       F_STOP, F_MSG_KEY, F_MODEL, F_CALLS, F_RESULTS, F_NBLOCKS, F_EMPTY, F_BLANK, F_SIGNED, F_CHARS, F_KINDS,
       F_TOOL_CHARS, F_USAGE, F_EXTRA };


enum { K_TYPE, K_UUID, K_PARENT, K_TS, NKEYS };
static const char *KEYS[NKEYS] = {"type", "uuid", "parentUuid", "timestamp"};
static const Py_ssize_t KEYLEN[NKEYS] = {4, 4, 10, 9};

enum { V_NONE, V_STRING, V_NULL, V_OTHER };

/* the top-level fields of a Claude Code attachment line that formats.claude._attachment reads besides those four */
/* and the other lines it reads whole (prompts, responses, system lines, checkpoints): their values' spans */
enum { A_ATTACHMENT, A_RENDERED, A_ROLE, A_SIDE, A_MESSAGE, A_COMPACT_SUMMARY, A_IS_META, A_API_ERROR, A_REQUEST_ID,
       A_SOURCE, A_SUBTYPE, A_LEAF, A_EXPLICIT, A_ORIGIN, A_COMPANION, NAKEYS };
static const char *AKEYS[NAKEYS] = {"attachment", "rendered", "renderedRole", "isSidechain", "message", "isCompactSummary",
                                    "isMeta", "isApiErrorMessage", "requestId", "sourceToolUseID", "subtype", "leafUuid",
                                    "explicit", "origin", "turnCompanion"};
static const Py_ssize_t AKEYLEN[NAKEYS] = {10, 8, 12, 11, 7, 16, 6, 17, 9, 15, 7, 8, 8, 6, 13};
/* the keys meta_core looks for, by their length: KEYS' k as k, AKEYS' i as NKEYS + i, -1 after the last (at most
 * three a length; filled by index_keys at the module's start). A line's key is compared with those of its length
 * only: it was compared with all seventeen, most of meta_core's own 2,540 instructions on a 1 KB progress line. */
#define MAXKEYLEN 17  /* (key_is compares at most 24 bytes: three words) */
static signed char BYLEN[MAXKEYLEN + 1][4];
static unsigned char FIRST[MAXKEYLEN + 1][4];  /* their first bytes */
static const char *NAMES[NKEYS + NAKEYS];  /* KEYS, then AKEYS */

/* whether the n bytes at a are b's (n at most MAXKEYLEN): a few word loads, overlapping, never past either's n bytes;
 * a call of memcmp cost more than the comparing on these short keys */
static inline int key_is(cp a, const char *b, size_t n) {
    if (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        if (n > 16) {
            memcpy(&x, a + 8, 8);
            memcpy(&y, b + 8, 8);
            if (x != y) return 0;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        if (x != y) return 0;
        memcpy(&x, a + n - 4, 4);
        memcpy(&y, b + n - 4, 4);
        return x == y;
    }
    return memcmp(a, b, n) == 0;
}

static int index_keys(void) {
    memset(BYLEN, -1, sizeof BYLEN);
    for (int k = 0; k < NKEYS + NAKEYS; k++) {
        Py_ssize_t n = k < NKEYS ? KEYLEN[k] : AKEYLEN[k - NKEYS];
        NAMES[k] = k < NKEYS ? KEYS[k] : AKEYS[k - NKEYS];
        if ((Py_ssize_t)strlen(NAMES[k]) != n || n > MAXKEYLEN) return -1;
        int j = 0;
        while (BYLEN[n][j] >= 0) j++;
        if (j >= 3) return -1;
        BYLEN[n][j] = (signed char)k;
        FIRST[n][j] = (unsigned char)NAMES[k][0];
    }
    return 0;
}

/* the line types normalize reads whole that Meta takes (given ``claude``) */
enum { LT_NONE, LT_ATTACHMENT, LT_USER, LT_ASSISTANT, LT_SYSTEM, LT_LAST_PROMPT };
typedef struct ClaudeParts ClaudeParts;
typedef struct PiParts PiParts;
enum { AS_ATTACHMENT, AS_CONTEXT, AS_SIDECHAIN, AS_USER, AS_SYSTEM, AS_SIDE, NAS };
static const char *ASTR[NAS] = {"attachment", "context", "sidechain", "user", "system", "side"};

#define RECENT 64  /* shared_str's slots (a power of two) */
#define RECENT_MAX 128  /* the longest string kept there */
#define LENS 256  /* the_size's slots (a power of two) */

typedef struct {
    PyObject_HEAD
    PyObject *into;      /* the index (list) */
    PyObject *shared;    /* the string table (dict), or None */
    PyObject *sizes;     /* one int object per line length (dict) */
    PyObject *parse_ts;  /* formats.common.parse_ts */
    PyObject *meta;      /* model.META */
    PyObject *eol;       /* b"\n" */
    PyObject *full;      /* the full types: a tuple of bytes */
    PyTypeObject *cls;   /* model.Entry, whose slots are filled here as small_entry fills them */
    PyObject *none;      /* model._NONE: the shared second object */
    Py_ssize_t off[10];  /* the slots' offsets: index, lineno, offset, length, kind, type, id, parent, ts, _m */
    int tuples;          /* append (lineno, offset, length, eol, type, id, parent, ts) tuples, not entries (a helper's part) */
    /* Claude Code's attachment lines, when ``claude`` is given: taken too, their entry made as formats.claude.normalize
     * makes it (a FullEntry; model.entry_to_tuple's tuple with ``tuples``) */
    PyTypeObject *afull, *akinds;  /* model.FullEntry and Kinds, or NULL: attachment lines are declined */
    PyObject *message, *empty, *zero, *s[NAS];
    Py_ssize_t afoff[NFULL], akoff[6];
    int stats;           /* character counts, as the scan's ``stats`` */
    ClaudeParts *cl;     /* what prompts, responses, system lines and checkpoints are read with, or NULL: declined */
    PyObject *recent[RECENT];  /* strings of the table met lately (shared_str), by a hash of their bytes */
    PyObject *lens[LENS];  /* int objects of ``sizes`` met lately (the_size), by their value's low bits */
    /* a lean index (``progress`` given, a model.Progress): a progress line makes no entry, its offset, uuid and parent go
     * to these (its offsets, a bytearray of int64; its uuids and parents, lists) */
    PyObject *p_offsets, *p_ids, *p_parents;
} Meta;

static void claude_parts_free(ClaudeParts *c);
static ClaudeParts *claude_parts(PyObject *d);

static int slot_offsets(PyObject *cls, const char **names, int n, Py_ssize_t *off);

/* dst[k] = the interned str of src[k], for k < n (the old values released): 0, or -1 with an error set */
/* (the tables' strings interned once: a scan makes its Meta, Rows and the like a file, and interning ~40 strings each
 * time was a few microseconds of every small file of a folder) */
#define INTERNED_TABLES 16
#define INTERNED_MAX 64
static struct { const char *src[INTERNED_MAX]; int n; PyObject **strs; } interned_[INTERNED_TABLES];

static int same_names(const char *const *a, const char *const *b, int n) {
    for (int k = 0; k < n; k++)
        if (a[k] != b[k] && strcmp(a[k], b[k]) != 0) return 0;
    return 1;
}

static int intern_all(PyObject **dst, const char *const *src, int n) {
    int slot = 0;
    for (; slot < INTERNED_TABLES && interned_[slot].strs; slot++)
        if (interned_[slot].n == n && same_names(interned_[slot].src, src, n)) {
            for (int k = 0; k < n; k++) Py_XSETREF(dst[k], Py_NewRef(interned_[slot].strs[k]));
            return 0;
        }
    for (int k = 0; k < n; k++) {
        PyObject *u = PyUnicode_InternFromString(src[k]);
        if (!u) return -1;
        Py_XSETREF(dst[k], u);
    }
    if (slot < INTERNED_TABLES && n <= INTERNED_MAX) {  /* kept (the names' pointers copied) for the next time */
        PyObject **strs = PyMem_Malloc(sizeof(PyObject *) * (size_t)(n ? n : 1));
        if (strs) {
            for (int k = 0; k < n; k++) {
                strs[k] = Py_NewRef(dst[k]);
                interned_[slot].src[k] = src[k];
            }
            interned_[slot].n = n;
            interned_[slot].strs = strs;
        }
    }
    return 0;
}

static const char *SLOTS[10] = {"index", "lineno", "offset", "length", "kind", "type", "id", "parent", "ts", "_m"};

static void Meta_dealloc(Meta *self) {
    Py_XDECREF(self->into);
    Py_XDECREF(self->shared);
    Py_XDECREF(self->sizes);
    Py_XDECREF(self->parse_ts);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->eol);
    Py_XDECREF(self->full);
    Py_XDECREF(self->cls);
    Py_XDECREF(self->none);
    Py_XDECREF(self->afull);
    Py_XDECREF(self->akinds);
    Py_XDECREF(self->message);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->zero);
    for (int k = 0; k < NAS; k++) Py_XDECREF(self->s[k]);
    for (int k = 0; k < RECENT; k++) Py_XDECREF(self->recent[k]);
    for (int k = 0; k < LENS; k++) Py_XDECREF(self->lens[k]);
    Py_XDECREF(self->p_offsets);
    Py_XDECREF(self->p_ids);
    Py_XDECREF(self->p_parents);
    claude_parts_free(self->cl);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Meta_init(Meta *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"into", "shared", "sizes", "full_types", "parse_ts", "meta", "cls", "none", "tuples",
                            "stats", "claude", "progress", NULL};
    PyObject *into, *shared, *sizes, *full, *parse_ts, *meta, *cls, *none;
    PyObject *afull = Py_None, *akinds = Py_None, *message = Py_None, *empty = Py_None, *claude = Py_None;
    PyObject *progress = Py_None;
    int tuples = 0, stats = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OO!OOOO!O|p$pOO", names, &PyList_Type, &into, &shared,
                                     &PyDict_Type, &sizes, &full, &parse_ts, &meta, &PyType_Type, &cls, &none,
                                     &tuples, &stats, &claude, &progress))
        return -1;
    Py_CLEAR(self->p_offsets);
    Py_CLEAR(self->p_ids);
    Py_CLEAR(self->p_parents);
    if (progress != Py_None) {  /* a model.Progress: its three containers */
        PyObject *o = PyObject_GetAttrString(progress, "offsets"), *i = PyObject_GetAttrString(progress, "ids"),
                 *q = PyObject_GetAttrString(progress, "parents");
        self->p_offsets = o;
        self->p_ids = i;
        self->p_parents = q;
        if (!o || !i || !q) return -1;
        if (!PyByteArray_CheckExact(o) || !PyList_CheckExact(i) || !PyList_CheckExact(q)) {
            PyErr_SetString(PyExc_TypeError, "progress: offsets a bytearray, ids and parents lists");
            return -1;
        }
    }
    claude_parts_free(self->cl);
    self->cl = NULL;
    for (int k = 0; k < RECENT; k++) Py_CLEAR(self->recent[k]);  /* (of another table) */
    for (int k = 0; k < LENS; k++) Py_CLEAR(self->lens[k]);
    if (claude != Py_None) {  /* the lines normalize reads whole too: what their entries are made of */
        if (!PyDict_Check(claude) || !(afull = PyDict_GetItemString(claude, "full"))
            || !(akinds = PyDict_GetItemString(claude, "kinds")) || !(message = PyDict_GetItemString(claude, "message"))
            || !(empty = PyDict_GetItemString(claude, "empty")) || !PyType_Check(afull) || !PyType_Check(akinds)) {
            PyErr_SetString(PyExc_TypeError, "claude is a dict with full and kinds (classes), message and empty");
            return -1;
        }
        if (!(self->cl = claude_parts(claude))) return -1;
    }
    self->tuples = tuples;
    self->stats = stats;
    if (claude != Py_None) {
        if (slot_offsets(afull, FULL_SLOTS, NFULL, self->afoff) < 0 || slot_offsets(akinds, KINDS_SLOTS, 6, self->akoff) < 0)
            return -1;
        if (intern_all(self->s, ASTR, NAS) < 0) return -1;
        PyObject *zero = PyLong_FromLong(0);
        if (!zero) return -1;
        Py_XSETREF(self->zero, zero);
        Py_XSETREF(self->afull, (PyTypeObject *)Py_NewRef(afull));
        Py_XSETREF(self->akinds, (PyTypeObject *)Py_NewRef(akinds));
        Py_XSETREF(self->message, Py_NewRef(message));
        Py_XSETREF(self->empty, Py_NewRef(empty));
    } else {
        Py_CLEAR(self->afull);
    }
    if (shared != Py_None && !PyDict_CheckExact(shared)) {
        PyErr_SetString(PyExc_TypeError, "shared must be a dict or None");
        return -1;
    }
    /* the entry class's slots, each a member descriptor of one object field: their offsets */
    for (int i = 0; i < 10; i++) {
        PyObject *d = PyObject_GetAttrString(cls, SLOTS[i]);
        if (!d) return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) self->off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s is not a slot", SLOTS[i]);
            return -1;
        }
    }
    if (((PyTypeObject *)cls)->tp_itemsize || ((PyTypeObject *)cls)->tp_dictoffset) {
        PyErr_SetString(PyExc_TypeError, "the entry class must have slots only");
        return -1;
    }
    Py_INCREF(cls); Py_XSETREF(self->cls, (PyTypeObject *)cls);
    Py_INCREF(none); Py_XSETREF(self->none, none);
    PyObject *seq = PySequence_Tuple(full);
    if (!seq) return -1;
    PyObject *enc = PyTuple_New(PyTuple_GET_SIZE(seq));
    if (!enc) { Py_DECREF(seq); return -1; }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *b = PyUnicode_AsUTF8String(PyTuple_GET_ITEM(seq, i));
        if (!b) { Py_DECREF(seq); Py_DECREF(enc); return -1; }
        PyTuple_SET_ITEM(enc, i, b);
    }
    Py_DECREF(seq);
    PyObject *eol = PyBytes_FromStringAndSize("\n", 1);
    if (!eol) { Py_DECREF(enc); return -1; }
    Py_XSETREF(self->full, enc);
    Py_XSETREF(self->eol, eol);
    Py_INCREF(into); Py_XSETREF(self->into, into);
    Py_INCREF(shared); Py_XSETREF(self->shared, shared);
    Py_INCREF(sizes); Py_XSETREF(self->sizes, sizes);
    Py_INCREF(parse_ts); Py_XSETREF(self->parse_ts, parse_ts);
    Py_INCREF(meta); Py_XSETREF(self->meta, meta);
    return 0;
}

static int is_full(Meta *self, cp s, Py_ssize_t n) {
    Py_ssize_t k = PyTuple_GET_SIZE(self->full);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyTuple_GET_ITEM(self->full, i);
        if (PyBytes_GET_SIZE(b) == n && memcmp(PyBytes_AS_STRING(b), s, (size_t)n) == 0) return 1;
    }
    return 0;
}

/* the slot of ``recent`` for these bytes: their length, first and last eight bytes mixed */
static inline unsigned recent_slot(cp s, Py_ssize_t n) {
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
    } else {
        memcpy(&a, s, (size_t)n);
    }
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)n) * 0xFF51AFD7ED558CCDULL;
    return (unsigned)(h >> 58) & (RECENT - 1);
}

/* a str of the n bytes at s (valid UTF-8, checked): made directly when they are ASCII (ids, times), else decoded */
static inline PyObject *str_of(cp s, Py_ssize_t n) {
    if (n >= 2 && n <= 64) {
        unsigned char high = 0;
        for (Py_ssize_t i = 0; i < n; i++) high |= s[i];
        if (high < 0x80) {
            PyObject *u = PyUnicode_New(n, 127);
            if (u) memcpy(PyUnicode_1BYTE_DATA(u), s, (size_t)n);
            return u;
        }
    }
    return PyUnicode_DecodeUTF8((const char *)s, n, NULL);
}

/* The table's string of these bytes (valid UTF-8 checked), added when new: a new reference, or NULL with an error set.
 * A string met lately is found in ``recent`` by comparing bytes (an ASCII str's characters are its UTF-8 bytes), with no
 * str made, hashed and looked up: most of a Claude Code file's lines are progress lines, which name the parent the line
 * before named (97% of them in real files) and the type "progress". */
static PyObject *shared_str(Meta *self, cp s, Py_ssize_t n) {
    if (self->shared == Py_None) return str_of(s, n);  /* no table (a streaming pass keeps nothing) */
    unsigned k = 0;
    if (n <= RECENT_MAX) {
        k = recent_slot(s, n);
        PyObject *c = self->recent[k];
        if (c && PyUnicode_GET_LENGTH(c) == n && memcmp(PyUnicode_1BYTE_DATA(c), s, (size_t)n) == 0)
            return Py_NewRef(c);
    }
    PyObject *u = str_of(s, n);
    if (!u) return NULL;
    PyObject *v = PyDict_SetDefault(self->shared, u, u);
    Py_XINCREF(v);
    Py_DECREF(u);
    if (v && n <= RECENT_MAX && PyUnicode_IS_COMPACT_ASCII(v) && PyUnicode_GET_LENGTH(v) == n)
        Py_XSETREF(self->recent[k], Py_NewRef(v));
    return v;
}

/* ``sizes``' int object for n (added when new): a new reference, or NULL with an error set. One met lately is found in
 * ``lens`` with no int made and looked up: progress lines' lengths repeat. */
static PyObject *the_size(Meta *self, Py_ssize_t n) {
    PyObject **slot = &self->lens[n & (LENS - 1)];
    if (*slot) {
        Py_ssize_t v = PyLong_AsSsize_t(*slot);
        if (v == n) return Py_NewRef(*slot);
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    PyObject *k = PyLong_FromSsize_t(n);
    if (!k) return NULL;
    PyObject *v = PyDict_SetDefault(self->sizes, k, k);
    Py_XINCREF(v);
    Py_DECREF(k);
    if (v) Py_XSETREF(*slot, Py_NewRef(v));
    return v;
}

/* Claude Code's lines that normalize reads whole (_scan_claude.c) */
/* What formats.claude._attachment reads of an attachment line besides type, uuid, parent and timestamp, gathered
 * while the line is checked: ``attachment.type`` when a string; of ``rendered`` (a list), the contents that are
 * non-empty strings (``texts``), their length as JavaScript counts it (``units``: UTF-16 code units, js_len), and
 * whether one is white space only as Python's str.isspace tells (``blank``) or not (``visible``);
 * ``renderedRole`` ("user", else "system": judged) and ``isSidechain`` (``side_seen``: written, true or false).
 * ``odd``: a value read otherwise than here (an escaped role, an isSidechain other than true or false): such a line
 * is declined. */
typedef struct {
    int kind_set;
    cp kind_s, kind_e;
    Py_ssize_t texts;
    long long units;
    int visible, blank, user, role_system, side, side_seen, odd;
    int unsent;  /* data the client drops on load (a file attachment's content no object...): not sent (att_field) */
    cp vs[NAKEYS], ve[NAKEYS];  /* the other fields' values (vs NULL: absent) */
} Att;
static cp att_field(cp p, cp end, int which, Att *a);
static PyObject *att_entry(Meta *self, Att *a, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                           PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts);
static PyObject *claude_entry(Meta *self, int lt, Att *a, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                              PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts);

/* A progress line of a lean index (``Meta.p_offsets``): no entry; its offset, uuid (None where it is no string) and
 * parent (a string, or None: null or absent; meta_core declines a parent of another kind) go to the Progress. 1, or -1
 * with an error set. */
static int lean_progress(Meta *self, cp us, Py_ssize_t un, cp ps, Py_ssize_t pn, PyObject *start) {
    long long at = PyLong_AsLongLong(start);
    if (at == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t n = PyByteArray_GET_SIZE(self->p_offsets);
    if (PyByteArray_Resize(self->p_offsets, n + (Py_ssize_t)sizeof at) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(self->p_offsets) + n, &at, sizeof at);
    PyObject *u = us ? str_of(us, un) : Py_NewRef(Py_None);
    if (!u) return -1;
    int r = PyList_Append(self->p_ids, u);
    Py_DECREF(u);
    if (r < 0) return -1;
    PyObject *p = ps ? shared_str(self, ps, pn) : Py_NewRef(Py_None);
    if (!p) return -1;
    r = PyList_Append(self->p_parents, p);
    Py_DECREF(p);
    return r < 0 ? -1 : 1;
}

/* line(chunk, no, start, prev) -> True when the line's entry was appended to the index, None when the
 * Python loop must read it. ``no``, ``start``: the line number and offset (their int objects are
 * the entry's); ``prev``: the last line number emitted, whose int object is the index when equal. */
#define DECLINE return 0

/* 1: the line's entry was appended; 0: declined; -1: an error is set. */
static int meta_core(Meta *self, cp base, Py_ssize_t len, PyObject *no, PyObject *start, PyObject *prev) {
    if (len < 2 || base[len - 1] != '\n' || base[len - 2] == '\r') DECLINE;
    cp end = base + len - 1;  /* the newline is whitespace: left out */
    cp p = skip_ws(base, end);
    if (p >= end || *p != '{') DECLINE;
    p = skip_ws(p + 1, end);
    cp vs[NKEYS], ve[NKEYS];
    int kind[NKEYS] = {V_NONE, V_NONE, V_NONE, V_NONE};
    int att = LT_NONE, aseen[NAKEYS] = {0};
    Att a = {0};
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            int esc;
            if (p >= end || *p != '"') DECLINE;
            cp ks = p + 1;
            p = scan_string(ks, end, &esc);
            if (!p) DECLINE;
            if (esc) DECLINE;  /* an escaped key could name one of the four */
            Py_ssize_t kn = p - 1 - ks;
            int which = -1, awhich = -1;
            if (kn <= MAXKEYLEN) {
                for (int j = 0; BYLEN[kn][j] >= 0; j++) {
                    int k = BYLEN[kn][j];
                    if (*ks == FIRST[kn][j] && key_is(ks, NAMES[k], (size_t)kn)) {
                        if (k < NKEYS) which = k;
                        else if (self->afull) awhich = k - NKEYS;
                        break;
                    }
                }
            }
            p = colon_then(p, end);
            if (!p || p >= end) DECLINE;
            if (which >= 0) {
                if (kind[which] != V_NONE) DECLINE;  /* written twice */
                if (*p == '"') {
                    cp s = p + 1;
                    p = scan_string(s, end, &esc);
                    if (!p || esc) DECLINE;
                    vs[which] = s;
                    ve[which] = p - 1;
                    kind[which] = V_STRING;
                    if (which == K_TYPE && is_full(self, s, ve[which] - s)) {
                        /* read on below: its fields are gathered as the line is checked */
                        Py_ssize_t tn = ve[which] - s;
                        if (self->afull && tn == 10 && memcmp(s, "attachment", 10) == 0) att = LT_ATTACHMENT;
                        else if (self->cl && tn == 4 && memcmp(s, "user", 4) == 0) att = LT_USER;
                        else if (self->cl && tn == 9 && memcmp(s, "assistant", 9) == 0) att = LT_ASSISTANT;
                        else if (self->cl && tn == 6 && memcmp(s, "system", 6) == 0) att = LT_SYSTEM;
                        else if (self->cl && tn == 11 && memcmp(s, "last-prompt", 11) == 0) att = LT_LAST_PROMPT;
                        else DECLINE;
                    }
                } else if (*p == 'n') {
                    if (end - p < 4 || memcmp(p, "null", 4) != 0) DECLINE;
                    p += 4;
                    kind[which] = V_NULL;
                } else {
                    if (which != K_UUID) DECLINE;  /* a type, parent or timestamp of another kind */
                    p = scan_value(p, end, 1);
                    if (!p) DECLINE;
                    kind[which] = V_OTHER;
                }
            } else if (awhich >= 0) {
                if (aseen[awhich]) DECLINE;  /* written twice */
                aseen[awhich] = 1;
                p = att_field(p, end, awhich, &a);
                if (!p) DECLINE;
            } else {
                p = scan_value(p, end, 1);
                if (!p) DECLINE;
            }
            p = next_token(p, end);
            if (p >= end) DECLINE;
            if (*p == ',') { p = next_token(p + 1, end); continue; }
            if (*p == '}') { p++; break; }
            DECLINE;
        }
    }
    if (skip_ws(p, end) != end) DECLINE;
    if (kind[K_TYPE] != V_STRING) DECLINE;
    if (att == LT_ATTACHMENT && a.odd) DECLINE;
    /* a file attachment with no rendering to send, whose data the client keeps: a picture's the client renders from
     * its data (formats.claude.image_renderings), the Python's to tell */
    if (att == LT_ATTACHMENT && !a.texts && a.kind_set && !a.unsent && a.kind_e - a.kind_s == 4
        && memcmp(a.kind_s, "file", 4) == 0) DECLINE;
    /* a row the client may bridge a lost parent to, whose isSidechain is not true or false (null, absent, another
     * value: a key of its own, formats.claude.side_key) */
    if ((att == LT_USER || att == LT_ASSISTANT || att == LT_SYSTEM) && (a.odd || !a.side_seen)) DECLINE;
    if (att == LT_ATTACHMENT && !a.side_seen) DECLINE;
    if (att == LT_ASSISTANT && kind[K_UUID] != V_STRING) DECLINE;  /* (a falsy uuid is noted: claude_chain.sent_entries) */

    /* the line is valid and a metadata line: its entry */
    PyObject *ty = NULL, *uuid = NULL, *parent = NULL, *ts = NULL, *size = NULL, *index = NULL;
    int res = -1;
    if (self->p_offsets && !att && ve[K_TYPE] - vs[K_TYPE] == 8 && memcmp(vs[K_TYPE], "progress", 8) == 0)
        return lean_progress(self, kind[K_UUID] == V_STRING ? vs[K_UUID] : NULL, ve[K_UUID] - vs[K_UUID],
                             kind[K_PARENT] == V_STRING ? vs[K_PARENT] : NULL, ve[K_PARENT] - vs[K_PARENT], start);
    ty = shared_str(self, vs[K_TYPE], ve[K_TYPE] - vs[K_TYPE]);
    if (!ty) goto done;
    if (kind[K_UUID] == V_STRING) {  /* (an attachment's is shared, as share_strings shares a normalized line's) */
        uuid = att ? shared_str(self, vs[K_UUID], ve[K_UUID] - vs[K_UUID]) : str_of(vs[K_UUID], ve[K_UUID] - vs[K_UUID]);
        if (!uuid) goto done;
    } else {
        uuid = Py_NewRef(Py_None);
    }
    if (kind[K_PARENT] == V_STRING) {
        parent = shared_str(self, vs[K_PARENT], ve[K_PARENT] - vs[K_PARENT]);
        if (!parent) goto done;
    } else {
        parent = Py_NewRef(Py_None);
    }
    if (kind[K_TS] == V_STRING) {
        double t;
        Py_ssize_t tn = ve[K_TS] - vs[K_TS];
        if (iso_z(vs[K_TS], tn, &t)) {
            ts = PyFloat_FromDouble(t);
        } else {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)vs[K_TS], tn, NULL);
            if (!s) goto done;
            ts = PyObject_CallOneArg(self->parse_ts, s);
            Py_DECREF(s);
        }
        if (!ts) goto done;
    } else {
        ts = Py_NewRef(Py_None);
    }
    size = the_size(self, len - 1);
    if (!size) goto done;
    if (self->tuples && !att) {  /* a helper's part: the tuple its parent makes the entry of (parallel._built) */
        PyObject *tup = PyTuple_Pack(8, no, start, size, self->eol, ty, uuid, parent, ts);
        if (!tup) goto done;
        int r = PyList_Append(self->into, tup);
        Py_DECREF(tup);
        if (r < 0) goto done;
        res = 1;
        goto done;
    }
    Py_ssize_t count = PyList_GET_SIZE(self->into);
    if (prev && PyLong_CheckExact(prev) && PyLong_AsSsize_t(prev) == count) {
        index = Py_NewRef(prev);
    } else {
        if (PyErr_Occurred()) PyErr_Clear();
        index = PyLong_FromSsize_t(count);
        if (!index) goto done;
    }
    if (att) {
        PyObject *e = att == LT_ATTACHMENT ? att_entry(self, &a, index, no, start, size, ty, uuid, parent, ts)
                                           : claude_entry(self, att, &a, index, no, start, size, ty, uuid, parent, ts);
        if (!e) goto done;
        if (e == Py_None) {  /* declined: nothing was changed */
            Py_DECREF(e);
            res = 0;
            goto done;
        }
        int r = PyList_Append(self->into, e);
        Py_DECREF(e);
        if (r < 0) goto done;
        res = 1;
        goto done;
    }
    {
        /* object.__new__(Entry) and its slots, as model.small_entry sets them (the line ending is "\n") */
        PyObject *e = self->cls->tp_alloc(self->cls, 0);
        if (!e) goto done;
        PyObject *vals[10] = {index, no, start, size, self->meta, ty, uuid, parent, ts, self->none};
        for (int i = 0; i < 10; i++) *(PyObject **)((char *)e + self->off[i]) = Py_NewRef(vals[i]);
        int r = PyList_Append(self->into, e);
        Py_DECREF(e);
        if (r < 0) goto done;
    }
    res = 1;
done:
    Py_XDECREF(ty);
    Py_XDECREF(uuid);
    Py_XDECREF(parent);
    Py_XDECREF(ts);
    Py_XDECREF(size);
    Py_XDECREF(index);
    return res;
}

static PyObject *Meta_line(Meta *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "line(chunk: bytes, no, start, prev)");
        return NULL;
    }
    int r = meta_core(self, (cp)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]), args[1], args[2],
                      args[3] == Py_None ? NULL : args[3]);
    if (r < 0) return NULL;
    if (r) Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

/* valid(data) -> whether data is one JSON value (whitespace around it), as this module checks it:
 * for the tests, which compare it with orjson and Python's json. */
/* nontext(data) -> how many of its bytes are no text: below 9, 14 to 31, or 127 (transcript._check_binary's test,
 * which bytes.translate made at 12 instructions a byte: 5% of a small file's estimate; 16 bytes at a time here) */
static PyObject *nontext(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = view.buf;
    Py_ssize_t n = view.len, count = 0;
#if defined(__SSE2__) && defined(__GNUC__)
    /* 16 at a time: every such byte is below 128 (a signed compare's negatives are the bytes from 128 up) */
    const __m128i nine = _mm_set1_epi8(9), thirteen = _mm_set1_epi8(13);
    const __m128i space = _mm_set1_epi8(32), del = _mm_set1_epi8(127);
    for (; n >= 16; p += 16, n -= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i ascii = _mm_cmpgt_epi8(x, _mm_set1_epi8(-1));
        __m128i low = _mm_and_si128(_mm_cmplt_epi8(x, nine), ascii);
        __m128i ctl = _mm_and_si128(_mm_cmpgt_epi8(x, thirteen), _mm_cmplt_epi8(x, space));
        __m128i m = _mm_or_si128(_mm_or_si128(low, ctl), _mm_cmpeq_epi8(x, del));
        count += __builtin_popcount((unsigned)_mm_movemask_epi8(m));
    }
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        count += c < 9 || (c > 13 && c < 32) || c == 127;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(count);
}

static PyObject *valid(PyObject *mod, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    cp s = b.buf, end = s + b.len;
    cp p = scan_value(skip_ws(s, end), end, 0);
    int ok = p && skip_ws(p, end) == end;
    PyBuffer_Release(&b);
    return PyBool_FromLong(ok);
}

static PyObject *iso_ts(PyObject *mod, PyObject *arg) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (!s) return NULL;
    double t;
    if (!iso_z((cp)s, n, &t)) Py_RETURN_NONE;
    return PyFloat_FromDouble(t);
}

static PyMethodDef Meta_methods[] = {
    {"line", (PyCFunction)(void (*)(void))Meta_line, METH_FASTCALL, "Append a metadata line's entry, or None."},
    {NULL},
};

static PyTypeObject MetaType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Meta",
    .tp_basicsize = sizeof(Meta),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Meta_init,
    .tp_dealloc = (destructor)Meta_dealloc,
    .tp_methods = Meta_methods,
    .tp_doc = "Meta(into, shared, sizes, full_types, parse_ts, meta, cls, none, tuples=False, *, stats, claude): the scan's "
              "metadata lines in C, and with claude (a dict: model's classes and formats.common's helpers) Claude Code's "
              "other lines.",
};


/* --------------------------------------------------------------------------------------- Builder */

/* Builder(full_cls, entry_cls, meta, none, small_entry, call, result, kinds, usage, empty): the entries of a
 * helper's part made from the tuples it sent (parallel._built), as model.small_entry and model.entry_from_tuple
 * make them. build(part, out, i, line_shift, sizes) appends each tuple's entry to ``out`` (index ``i`` on, line
 * numbers moved by ``line_shift``), sets the tuple's place in ``part`` to None once its entry is made, and
 * returns the index after the last. */

typedef struct {
    PyObject_HEAD
    PyTypeObject *full, *small;
    PyObject *meta, *none, *small_entry, *call, *result, *kinds, *usage, *empty, *one;
    Py_ssize_t foff[NFULL];
    Py_ssize_t soff[10];
    Py_ssize_t koff[6], coff[5], roff[5], uoff[6];  /* Kinds', Call's, Result's and Usage's slots */
} Builder;

static void Builder_dealloc(Builder *self) {
    Py_XDECREF(self->full);
    Py_XDECREF(self->small);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->none);
    Py_XDECREF(self->small_entry);
    Py_XDECREF(self->call);
    Py_XDECREF(self->result);
    Py_XDECREF(self->kinds);
    Py_XDECREF(self->usage);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->one);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* (each class's offsets found once: ~60 attribute lookups were made for every small file's scan) */
#define SLOT_TABLES 32
#define SLOT_NAMES_MAX 40
static struct { PyObject *cls; const char *names[SLOT_NAMES_MAX]; int n; Py_ssize_t off[SLOT_NAMES_MAX]; } slots_[SLOT_TABLES];

static int slot_offsets_found(PyObject *cls, const char **names, int n, Py_ssize_t *off);

static int slot_offsets(PyObject *cls, const char **names, int n, Py_ssize_t *off) {
    int slot = 0;
    for (; slot < SLOT_TABLES && slots_[slot].cls; slot++)
        if (slots_[slot].cls == cls && slots_[slot].n == n
            && same_names(slots_[slot].names, (const char *const *)names, n)) {
            memcpy(off, slots_[slot].off, sizeof(Py_ssize_t) * (size_t)n);
            return 0;
        }
    if (slot_offsets_found(cls, names, n, off) < 0) return -1;
    if (slot < SLOT_TABLES && n <= SLOT_NAMES_MAX) {  /* (the class held: its address stays its own) */
        slots_[slot].cls = Py_NewRef(cls);
        for (int k = 0; k < n; k++) slots_[slot].names[k] = names[k];  /* (copied: a caller's table may be its own) */
        slots_[slot].n = n;
        memcpy(slots_[slot].off, off, sizeof(Py_ssize_t) * (size_t)n);
    }
    return 0;
}

static int slot_offsets_found(PyObject *cls, const char **names, int n, Py_ssize_t *off) {
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString(cls, names[i]);
        if (!d) return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s is not a slot", names[i]);
            return -1;
        }
    }
    if (((PyTypeObject *)cls)->tp_itemsize || ((PyTypeObject *)cls)->tp_dictoffset) {
        PyErr_SetString(PyExc_TypeError, "the entry class must have slots only");
        return -1;
    }
    return 0;
}

static int Builder_init(Builder *self, PyObject *args, PyObject *kw) {
    PyObject *full, *small, *meta, *none, *small_entry, *call, *result, *kinds, *usage, *empty;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOOO", &PyType_Type, &full, &PyType_Type, &small, &meta, &none, &small_entry,
                          &call, &result, &kinds, &usage, &empty))
        return -1;
    if (slot_offsets(full, FULL_SLOTS, NFULL, self->foff) < 0 || slot_offsets(small, SLOTS, 10, self->soff) < 0) return -1;
    if (!PyType_Check(call) || !PyType_Check(result) || !PyType_Check(kinds) || !PyType_Check(usage)) {
        PyErr_SetString(PyExc_TypeError, "call, result, kinds and usage are classes");
        return -1;
    }
    if (slot_offsets(kinds, KINDS_SLOTS, 6, self->koff) < 0 || slot_offsets(call, CALL_SLOTS, 5, self->coff) < 0
        || slot_offsets(result, RESULT_SLOTS, 5, self->roff) < 0 || slot_offsets(usage, USAGE_SLOTS, 6, self->uoff) < 0)
        return -1;
    PyObject *one = PyLong_FromLong(1);
    if (!one) return -1;
    Py_XSETREF(self->one, one);
    Py_XSETREF(self->full, (PyTypeObject *)Py_NewRef(full));
    Py_XSETREF(self->small, (PyTypeObject *)Py_NewRef(small));
    Py_XSETREF(self->meta, Py_NewRef(meta));
    Py_XSETREF(self->none, Py_NewRef(none));
    Py_XSETREF(self->small_entry, Py_NewRef(small_entry));
    Py_XSETREF(self->call, Py_NewRef(call));
    Py_XSETREF(self->result, Py_NewRef(result));
    Py_XSETREF(self->kinds, Py_NewRef(kinds));
    Py_XSETREF(self->usage, Py_NewRef(usage));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    return 0;
}

/* cls(*t) for a slotted class whose ``n`` slots (offsets ``off``) its __init__ sets from its arguments in order
 * (Kinds, and the slotted dataclasses Call, Result, Usage), made through its slots when t gives them all */
static PyObject *from_slots(PyObject *cls, const Py_ssize_t *off, int n, PyObject *t) {
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != n) return PyObject_Call(cls, t, NULL);
    PyObject *o = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (!o) return NULL;
    for (int k = 0; k < n; k++) *(PyObject **)((char *)o + off[k]) = Py_NewRef(PyTuple_GET_ITEM(t, k));
    return o;
}

/* a tuple of cls(*t) for each tuple t of ``items`` (Call, Result); () when items is None or empty */
static PyObject *objects(PyObject *cls, const Py_ssize_t *off, PyObject *items) {
    if (items == Py_None || (PyTuple_Check(items) && PyTuple_GET_SIZE(items) == 0)) return PyTuple_New(0);
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "calls and results are tuples");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = from_slots(cls, off, 5, PyTuple_GET_ITEM(items, k));
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, o);
    }
    return out;
}

/* cls(*t) (from_slots), or ``otherwise`` when t is None */
static PyObject *made_or(PyObject *cls, const Py_ssize_t *off, int n, PyObject *t, PyObject *otherwise) {
    if (t == Py_None) return Py_NewRef(otherwise);
    return from_slots(cls, off, n, t);
}

static PyObject *full_from(Builder *self, PyObject *t, PyObject *index, PyObject *lineno) {
    PyObject **v = &PyTuple_GET_ITEM(t, 0);  /* entry_from_tuple's order */
    PyObject *calls = objects(self->call, self->coff, v[14]);
    if (!calls) return NULL;
    PyObject *results = objects(self->result, self->roff, v[15]);
    if (!results) { Py_DECREF(calls); return NULL; }
    PyObject *kinds = made_or(self->kinds, self->koff, 6, v[21], self->empty);
    if (!kinds) { Py_DECREF(calls); Py_DECREF(results); return NULL; }
    PyObject *usage = made_or(self->usage, self->uoff, 6, v[23], Py_None);
    if (!usage) { Py_DECREF(calls); Py_DECREF(results); Py_DECREF(kinds); return NULL; }
    PyObject *e = self->full->tp_alloc(self->full, 0);
    if (!e) { Py_DECREF(calls); Py_DECREF(results); Py_DECREF(kinds); Py_DECREF(usage); return NULL; }
    PyObject *vals[NFULL];
    vals[F_INDEX] = index; vals[F_LINENO] = lineno; vals[F_OFFSET] = v[2]; vals[F_LENGTH] = v[3]; vals[F_EOL] = v[4];
    vals[F_KIND] = v[5]; vals[F_TYPE] = v[6]; vals[F_ID] = v[7]; vals[F_PARENT] = v[8]; vals[F_ROLE] = v[9];
    vals[F_STOP] = v[10]; vals[F_MSG_KEY] = v[11]; vals[F_TS] = v[12]; vals[F_MODEL] = v[13];
    vals[F_OBJ] = vals[F_BLOCKS] = vals[F_M] = Py_None;
    vals[F_NBLOCKS] = v[16]; vals[F_EMPTY] = v[17]; vals[F_BLANK] = v[18]; vals[F_SIGNED] = v[19]; vals[F_CHARS] = v[20];
    vals[F_TOOL_CHARS] = v[22] == Py_None ? self->empty : v[22];
    vals[F_EXTRA] = v[24];
    for (int k = 0; k < NFULL; k++) {
        if (k == F_CALLS || k == F_RESULTS || k == F_KINDS || k == F_USAGE) continue;
        *(PyObject **)((char *)e + self->foff[k]) = Py_NewRef(vals[k]);
    }
    *(PyObject **)((char *)e + self->foff[F_CALLS]) = calls;
    *(PyObject **)((char *)e + self->foff[F_RESULTS]) = results;
    *(PyObject **)((char *)e + self->foff[F_KINDS]) = kinds;
    *(PyObject **)((char *)e + self->foff[F_USAGE]) = usage;
    return e;
}

static PyObject *Builder_build(Builder *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyLong_CheckExact(args[2])
        || !PyLong_CheckExact(args[3]) || !PyDict_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "build(part: list, out: list, i: int, line_shift: int, sizes: dict)");
        return NULL;
    }
    PyObject *part = args[0], *out = args[1], *line_shift = args[3], *sizes = args[4];
    PyObject *i = Py_NewRef(args[2]);
    long long shift = PyLong_AsLongLong(line_shift);
    if (shift == -1 && PyErr_Occurred()) { Py_DECREF(i); return NULL; }
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(part); j++) {
        PyObject *t = PyList_GET_ITEM(part, j);
        Py_ssize_t n = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : -1;
        if (n != 8 && n != 25) {
            PyErr_SetString(PyExc_ValueError, "not an entry tuple");
            Py_DECREF(i);
            return NULL;
        }
        PyObject *no = PyTuple_GET_ITEM(t, n == 8 ? 0 : 1);
        PyObject *lineno = shift ? PyNumber_Add(no, line_shift) : Py_NewRef(no);
        if (!lineno) { Py_DECREF(i); return NULL; }
        PyObject *e;
        PyObject *eol = n == 8 ? PyTuple_GET_ITEM(t, 3) : NULL;
        if (n == 8 && PyBytes_CheckExact(eol) && PyBytes_GET_SIZE(eol) == 1 && PyBytes_AS_STRING(eol)[0] == '\n') {
            /* model.small_entry, its common case: the line ending "\n" (the helper's own b"\n") */
            PyObject *length = PyTuple_GET_ITEM(t, 2);
            PyObject *size = PyDict_SetDefault(sizes, length, length);
            e = size ? self->small->tp_alloc(self->small, 0) : NULL;
            if (e) {
                PyObject *vals[10] = {i, lineno, PyTuple_GET_ITEM(t, 1), size, self->meta, PyTuple_GET_ITEM(t, 4),
                                      PyTuple_GET_ITEM(t, 5), PyTuple_GET_ITEM(t, 6), PyTuple_GET_ITEM(t, 7), self->none};
                for (int k = 0; k < 10; k++) *(PyObject **)((char *)e + self->soff[k]) = Py_NewRef(vals[k]);
            }
        } else if (n == 8) {  /* another line ending: small_entry itself (it gives the entry a second object) */
            PyObject *length = PyTuple_GET_ITEM(t, 2);
            PyObject *size = PyDict_SetDefault(sizes, length, length);
            PyObject *a[10] = {i, lineno, PyTuple_GET_ITEM(t, 1), size, PyTuple_GET_ITEM(t, 3), self->meta,
                               PyTuple_GET_ITEM(t, 4), PyTuple_GET_ITEM(t, 5), PyTuple_GET_ITEM(t, 6), PyTuple_GET_ITEM(t, 7)};
            e = size ? PyObject_Vectorcall(self->small_entry, a, 10, NULL) : NULL;
        } else {
            e = full_from(self, t, i, lineno);
        }
        if (!e) { Py_DECREF(lineno); Py_DECREF(i); return NULL; }
        int r = PyList_Append(out, e);
        Py_DECREF(e);
        if (r < 0) { Py_DECREF(lineno); Py_DECREF(i); return NULL; }
        PyList_SetItem(part, j, Py_NewRef(Py_None));  /* the tuple freed once its entry is made */
        /* one int object for this line number and the next index (parallel._built) */
        PyObject *next = PyNumber_Add(i, self->one);
        if (!next) { Py_DECREF(lineno); Py_DECREF(i); return NULL; }
        int same = PyObject_RichCompareBool(lineno, next, Py_EQ);
        if (same < 0) { Py_DECREF(next); Py_DECREF(lineno); Py_DECREF(i); return NULL; }
        Py_DECREF(i);
        if (same) {
            Py_DECREF(next);
            i = lineno;
        } else {
            Py_DECREF(lineno);
            i = next;
        }
    }
    return i;
}

static PyMethodDef Builder_methods[] = {
    {"build", (PyCFunction)(void (*)(void))Builder_build, METH_FASTCALL, "Append the entries of a part's tuples."},
    {NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Builder",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_methods = Builder_methods,
    .tp_doc = "Builder(full_cls, entry_cls, meta, none, small_entry, call, result, kinds, usage, empty): a part's entries from its tuples.",
};


#include "_scan_entry.c"
#include "_scan_codex.c"
#include "_scan_claude.c"
#include "_scan_pi.c"

/* ------------------------------------------------------------------------------------------ Rows */

/* Rows(entry_cls, full_cls, more_cls, plain, boundary, message): passes over the whole index, in C (each a
 * loop over every entry that reads a slot or two): claude_chain's two, and repair's two below.
 *   rows(entries, row_types, bridged_types, into) -> (n, odd, boundaries, checkpoints): what chain's first
 *     loop gathers: ``into[e.id] = e`` for each entry with an id whose type is a row type (n of them), the
 *     entries without an id of a bridged type (odd), the row entries of kind ``boundary`` (in file order),
 *     and whether a "last-prompt" line was met;
 *   main(entries) -> claude_chain.main_entries(entries);
 *   kept(main, start, early, rows) -> the entries sent_entries goes on with (Rows_kept). */
typedef struct {
    PyObject_HEAD
    PyTypeObject *entry, *full, *more;
    PyObject *plain, *boundary, *message, *last_prompt, *sidechain, *malformed, *progress;
    Py_ssize_t e_id, e_type, e_kind, e_m, e_parent, e_offset, f_extra, m_extra;
    Py_ssize_t f_calls, f_results, f_role, f_model, f_usage, f_obj, f_index, c_id, c_name;  /* for facts */
    PyObject *meta, *compaction, *assistant, *synthetic, *unknown, *ignored, *context_window, *model, *seen;
    PyTypeObject *call;
    /* sent and tally (``_scan_tally.c``): FullEntry's and Kinds' slots, Kinds (NULL: not given to Rows) */
    Py_ssize_t f_empty, f_stop, f_chars, f_msg_key, f_kinds, f_tool_chars, k_off[6];
    Py_ssize_t f_nblocks, f_blank_text, c_problem;  /* (validate: _scan_validate.c) */
    PyObject *no_content, *bad_blocks, *context_key, *content_not_list;
    PyTypeObject *kinds_cls, *result_cls;
    Py_ssize_t r_id, r_name;
    Py_ssize_t f_lineno, c_idx, r_idx;  /* (pair: _scan_pair.c) */
    PyObject *rename_calls, *rename_results, *reused_id, *rewritten;
    PyObject *call_word, *result_word, *no_role;
    PyObject *user, *tool_result_role, *compact_summary, *calls_key, *results_key, *call_tokens, *result_tokens,
        *kind_names[6];
    PyObject *w_input, *w_cache_read, *w_cache_write, *w_peaks, *w_last_model, *w_lineno;  /* (facts: add_assistant) */
} Rows;

static void Rows_dealloc(Rows *self) {
    Py_XDECREF(self->entry);
    Py_XDECREF(self->full);
    Py_XDECREF(self->more);
    Py_XDECREF(self->plain);
    Py_XDECREF(self->boundary);
    Py_XDECREF(self->message);
    Py_XDECREF(self->last_prompt);
    Py_XDECREF(self->progress);
    Py_XDECREF(self->sidechain);
    Py_XDECREF(self->malformed);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->compaction);
    Py_XDECREF(self->assistant);
    Py_XDECREF(self->synthetic);
    Py_XDECREF(self->unknown);
    Py_XDECREF(self->ignored);
    Py_XDECREF(self->context_window);
    Py_XDECREF(self->model);
    Py_XDECREF(self->seen);
    Py_XDECREF(self->call);
    Py_XDECREF(self->kinds_cls);
    Py_XDECREF(self->result_cls);
    Py_XDECREF(self->call_word);
    Py_XDECREF(self->result_word);
    Py_XDECREF(self->no_role);
    Py_XDECREF(self->no_content);
    Py_XDECREF(self->bad_blocks);
    Py_XDECREF(self->content_not_list);
    Py_XDECREF(self->context_key);
    Py_XDECREF(self->user);
    Py_XDECREF(self->tool_result_role);
    Py_XDECREF(self->compact_summary);
    Py_XDECREF(self->calls_key);
    Py_XDECREF(self->results_key);
    Py_XDECREF(self->call_tokens);
    Py_XDECREF(self->result_tokens);
    Py_XDECREF(self->rename_calls);
    Py_XDECREF(self->rename_results);
    Py_XDECREF(self->reused_id);
    Py_XDECREF(self->rewritten);
    for (int k = 0; k < 6; k++) Py_XDECREF(self->kind_names[k]);
    Py_XDECREF(self->w_input);
    Py_XDECREF(self->w_cache_read);
    Py_XDECREF(self->w_cache_write);
    Py_XDECREF(self->w_peaks);
    Py_XDECREF(self->w_last_model);
    Py_XDECREF(self->w_lineno);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tally_init(Rows *self, PyObject *full, PyObject *kinds, PyObject *result);

static int Rows_init(Rows *self, PyObject *args, PyObject *kw) {
    PyObject *entry, *full, *more, *plain, *boundary, *message, *meta, *compaction, *call, *kinds = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O!OUUUUO!|O!O!", &PyType_Type, &entry, &PyType_Type, &full, &PyType_Type, &more,
                          &plain, &boundary, &message, &meta, &compaction, &PyType_Type, &call, &PyType_Type, &kinds,
                          &PyType_Type, &result))
        return -1;
    static const char *F[] = {"calls", "results", "role", "model", "usage", "obj", "index"};
    static const char *C[] = {"id", "name"};
    Py_ssize_t ff[7], cc[2];
    if (slot_offsets(full, F, 7, ff) < 0 || slot_offsets(call, C, 2, cc) < 0) return -1;
    self->f_calls = ff[0]; self->f_results = ff[1]; self->f_role = ff[2]; self->f_model = ff[3]; self->f_usage = ff[4];
    self->f_obj = ff[5]; self->f_index = ff[6]; self->c_id = cc[0]; self->c_name = cc[1];
    Py_XSETREF(self->meta, Py_NewRef(meta));
    Py_XSETREF(self->compaction, Py_NewRef(compaction));
    Py_XSETREF(self->call, (PyTypeObject *)Py_NewRef(call));
    const char *words[] = {"assistant", "<synthetic>", "unknown", "ignored", "context_window", "model", "seen",
                           "input", "cache_read", "cache_write", "peaks", "last_model", "lineno"};
    PyObject **into[] = {&self->assistant, &self->synthetic, &self->unknown, &self->ignored, &self->context_window,
                         &self->model, &self->seen, &self->w_input, &self->w_cache_read, &self->w_cache_write,
                         &self->w_peaks, &self->w_last_model, &self->w_lineno};
    for (int k = 0; k < 13; k++) {
        PyObject *w = PyUnicode_InternFromString(words[k]);
        if (!w) return -1;
        Py_XSETREF(*into[k], w);
    }
    static const char *E[] = {"id", "type", "kind", "_m", "parent", "offset"};
    static const char *X[] = {"extra"};
    Py_ssize_t eo[6], fo[1], mo[1];
    if (slot_offsets(entry, E, 6, eo) < 0 || slot_offsets(full, X, 1, fo) < 0 || slot_offsets(more, X, 1, mo) < 0) return -1;
    if (!PyType_IsSubtype((PyTypeObject *)full, (PyTypeObject *)entry)) {
        PyErr_SetString(PyExc_TypeError, "the full entry class must be an entry class");
        return -1;
    }
    self->e_id = eo[0]; self->e_type = eo[1]; self->e_kind = eo[2]; self->e_m = eo[3]; self->e_parent = eo[4];
    self->e_offset = eo[5];
    self->f_extra = fo[0]; self->m_extra = mo[0];
    Py_XSETREF(self->entry, (PyTypeObject *)Py_NewRef(entry));
    Py_XSETREF(self->full, (PyTypeObject *)Py_NewRef(full));
    Py_XSETREF(self->more, (PyTypeObject *)Py_NewRef(more));
    Py_XSETREF(self->plain, Py_NewRef(plain));
    Py_XSETREF(self->boundary, Py_NewRef(boundary));
    Py_XSETREF(self->message, Py_NewRef(message));
    Py_XSETREF(self->last_prompt, PyUnicode_InternFromString("last-prompt"));
    Py_XSETREF(self->progress, PyUnicode_InternFromString("progress"));
    Py_XSETREF(self->sidechain, PyUnicode_InternFromString("sidechain"));
    Py_XSETREF(self->malformed, PyUnicode_InternFromString("malformed"));
    if (!self->last_prompt || !self->progress || !self->sidechain || !self->malformed) return -1;
    if (kinds && (!result || tally_init(self, full, kinds, result) < 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Rows: the Kinds class goes with the Result class");
        return -1;
    }
    return 0;
}

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* whether ``e`` is an entry whose slots this reads (the two classes, exactly) */
static int known(Rows *self, PyObject *e) {
    return Py_IS_TYPE(e, self->entry) || Py_IS_TYPE(e, self->full);
}

/* list[k] (borrowed) when it is an entry whose slots this reads; NULL with a TypeError set when not */
static PyObject *entry_at(Rows *self, PyObject *list, Py_ssize_t k) {
    PyObject *e = PyList_GET_ITEM(list, k);
    if (known(self, e)) return e;
    PyErr_SetString(PyExc_TypeError, "not an entry");
    return NULL;
}

/* a str equal to ``s`` (identity first: the index shares its strings) */
static int same_str(PyObject *a, PyObject *s) {
    if (a == s) return 1;
    if (!a || !PyUnicode_CheckExact(a)) return 0;
    /* equal strs have the same length and the same (narrowest) kind */
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return n == PyUnicode_GET_LENGTH(s) && kind == PyUnicode_KIND(s)
           && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(s), (size_t)n * kind) == 0;
}

/* e.extra (borrowed; NULL with an error set when ``e`` is no entry) */
static PyObject *extra_of(Rows *self, PyObject *e) {
    if (Py_IS_TYPE(e, self->full)) {
        PyObject *x = SLOT(e, self->f_extra);
        return x ? x : Py_None;
    }
    if (Py_IS_TYPE(e, self->entry)) {
        PyObject *m = SLOT(e, self->e_m);
        if (m == self->plain) return Py_None;
        if (!m || !Py_IS_TYPE(m, self->more)) {
            PyErr_SetString(PyExc_TypeError, "an entry's second object is of another class");
            return NULL;
        }
        PyObject *x = SLOT(m, self->m_extra);
        return x ? x : Py_None;
    }
    PyErr_SetString(PyExc_TypeError, "not an entry");
    return NULL;
}

/* e.extra holds ``key`` with a truthy value (``e.extra and e.extra.get(key)``); -1 on error */
static int extra_flag(Rows *self, PyObject *e, PyObject *key) {
    PyObject *x = extra_of(self, e);
    if (!x) return -1;
    if (x == Py_None) return 0;
    if (!PyDict_Check(x)) {  /* .get() of another mapping: the Python way */
        int t = PyObject_IsTrue(x);
        if (t <= 0) return t;
        PyObject *v = PyObject_CallMethod(x, "get", "O", key);
        if (!v) return -1;
        int r = PyObject_IsTrue(v);
        Py_DECREF(v);
        return r;
    }
    PyObject *v = PyDict_GetItemWithError(x, key);
    if (!v) return PyErr_Occurred() ? -1 : 0;
    return PyObject_IsTrue(v);
}

static int sidechain(Rows *self, PyObject *e) {
    return extra_flag(self, e, self->sidechain);
}

/* What the client's map of progress lines (``links``, or NULL: none read yet) holds for parent ``p``: a borrowed
 * reference, or NULL (with an error set where the lookup failed). Only a string JavaScript takes for true is looked
 * up; a parent that is no string (its mark, in ``not_links``) never is. */
static PyObject *past_progress(PyObject *links, PyObject *p, PyObject *not_links) {
    if (!links || !p || !PyUnicode_CheckExact(p) || !PyUnicode_GET_LENGTH(p)) return NULL;
    PyObject *to = PyDict_GetItemWithError(links, p);
    if (!to) return NULL;
    int r = PySet_Contains(not_links, p);
    return r == 0 ? to : NULL;  /* (r < 0: the error is set) */
}

/* A row's parent as the client reads it after its splice of progress lines (``claude_chain.chain``), put in
 * ``spliced`` under ``key`` (its uuid, or the row itself) where the map re-links it; a row written again that is not
 * re-linked takes its earlier line's out. 0, or -1 with an error set. */
static int splice_row(PyObject *key, PyObject *p, PyObject *links, PyObject *not_links, PyObject *spliced, int again) {
    PyObject *to = past_progress(links, p, not_links);
    if (to) return PyDict_SetItem(spliced, key, to);
    if (PyErr_Occurred()) return -1;
    if (again && PyDict_GET_SIZE(spliced) && PyDict_DelItem(spliced, key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
        PyErr_Clear();
    }
    return 0;
}

/* A progress line read into the client's map of them (``links``, made on first need): uuid -> the parent it names, or
 * what the map holds for that parent. 0, or -1 with an error set. */
static int read_progress(PyObject **links, PyObject *id, PyObject *p, PyObject *not_links) {
    PyObject *to = past_progress(*links, p, not_links);
    if (!to && PyErr_Occurred()) return -1;
    if (!*links && !(*links = PyDict_New())) return -1;
    return PyDict_SetItem(*links, id, to ? to : p);
}

/* rows(entries, row_types, into, spliced, not_links[, progress]) -> (n, odd, bounds, checkpoints): claude_chain.chain's
 * first loop. Rows (a line of a type in ``row_types``) go into ``into`` by uuid, those whose uuid is None into ``odd``;
 * progress lines are no rows: each is read into the client's map of them, which gives ``spliced`` the rows it
 * re-links. ``progress``: the progress lines the index made no entry of (``model.Progress``: their offsets, a
 * buffer of int64, their uuids and their parents), read in file order among the entries. */
static PyObject *Rows_rows(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 5 && nargs != 8) || !PyList_Check(args[0]) || !PyAnySet_Check(args[1]) || !PyDict_Check(args[2])
        || !PyDict_Check(args[3]) || !PyAnySet_Check(args[4])
        || (nargs == 8 && (!PyList_Check(args[6]) || !PyList_Check(args[7])))) {
        PyErr_SetString(PyExc_TypeError, "rows(entries: list, row_types: set, into: dict, spliced: dict, not_links: set"
                                         "[, offsets: buffer, ids: list, parents: list])");
        return NULL;
    }
    PyObject *entries = args[0], *row_types = args[1], *into = args[2], *spliced = args[3], *not_links = args[4];
    PyObject *odd = NULL, *bounds = NULL, *links = NULL;
    Py_buffer lines = {0};  /* (the progress lines' offsets) */
    Py_ssize_t np = 0, j = 0;  /* the progress lines given, and the next one to read */
    const long long *at = NULL;
    if (nargs == 8) {
        if (PyObject_GetBuffer(args[5], &lines, PyBUF_SIMPLE) < 0) return NULL;
        np = lines.len / (Py_ssize_t)sizeof(long long);
        at = (const long long *)lines.buf;
        if (PyList_GET_SIZE(args[6]) != np || PyList_GET_SIZE(args[7]) != np) {
            PyErr_SetString(PyExc_ValueError, "rows: as many progress lines' uuids and parents as offsets");
            goto fail;
        }
    }
    odd = PyList_New(0);
    bounds = PyList_New(0);
    if (!odd || !bounds) goto fail;
    Py_ssize_t n = 0;
    int checkpoints = 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(entries); k++) {
        PyObject *e = entry_at(self, entries, k);
        if (!e) goto fail;
        PyObject *id = SLOT(e, self->e_id), *ty = SLOT(e, self->e_type), *p = SLOT(e, self->e_parent);
        if (!id || !ty || !p) {
            PyErr_SetString(PyExc_AttributeError, "an entry's id, type or parent is not set");
            goto fail;
        }
        if (j < np) {  /* the progress lines written before this one */
            PyObject *o = SLOT(e, self->e_offset);
            long long off = o && PyLong_CheckExact(o) ? PyLong_AsLongLong(o) : -1;
            if (off < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an entry's offset is no int");
                goto fail;
            }
            for (; j < np && at[j] < off; j++) {
                PyObject *u = PyList_GET_ITEM(args[6], j);  /* (None: a uuid that is no string, read as nothing) */
                if (PyUnicode_CheckExact(u) && read_progress(&links, u, PyList_GET_ITEM(args[7], j), not_links) < 0)
                    goto fail;
            }
        }
        if (same_str(ty, self->progress)) {
            if (PyUnicode_CheckExact(id) && read_progress(&links, id, p, not_links) < 0) goto fail;
            continue;
        }
        int r = PySet_Contains(row_types, ty);
        if (r < 0) goto fail;
        if (r && id != Py_None) {
            Py_ssize_t had = PyDict_GET_SIZE(into);
            if (PyDict_SetItem(into, id, e) < 0) goto fail;
            n++;
            if (splice_row(id, p, links, not_links, spliced, PyDict_GET_SIZE(into) == had) < 0) goto fail;
            if (same_str(SLOT(e, self->e_kind), self->boundary) && PyList_Append(bounds, e) < 0) goto fail;
            continue;
        }
        if (same_str(ty, self->last_prompt)) {
            checkpoints = 1;
        } else if (r) {  /* a row whose uuid is no string */
            if (PyList_Append(odd, e) < 0) goto fail;
            if (splice_row(e, p, links, not_links, spliced, 0) < 0) goto fail;
            /* the client folds at a boundary whatever its uuid */
            if (same_str(SLOT(e, self->e_kind), self->boundary) && PyList_Append(bounds, e) < 0) goto fail;
        }
    }
    Py_XDECREF(links);
    if (lines.buf) PyBuffer_Release(&lines);
    return Py_BuildValue("nNNO", n, odd, bounds, checkpoints ? Py_True : Py_False);
fail:
    Py_XDECREF(odd);
    Py_XDECREF(bounds);
    Py_XDECREF(links);
    if (lines.buf) PyBuffer_Release(&lines);
    return NULL;
}

/* kept(main, start, early, rows) -> claude_chain.sent_entries's cut: the entries of ``main`` whose index is ``start`` or
 * more or in ``early`` (a set of indexes), and, given ``rows`` (a dict; None: all of them), only those whose id is None
 * or whose row they are (``rows.get(e.id) is e``); None when an entry's index is no int of a machine word. */
static PyObject *Rows_kept(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0]) || !PyLong_CheckExact(args[1]) || !PyAnySet_Check(args[2])
        || (args[3] != Py_None && !PyDict_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "kept(main: list, start: int, early: set, rows: dict | None)");
        return NULL;
    }
    PyObject *main = args[0], *early = args[2], *rows = args[3];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(main); k++) {
        PyObject *e = entry_at(self, main, k);
        if (!e) goto fail;
        PyObject *ix = SLOT(e, self->f_index), *id = SLOT(e, self->e_id);
        if (!ix || !PyLong_CheckExact(ix) || !id) goto python;
        Py_ssize_t i = PyLong_AsSsize_t(ix);
        if (i == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto python;
        }
        if (i < start) {
            int r = PySet_GET_SIZE(early) ? PySet_Contains(early, ix) : 0;
            if (r < 0) goto fail;
            if (!r) continue;
        }
        if (rows != Py_None && id != Py_None) {
            PyObject *row = PyDict_GetItemWithError(rows, id);
            if (!row && PyErr_Occurred()) goto fail;
            if (row != e) continue;
        }
        if (PyList_Append(out, e) < 0) goto fail;
    }
    return out;
python:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *Rows_main(Rows *self, PyObject *entries) {
    if (!PyList_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "main(entries: list)");
        return NULL;
    }
    Py_ssize_t size = PyList_GET_SIZE(entries), first = -1;
    for (Py_ssize_t k = 0; k < size; k++) {
        int r = sidechain(self, PyList_GET_ITEM(entries, k));
        if (r < 0) return NULL;
        if (r) { first = k; break; }
    }
    if (first < 0) return Py_NewRef(entries);  /* no sidechain line: nothing to leave out */
    PyObject *keep = PyList_GetSlice(entries, 0, first);
    if (!keep) return NULL;
    int main = 0, side = 0;
    for (Py_ssize_t k = 0; k < first && !main; k++) main = same_str(SLOT(PyList_GET_ITEM(entries, k), self->e_kind), self->message);
    for (Py_ssize_t k = first; k < size; k++) {
        PyObject *e = entry_at(self, entries, k);
        if (!e) {
            Py_DECREF(keep);
            return NULL;
        }
        int r = sidechain(self, e);
        if (r < 0) { Py_DECREF(keep); return NULL; }
        if (r) { side = 1; continue; }
        if (PyList_Append(keep, e) < 0) { Py_DECREF(keep); return NULL; }
        if (!main) main = same_str(SLOT(e, self->e_kind), self->message);
    }
    if (main && side) return keep;
    Py_DECREF(keep);
    return Py_NewRef(entries);
}

/* sound(entries, forward_ok) -> (ok, forward): repair._links_sound's loop. Each entry with an id: its id
 * seen before -> (False, ...); a parent not among the ids before it -> (False, ...) unless forward_ok (pi),
 * where it is listed in ``forward``. */
static PyObject *Rows_sound(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "sound(entries: list, forward_ok: bool)");
        return NULL;
    }
    PyObject *entries = args[0];
    int forward_ok = PyObject_IsTrue(args[1]);
    if (forward_ok < 0) return NULL;
    PyObject *seen = PySet_New(NULL), *forward = PyList_New(0);
    if (!seen || !forward) goto fail;
    int ok = 1;
    PyObject *last = NULL;  /* the last id added (borrowed: ``seen`` holds it) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(entries) && ok; k++) {
        PyObject *e = entry_at(self, entries, k);
        if (!e) goto fail;
        PyObject *id = SLOT(e, self->e_id), *parent = SLOT(e, self->e_parent);
        if (!id || !parent) {
            PyErr_SetString(PyExc_AttributeError, "an entry's id or parent is not set");
            goto fail;
        }
        if (id == Py_None) continue;
        /* a parent that is the id added last (the same object: the index shares its strings) is seen; the id is
         * new when adding it grows the set. The order of the Python's checks is kept: a repeated id first. */
        int known_parent = parent == Py_None || parent == last;
        if (!known_parent) {
            int r = PySet_Contains(seen, parent);
            if (r < 0) goto fail;
            known_parent = r;
        }
        Py_ssize_t size = PySet_GET_SIZE(seen);
        if (PySet_Add(seen, id) < 0) goto fail;
        if (PySet_GET_SIZE(seen) == size) { ok = 0; break; }
        if (!known_parent) {
            /* (a parent equal to the entry's own id: not seen before it) */
            if (!forward_ok) { ok = 0; break; }
            if (PyList_Append(forward, e) < 0) goto fail;
        }
        last = id;
    }
    Py_DECREF(seen);
    return Py_BuildValue("ON", ok ? Py_True : Py_False, forward);
fail:
    Py_XDECREF(seen);
    Py_XDECREF(forward);
    return NULL;
}

/* whether a tuple of calls holds one whose ``problem`` is truthy (or a call that is no Call, its problem unset): 1,
 * 0, -1 on error */
static int call_problem_in(Rows *self, PyObject *calls) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(calls); j++) {
        PyObject *c = PyTuple_GET_ITEM(calls, j), *problem;
        if (!Py_IS_TYPE(c, self->call) || !(problem = SLOT(c, self->c_problem))) return 1;
        if (problem != Py_None) {
            int t = PyObject_IsTrue(problem);
            if (t) return t;
        }
    }
    return 0;
}

/* whether repair's hygiene does nothing to a message entry, read from its slots: a FullEntry whose extra (None or a
 * dict) marks nothing malformed and no bad blocks, whose calls (Calls) have no problem, and none of hygiene's cases
 * (an empty errored assistant turn; a blank or empty user message, but for one with context, or of Claude Code one
 * with no blank text; an assistant turn with blank text); 0 when it may, or its fields are of other types; -1 on error */
static int quiet_message(Rows *self, PyObject *e, int claude) {
    if (!Py_IS_TYPE(e, self->full) || !self->kinds_cls) return 0;
    PyObject *x = SLOT(e, self->f_extra), *calls = SLOT(e, self->f_calls), *role = SLOT(e, self->f_role);
    PyObject *empty = SLOT(e, self->f_empty), *blank = SLOT(e, self->f_blank_text), *results = SLOT(e, self->f_results);
    if (!x || !calls || !PyTuple_CheckExact(calls) || !results || !PyTuple_CheckExact(results)
        || (empty != Py_True && empty != Py_False) || (blank != Py_True && blank != Py_False)) return 0;
    int context = 0;
    if (x != Py_None) {
        if (!PyDict_CheckExact(x)) return 0;
        if (PyDict_GET_SIZE(x)) {
            PyObject *m = PyDict_GetItemWithError(x, self->malformed), *b = m || PyErr_Occurred() ? NULL
                          : PyDict_GetItemWithError(x, self->bad_blocks);
            if (m || b || PyErr_Occurred()) return PyErr_Occurred() ? -1 : 0;
            int c = PyDict_Contains(x, self->content_not_list);  /* (pi: repair gives it an array) */
            if (c) return c < 0 ? -1 : 0;
            PyObject *cx = PyDict_GetItemWithError(x, self->context_key);
            if (!cx && PyErr_Occurred()) return -1;
            context = cx && cx != Py_None;
        }
    }
    int bad = call_problem_in(self, calls);
    if (bad) return bad < 0 ? -1 : 0;
    if (role == Py_None) return 1;
    if (!role || !PyUnicode_CheckExact(role)) return 0;
    if (same_str(role, self->assistant)) {
        PyObject *nb = SLOT(e, self->f_nblocks), *stop = SLOT(e, self->f_stop);
        if (!nb || !PyLong_CheckExact(nb) || !stop || (stop != Py_None && !PyUnicode_CheckExact(stop))) return 0;
        int zero = PyObject_Not(nb);  /* (an int's size is no longer Py_SIZE from 3.12 on) */
        if (zero < 0) return -1;
        if (zero && is(stop, "error")) return 0;
        return !(blank == Py_True && empty == Py_False);
    }
    if (same_str(role, self->user)) {
        if (context) return 1;
        if (claude) return blank == Py_False;  /* (blank text: a lone prompt of it the client sends as written) */
        return blank == Py_False && !(empty == Py_True && !PyTuple_GET_SIZE(results));
    }
    return 1;
}

/* looked(entries[, claude]) -> the entries repair's hygiene looks at: the messages, and the lines whose extra marks
 * them malformed; given ``claude`` (whether the file is Claude Code's), not the messages it does nothing to
 * (``quiet_message``) */
static PyObject *Rows_looked(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "looked(entries: list[, claude: bool])");
        return NULL;
    }
    PyObject *entries = args[0];
    int quiet = nargs == 2, claude = quiet ? PyObject_IsTrue(args[1]) : 0;
    if (claude < 0) return NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(entries); k++) {
        PyObject *e = entry_at(self, entries, k);
        if (!e) {
            Py_DECREF(out);
            return NULL;
        }
        if (!same_str(SLOT(e, self->e_kind), self->message)) {
            int r = extra_flag(self, e, self->malformed);
            if (r < 0) { Py_DECREF(out); return NULL; }
            if (!r) continue;
        } else if (quiet) {
            int r = quiet_message(self, e, claude);
            if (r < 0) { Py_DECREF(out); return NULL; }
            if (r) continue;
        }
        if (PyList_Append(out, e) < 0) { Py_DECREF(out); return NULL; }
    }
    return out;
}

/* What ``Evidence.add(e)`` (``ev``'s) does for an assistant message whose extra is None once ``main.keeps(e)`` kept it:
 * the last model (when named) and the peak of recorded context (input + cache read + cache write) per model. 1 done;
 * 0 when something is not as expected (a usage that is not three exact ints, peaks that are not a dict of tuples):
 * nothing was changed, the caller hands ``e`` to ``add``; -1 with an error set. */
static int add_assistant(Rows *self, PyObject *ev, PyObject *e, PyObject *model, int named) {
    PyObject *u = SLOT(e, self->f_usage), *context = NULL, *peaks = NULL;
    int better = 0, res = 0;
    if (u != Py_None) {
        PyObject *keys[3] = {self->w_input, self->w_cache_read, self->w_cache_write};
        long long sum = 0;
        for (int k = 0; k < 3; k++) {
            PyObject *v = PyObject_GetAttr(u, keys[k]);
            if (!v) { PyErr_Clear(); return 0; }  /* (add raises it) */
            int overflow = 0;
            long long n = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
            int odd = !PyLong_CheckExact(v) || overflow || (n == -1 && PyErr_Occurred());
            Py_DECREF(v);
            if (odd || __builtin_add_overflow(sum, n, &sum)) { PyErr_Clear(); return 0; }
        }
        if (!(context = PyLong_FromLongLong(sum))) return -1;
        if (!(peaks = PyObject_GetAttr(ev, self->w_peaks))) goto done;
        if (!PyDict_CheckExact(peaks)) { res = 0; goto done; }
        PyObject *best = PyDict_GetItemWithError(peaks, model);
        if (!best) {
            if (PyErr_Occurred()) goto error;
            better = 1;
        } else {
            if (!PyTuple_CheckExact(best) || PyTuple_GET_SIZE(best) < 1) goto done;
            better = PyObject_RichCompareBool(context, PyTuple_GET_ITEM(best, 0), Py_GT);
            if (better < 0) goto error;
        }
    }
    if (named && PyObject_SetAttr(ev, self->w_last_model, model) < 0) goto error;
    if (better) {
        PyObject *lineno = PyObject_GetAttr(e, self->w_lineno);
        if (!lineno) goto error;
        PyObject *peak = PyTuple_Pack(2, context, lineno);
        Py_DECREF(lineno);
        if (!peak) goto error;
        int r = PyDict_SetItem(peaks, model, peak);
        Py_DECREF(peak);
        if (r < 0) goto error;
    }
    res = 1;
    goto done;
error:
    res = -1;
done:
    if (res == 0) PyErr_Clear();
    Py_XDECREF(context);
    Py_XDECREF(peaks);
    return res;
}

/* facts(entries, add, main, names, one[, ev]) -> (compactions, last_model, its index): estimate._facts's loop. It reads
 * the entries whose fields are slots (``FullEntry``) and passes over a metadata ``Entry`` with nothing else set
 * (``_m is PLAIN``) as the loop does; every other entry, and one whose fields it does not expect (an extra that
 * is no dict or notes ignored values, several calls or results, a model or role that is no str), it hands to
 * ``one(e)``, which reads it in Python (and keeps its own compaction count and last model). It fills ``names``
 * and calls ``add(e)`` as the loop does, in file order; ``main.seen`` is set where the loop sets it. */
/* what a metadata entry's flags ``x`` (a dict) say of the window and the model (``window._meta_values``), each where
 * ``Evidence.add`` takes it (a window that is an int, not a bool, above 0; a model that is a str, not empty), else NULL
 * (borrowed): 1 when it holds either key (``kw``, ``km``), 0 when neither, -1 on error */
static int said_window_model(PyObject *x, PyObject *kw, PyObject *km, PyObject **w, PyObject **mid) {
    *w = PyDict_GetItemWithError(x, kw);
    if (!*w && PyErr_Occurred()) return -1;
    *mid = PyDict_GetItemWithError(x, km);
    if (!*mid && PyErr_Occurred()) return -1;
    int says = *w || *mid;
    if (*w) {
        int overflow = 0;
        long long v = PyLong_Check(*w) && !PyBool_Check(*w) ? PyLong_AsLongLongAndOverflow(*w, &overflow) : 0;
        if (v == -1 && PyErr_Occurred()) return -1;
        if (!(overflow > 0 || (overflow == 0 && v > 0))) *w = NULL;
    }
    if (*mid && !(PyUnicode_Check(*mid) && PyUnicode_GET_LENGTH(*mid) > 0)) *mid = NULL;
    return says;
}

static PyObject *Rows_facts(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 5 || nargs > 6 || !PyList_Check(args[0]) || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "facts(entries: list, add, main, names: dict, one[, ev])");
        return NULL;
    }
    PyObject *ev = nargs == 6 && args[5] != Py_None ? args[5] : NULL;  /* add's Evidence: its assistants read here */
    if (!self->full || !self->call) {
        PyErr_SetString(PyExc_TypeError, "Rows was not initialised");
        return NULL;
    }
    PyObject *entries = args[0], *add = args[1], *main_ = args[2], *names = args[3], *one = args[4];
    long long compactions = 0;
    PyObject *last_model = Py_None, *last_index = Py_None;  /* borrowed from the entries (the list holds them) */
    int seen = 0;  /* main.seen is known to be True (it only ever becomes True) */
    {
        PyObject *v = PyObject_GetAttr(main_, self->seen);
        if (!v) return NULL;
        seen = v == Py_True;
        Py_DECREF(v);
    }
    /* A metadata entry that says a window or a model (window._meta_values: its extra, its object released) is
     * not handed to add at once: only the last that says a valid window and the last that says a valid model
     * count (Evidence.add keeps the last of each, and only metadata entries set them), so those two are handed
     * to add, in file order, before anything else is handed to add or one, and at the end. */
    PyObject *said_w = NULL, *said_m = NULL;
#define FLUSH() do { \
        PyObject *a_ = said_w, *b_ = said_m; \
        said_w = said_m = NULL; \
        if (a_ && b_ && a_ != b_) { \
            Py_ssize_t ia_ = PyLong_AsSsize_t(SLOT(a_, self->f_index)), ib_ = PyLong_AsSsize_t(SLOT(b_, self->f_index)); \
            if (PyErr_Occurred()) return NULL; \
            if (ia_ > ib_) { PyObject *t_ = a_; a_ = b_; b_ = t_; } \
        } else if (!a_) { a_ = b_; b_ = NULL; } \
        else if (a_ == b_) { b_ = NULL; } \
        if (a_) { PyObject *r_ = PyObject_CallOneArg(add, a_); if (!r_) return NULL; Py_DECREF(r_); } \
        if (b_) { PyObject *r_ = PyObject_CallOneArg(add, b_); if (!r_) return NULL; Py_DECREF(r_); } \
    } while (0)
#define CALL1(fn, e) do { FLUSH(); PyObject *r_ = PyObject_CallOneArg((fn), (e)); if (!r_) return NULL; Py_DECREF(r_); } while (0)
#define SEEN() do { if (!seen) { if (PyObject_SetAttr(main_, self->seen, Py_True) < 0) return NULL; seen = 1; } } while (0)
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(entries); k++) {
        PyObject *e = PyList_GET_ITEM(entries, k);
        PyObject *kind = Py_IS_TYPE(e, self->entry) || Py_IS_TYPE(e, self->full) ? SLOT(e, self->e_kind) : NULL;
        if (Py_IS_TYPE(e, self->entry) && SLOT(e, self->e_m) == self->plain && same_str(kind, self->meta)) continue;
        if (!Py_IS_TYPE(e, self->full)) {
            CALL1(one, e);
            seen = 0;  /* (whatever one did: set again when next set) */
            continue;
        }
        PyObject *x = SLOT(e, self->f_extra), *calls = SLOT(e, self->f_calls), *results = SLOT(e, self->f_results);
        PyObject *role = SLOT(e, self->f_role), *model = SLOT(e, self->f_model);
        int odd = !kind || !PyUnicode_CheckExact(kind) || (x != Py_None && !PyDict_CheckExact(x)) || !PyTuple_CheckExact(calls)
                  || !PyTuple_CheckExact(results) || PyTuple_GET_SIZE(calls) > 1 || PyTuple_GET_SIZE(results) > 1
                  || (role != Py_None && !PyUnicode_CheckExact(role)) || (model != Py_None && !PyUnicode_CheckExact(model));
        if (!odd && x != Py_None) {
            PyObject *found = PyDict_GetItemWithError(x, self->ignored);
            if (!found && PyErr_Occurred()) return NULL;
            int truth = found ? PyObject_IsTrue(found) : 0;
            if (truth < 0) return NULL;
            odd = truth;
        }
        if (!odd && PyTuple_GET_SIZE(calls) == 1) {
            PyObject *c = PyTuple_GET_ITEM(calls, 0);
            odd = !Py_IS_TYPE(c, self->call);
        }
        if (odd) {
            CALL1(one, e);
            seen = 0;  /* (whatever one did: set again when next set) */
            continue;
        }
        if (PyTuple_GET_SIZE(calls) == 1) {  /* names[c.id] = c.name or "unknown", for a call with an id */
            PyObject *c = PyTuple_GET_ITEM(calls, 0);
            PyObject *cid = SLOT(c, self->c_id), *name = SLOT(c, self->c_name);
            int t = PyObject_IsTrue(cid);
            if (t < 0) return NULL;
            if (t) {
                int nt = PyObject_IsTrue(name);
                if (nt < 0) return NULL;
                if (PyDict_SetItem(names, cid, nt ? name : self->unknown) < 0) return NULL;
            }
        }
        int named = model != Py_None && PyUnicode_GET_LENGTH(model) && !same_str(model, self->synthetic);
        int assistant = role != Py_None && same_str(role, self->assistant);
        if (same_str(kind, self->message)) {
            if (assistant) {
                if (named) { last_model = model; last_index = SLOT(e, self->f_index); }
                int unnamed = model == Py_None || PyUnicode_GET_LENGTH(model) == 0;
                if (x == Py_None && unnamed && SLOT(e, self->f_usage) == Py_None) SEEN();  /* all add(e) would do */
                else {
                    /* (a message: its add sets no window nor model, what a metadata entry's add sets) */
                    int r = x == Py_None && ev ? add_assistant(self, ev, e, model, named) : 0;
                    if (r < 0) return NULL;
                    if (r) SEEN();
                    else { CALL1(add, e); seen = 0; }
                }
            } else if (x != Py_None) {
                CALL1(add, e);
                seen = 0;
            } else {
                SEEN();
            }
        } else {
            if (same_str(kind, self->meta)) {
                if (SLOT(e, self->f_obj) != Py_None) {
                    CALL1(add, e);
                    seen = 0;
                } else if (x != Py_None && PyDict_GET_SIZE(x) > 0) {  /* the window and model it says */
                    PyObject *w, *mid;
                    if (said_window_model(x, self->context_window, self->model, &w, &mid) < 0) return NULL;
                    if (w) said_w = e;
                    if (mid) said_m = e;
                }
            } else if (same_str(kind, self->compaction) || same_str(kind, self->boundary)) {
                compactions++;
            }
            if (assistant && named) { last_model = model; last_index = SLOT(e, self->f_index); }
        }
    }
    FLUSH();
#undef CALL1
#undef SEEN
#undef FLUSH
    return Py_BuildValue("(LOO)", compactions, last_model, last_index);
}

#include "_scan_tally.c"
#include "_scan_validate.c"
#include "_scan_pair.c"
#include "_scan_profile.c"

/* hand(es, start, on_entry, plain) -> how many entries ``es`` holds: a streaming pass's entries (a list), numbered from
 * ``start`` (None: left as they are) and handed to ``on_entry`` in order, as the scan's loops do; a metadata entry with
 * nothing set (an Entry whose ``_m`` is PLAIN) is not handed when ``plain`` is false (its consumer reads none). */
static PyObject *Rows_hand(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "hand(es: list, start: int | None, on_entry, plain: bool)");
        return NULL;
    }
    PyObject *es = args[0], *on = args[2];
    int plain = PyObject_IsTrue(args[3]), number = args[1] != Py_None;
    if (plain < 0) return NULL;
    Py_ssize_t start = number ? PyLong_AsSsize_t(args[1]) : 0, k = 0;
    if (start == -1 && PyErr_Occurred()) return NULL;
    for (; k < PyList_GET_SIZE(es); k++) {
        PyObject *e = entry_at(self, es, k);
        if (!e) return NULL;
        Py_INCREF(e);
        if (number) {
            PyObject *n = PyLong_FromSsize_t(start + k);
            if (!n) {
                Py_DECREF(e);
                return NULL;
            }
            Py_XSETREF(SLOT(e, self->f_index), n);
        }
        if (plain || !Py_IS_TYPE(e, self->entry) || SLOT(e, self->e_m) != self->plain
            || !same_str(SLOT(e, self->e_kind), self->meta)) {
            PyObject *r = PyObject_CallOneArg(on, e);
            if (!r) {
                Py_DECREF(e);
                return NULL;
            }
            Py_DECREF(r);
        }
        Py_DECREF(e);
    }
    return PyLong_FromSsize_t(k);
}

static PyMethodDef Rows_methods[] = {
    {"hand", (PyCFunction)(void (*)(void))Rows_hand, METH_FASTCALL, "A streaming pass's entries, numbered, to its consumer."},
    {"facts", (PyCFunction)(void (*)(void))Rows_facts, METH_FASTCALL, "estimate._facts's loop."},
    {"sound", (PyCFunction)(void (*)(void))Rows_sound, METH_FASTCALL, "repair._links_sound's loop."},
    {"looked", (PyCFunction)(void (*)(void))Rows_looked, METH_FASTCALL, "The entries repair's hygiene looks at."},
    {"rows", (PyCFunction)(void (*)(void))Rows_rows, METH_FASTCALL, "claude_chain.chain's first loop."},
    {"main", (PyCFunction)Rows_main, METH_O, "claude_chain.main_entries."},
    {"kept", (PyCFunction)(void (*)(void))Rows_kept, METH_FASTCALL, "claude_chain.sent_entries's cut."},
    {"sent", (PyCFunction)(void (*)(void))Rows_sent, METH_FASTCALL, "estimate.view_of's pass, without its objects."},
    {"tally", (PyCFunction)(void (*)(void))Rows_tally, METH_FASTCALL, "estimate._heuristic_tally's loop."},
    {"pi_path", (PyCFunction)(void (*)(void))Rows_pi_path, METH_FASTCALL, "view.pi_path's walk."},
    {"linear", (PyCFunction)Rows_linear, METH_O, "view.linear."},
    {"validate", (PyCFunction)(void (*)(void))Rows_validate, METH_FASTCALL, "validate._validate's loop."},
    {"pair", (PyCFunction)(void (*)(void))Rows_pair, METH_FASTCALL, "repair's Pairing.pair loop."},
    {"finals", (PyCFunction)(void (*)(void))Rows_finals, METH_FASTCALL, "plan_repair's final entries."},
    {NULL},
};

static PyTypeObject RowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Rows",
    .tp_basicsize = sizeof(Rows),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Rows_init,
    .tp_dealloc = (destructor)Rows_dealloc,
    .tp_methods = Rows_methods,
    .tp_doc = "Rows(entry_cls, full_cls, more_cls, plain, boundary, message): claude_chain's passes over the index.",
};


#include "_scan_sniff.c"

/* ---------------------------------------------------------------------------------------- Reader */

/* Reader(f, begin, end, size, no): the lines of a binary file object, as ``for chunk in f`` gives them with the
 * scan's bounds: from ``begin`` (f is there; ``no`` lines read before it), up to ``end`` (None: the end of the file; a line that
 * crosses it is cut there and is the last), a line with no newline the last. Once ``meta`` is set (a
 * ``Meta``), the metadata lines it takes become entries here and are not given out: ``no`` and
 * ``start`` are then the number and offset of the line just given, ``offset`` the offset after it;
 * ``lf`` and ``meta_bytes`` count the lines taken here (each ends in "\n"), and their bytes. */
typedef struct {
    PyObject_HEAD
    PyObject *readinto;   /* f.readinto */
    Meta *meta;
    char *buf;
    Py_ssize_t cap, lo, hi;
    Py_ssize_t seen;      /* bytes from buf[lo] already searched and holding no newline (a long line read in many fills) */
    int eof, done;
    long long offset;     /* the file offset of buf[lo] */
    long long end;        /* -1: none */
    long long nlines;     /* lines so far */
    long long start;      /* offset of the last line given or taken */
    long long lf, meta_bytes;
    PyObject *no;         /* the int object of the last line's number */
    Whole *whole;         /* a Whole that takes the lines it is sure of (a Codex rollout's, a pi session's), or NULL */
} Reader;

/* One reader's buffer kept when it is done, for the next reader to take: a scan makes two readers a file (the first
 * lines are read in Python to tell the format), and a folder's run hundreds; each fresh 1 MiB buffer was 256 page
 * faults on its first fill, and its release gave the heap's top back to the system (brk) for the next to fault in
 * again: 63K of the 69K page faults of a 165-file folder's scan, ~0.13 s of system time. */
static char *spare_buf = NULL;
static Py_ssize_t spare_cap = 0;
#define SPARE_MAX (4 << 20)  /* a buffer grown for a longer line is not kept beyond this */

static void release_buffer(char *buf, Py_ssize_t cap) {
    if (buf && !spare_buf && cap <= SPARE_MAX) {
        spare_buf = buf;
        spare_cap = cap;
    } else {
        PyMem_Free(buf);
    }
}

static char *take_buffer(Py_ssize_t size, Py_ssize_t *cap) {
    if (spare_buf && spare_cap >= size) {
        char *b = spare_buf;
        *cap = spare_cap;
        spare_buf = NULL;
        spare_cap = 0;
        return b;
    }
    *cap = size;
    return PyMem_Malloc((size_t)size);
}

static void Reader_dealloc(Reader *self) {
    Py_XDECREF(self->readinto);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->whole);
    Py_XDECREF(self->no);
    release_buffer(self->buf, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"f", "begin", "end", "size", "no", NULL};
    PyObject *f, *end = Py_None;
    long long begin = 0, no = 0;
    Py_ssize_t size = 1 << 20;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|OnL", names, &f, &begin, &end, &size, &no)) return -1;
    Py_XSETREF(self->readinto, PyObject_GetAttrString(f, "readinto"));
    if (!self->readinto) return -1;
    if (end == Py_None) {
        self->end = -1;
    } else {
        self->end = PyLong_AsLongLong(end);
        if (self->end == -1 && PyErr_Occurred()) return -1;
    }
    if (size < 4096) size = 4096;
    release_buffer(self->buf, self->cap);
    self->buf = take_buffer(size, &self->cap);
    if (!self->buf) { self->cap = 0; PyErr_NoMemory(); return -1; }
    self->lo = self->hi = self->seen = 0;
    self->eof = self->done = 0;
    self->offset = self->start = begin;
    self->nlines = no;
    self->lf = self->meta_bytes = 0;
    Py_XSETREF(self->no, PyLong_FromLongLong(no));
    Py_CLEAR(self->meta);
    Py_CLEAR(self->whole);
    return self->no ? 0 : -1;
}

/* at most this much a read: the kernel copies a read of 128 KiB or more at a quarter of the speed on the bench's
 * machine (500 MB of cached files: 0.21 s of system time in reads of 128 KiB-4 MiB, 0.05 s in reads of 32-124 KiB), and
 * the bytes read are parsed while they are still in the core's cache. The buffer itself stays 1 MiB (a longer line
 * is read in several reads); the unread rest is moved to its start before each read, so reads land in its first
 * part. Measured: one-process ``estimate -t usage`` of the 165-file folder 0.76 -> 0.73 s, both cores 0.45 -> 0.43 s */
#define READ_CHUNK (64 << 10)

/* more bytes into the buffer (the unread rest moved to its start, the buffer doubled when full):
 * 0, or -1 with an error set; sets eof when the file gave nothing */
static int fill(Reader *self) {
    if (self->lo > 0) {
        memmove(self->buf, self->buf + self->lo, (size_t)(self->hi - self->lo));
        self->hi -= self->lo;
        self->lo = 0;
    }
    if (self->hi == self->cap) {
        char *b = PyMem_Realloc(self->buf, (size_t)self->cap * 2);
        if (!b) { PyErr_NoMemory(); return -1; }
        self->buf = b;
        self->cap *= 2;
    }
    Py_ssize_t room = self->cap - self->hi;
    if (room > READ_CHUNK) room = READ_CHUNK;
    PyObject *view = PyMemoryView_FromMemory(self->buf + self->hi, room, PyBUF_WRITE);
    if (!view) return -1;
    PyObject *n = PyObject_CallOneArg(self->readinto, view);
    Py_DECREF(view);
    if (!n) return -1;
    Py_ssize_t got = n == Py_None ? 0 : PyLong_AsSsize_t(n);
    Py_DECREF(n);
    if (got < 0) return PyErr_Occurred() ? -1 : 0;
    if (got == 0) self->eof = 1;
    self->hi += got;
    return 0;
}

static PyObject *Reader_next(Reader *self) {
    for (;;) {
        if (self->done || (self->end >= 0 && self->offset >= self->end)) {
            self->done = 1;
            return NULL;
        }
        char *p = self->buf + self->lo;
        Py_ssize_t avail = self->hi - self->lo;
        /* the search goes on where the last one stopped: a line of N bytes read in fills of 64 KiB is searched once,
         * not once a fill (a 200 MB line took 24-40 s so) */
        char *nl = avail > self->seen ? memchr(p + self->seen, '\n', (size_t)(avail - self->seen)) : NULL;
        if (!nl && !self->eof) {
            self->seen = avail;
            if (fill(self) < 0) return NULL;
            continue;
        }
        self->seen = 0;
        Py_ssize_t len;
        int last = 0;
        if (nl) {
            len = nl + 1 - p;
        } else {  /* the end of the file: an unfinished line is the last */
            len = self->hi - self->lo;
            if (!len) {
                self->done = 1;
                return NULL;
            }
            last = 1;
        }
        if (self->end >= 0 && self->offset + len > self->end) {
            len = (Py_ssize_t)(self->end - self->offset);
            last = 1;
        }
        if (last) self->done = 1;
        self->nlines++;
        self->start = self->offset;
        self->offset += len;
        self->lo += len;
        PyObject *no = PyLong_FromLongLong(self->nlines);
        if (!no) return NULL;
        PyObject *prev = self->no;
        self->no = no;
        if ((self->meta || self->whole) && !last) {
            PyObject *start = PyLong_FromLongLong(self->start);
            if (!start) { Py_DECREF(prev); return NULL; }
            int r = self->meta ? meta_core(self->meta, (cp)p, len, no, start, prev)
                               : whole_take(self->whole, (cp)p, len, no, start, prev);
            Py_DECREF(start);
            Py_DECREF(prev);
            if (r < 0) return NULL;
            if (r) {
                self->lf++;
                self->meta_bytes += len;
                continue;
            }
        } else {
            Py_DECREF(prev);
        }
        return PyBytes_FromStringAndSize(p, len);
    }
}

/* peek(n, types, roles) -> the sniffs' scores (``sniff``) of the next lines, at most n, read into the buffer and not
 * given out: the next line given out is still the first of them. It stops at the end of the file (or the reader's
 * end), and after a line the sniff is not sure of or one with no newline (the file's last): None, the list's last. */
static PyObject *Reader_peek(Reader *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyLong_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "peek(n: int, types: dict, roles: dict)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    Py_ssize_t rel = 0;  /* the next line's place, from buf[lo] (a fill moves buf[lo] to the buffer's start) */
    Py_ssize_t seen = 0;  /* bytes from it already searched, no newline among them */
    long long off = self->offset;
    while (PyList_GET_SIZE(out) < n && !self->done && !(self->end >= 0 && off >= self->end)) {
        char *p = self->buf + self->lo + rel;
        Py_ssize_t avail = self->hi - self->lo - rel;
        char *nl = avail > seen ? memchr(p + seen, '\n', (size_t)(avail - seen)) : NULL;
        if (!nl && !self->eof) {
            seen = avail;
            if (fill(self) < 0) goto fail;
            continue;
        }
        seen = 0;
        Py_ssize_t len = nl ? nl + 1 - p : 0;
        PyObject *s = !nl || (self->end >= 0 && off + len > self->end) ? Py_NewRef(Py_None)
                                                                      : sniff_scores((cp)p, (cp)p + len, args[1], args[2]);
        if (!nl && !avail) {  /* the end of the file, after a newline */
            Py_DECREF(s);
            break;
        }
        if (!s) goto fail;
        int r = PyList_Append(out, s);
        Py_DECREF(s);
        if (r < 0) goto fail;
        if (s == Py_None) break;
        rel += len;
        off += len;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef Reader_methods[] = {
    {"peek", (PyCFunction)(void (*)(void))Reader_peek, METH_FASTCALL,
     "peek(n, types, roles): the sniffs' scores of the next lines, at most n, not given out (None: not sure; the last)."},
    {NULL},
};

static PyObject *Reader_get_no(Reader *self, void *c) { return Py_NewRef(self->no); }
static PyObject *Reader_get_start(Reader *self, void *c) { return PyLong_FromLongLong(self->start); }
static PyObject *Reader_get_offset(Reader *self, void *c) { return PyLong_FromLongLong(self->offset); }
static PyObject *Reader_get_lf(Reader *self, void *c) { return PyLong_FromLongLong(self->lf); }
static PyObject *Reader_get_meta_bytes(Reader *self, void *c) { return PyLong_FromLongLong(self->meta_bytes); }
static PyObject *Reader_get_meta(Reader *self, void *c) { return Py_NewRef(self->meta ? (PyObject *)self->meta : Py_None); }
static int Reader_set_meta(Reader *self, PyObject *v, void *c) {
    if (v == NULL || v == Py_None) {
        Py_CLEAR(self->meta);
        return 0;
    }
    if (!PyObject_TypeCheck(v, &MetaType)) {
        PyErr_SetString(PyExc_TypeError, "meta must be a Meta");
        return -1;
    }
    Py_INCREF(v);
    Py_XSETREF(self->meta, (Meta *)v);
    return 0;
}

static PyObject *Reader_get_whole(Reader *self, void *c) { return Py_NewRef(self->whole ? (PyObject *)self->whole : Py_None); }
static int Reader_set_whole(Reader *self, PyObject *v, void *c) {
    if (v == NULL || v == Py_None) {
        Py_CLEAR(self->whole);
        return 0;
    }
    if (!PyObject_TypeCheck(v, &WholeType) || !((Whole *)v)->into) {
        PyErr_SetString(PyExc_TypeError, "whole must be a Whole made with into");
        return -1;
    }
    Py_INCREF(v);
    Py_XSETREF(self->whole, (Whole *)v);
    return 0;
}

static PyGetSetDef Reader_getset[] = {
    {"no", (getter)Reader_get_no, NULL, "the number of the line last given out", NULL},
    {"start", (getter)Reader_get_start, NULL, "its offset", NULL},
    {"offset", (getter)Reader_get_offset, NULL, "the offset after it", NULL},
    {"lf", (getter)Reader_get_lf, NULL, "lines taken as metadata lines", NULL},
    {"meta_bytes", (getter)Reader_get_meta_bytes, NULL, "their bytes", NULL},
    {"meta", (getter)Reader_get_meta, (setter)Reader_set_meta, "the Meta that takes metadata lines, or None", NULL},
    {"whole", (getter)Reader_get_whole, (setter)Reader_set_whole, "the Whole that takes whole lines, or None", NULL},
    {NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Reader_next,
    .tp_getset = Reader_getset,
    .tp_methods = Reader_methods,
    .tp_doc = "Reader(f, begin, end=None, size=1 MiB, no=0): the lines of f, metadata lines taken by its meta.",
};

/* checksum(fd, offset, length): a 64-bit hash of the file's bytes [offset, offset + length) (fewer at its end), read
 * with pread without the GIL: the commit's check that the bytes it read are all still there (commit.full_sum). Not
 * a cryptographic hash: it tells a rewritten file from the one read, eight bytes a step, each one mixed in. */
static PyObject *checksum(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    int fd;
    long long offset, length;
    if (nargs != 3 || (fd = (int)PyLong_AsLong(args[0])) == -1 && PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "checksum(fd, offset, length)");
        return NULL;
    }
    offset = PyLong_AsLongLong(args[1]);
    length = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    enum { BLOCK = 1 << 20 };
    unsigned char *buf = PyMem_RawMalloc(BLOCK);
    if (!buf) return PyErr_NoMemory();
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)length, total = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    while (length > 0) {
        ssize_t n = pread(fd, buf, (size_t)(length < BLOCK ? length : BLOCK), (off_t)offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (n == 0) break;
        ssize_t i = 0;
        uint64_t lane[4] = {h, h + 1, h + 2, h + 3};  /* four chains side by side: a multiply's latency overlapped */
        for (; i + 32 <= n; i += 32) {
            for (int k = 0; k < 4; k++) {
                uint64_t w;
                memcpy(&w, buf + i + 8 * k, 8);
                lane[k] = (lane[k] ^ w) * 0xFF51AFD7ED558CCDULL;
                lane[k] ^= lane[k] >> 32;
            }
        }
        for (int k = 0; k < 4; k++) h = (h ^ lane[k]) * 0xC4CEB9FE1A85EC53ULL;
        for (; i < n; i++) h = (h ^ buf[i]) * 0x100000001B3ULL;
        offset += n;
        length -= n;
        total += (uint64_t)n;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(buf);
    if (err) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    h ^= total;
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef module_methods[] = {
    {"valid", valid, METH_O, "Whether the bytes are one JSON value, as the scan checks them."},
    {"checksum", (PyCFunction)(void (*)(void))checksum, METH_FASTCALL,
     "checksum(fd, offset, length): a 64-bit hash of the file's bytes there (read with pread, the GIL released)."},
    {"nontext", nontext, METH_O, "How many of the bytes are no text (below 9, 14 to 31, 127)."},
    {"sniff", (PyCFunction)(void (*)(void))sniff, METH_FASTCALL,
     "sniff(line, types, roles): (pi, claude, codex, messages), the formats' sniffs of the line, or None."},
    {"iso_ts", iso_ts, METH_O, "Epoch seconds of a YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z string, or None."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ctxtool._scan", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__scan(void) {
    choose_long_string();
    if (index_keys() < 0) {
        PyErr_SetString(PyExc_SystemError, "ctxtool._scan: a key's length is wrong, or four keys share one");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyTypeObject *types[] = {&MetaType, &ReaderType, &BuilderType, &RowsType, &WholeType, &ProfileType};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++)
        if (PyModule_AddType(m, types[k]) < 0) {  /* (readies the type; named as its tp_name ends) */
            Py_DECREF(m);
            return NULL;
        }
    /* which way long strings are checked here (the tests check both) */
    if (PyModule_AddStringConstant(m, "LONG_STRINGS", long_string == scan_long_string_plain ? "plain" : "avx2") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
