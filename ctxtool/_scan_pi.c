/* ctxtool._scan, included by _scan.c after _scan_claude.c: a pi session's common lines normalized in C.
 *
 * A ``Whole`` given ``pi=`` (a dict: what _scan_claude.c's blocks are read with, see claude_parts) makes of a parsed
 * pi line what the scan makes of it when nobody reads its blocks: ``full_entry`` + ``formats.pi.normalize(obj, e,
 * blocks=False, stats)`` + ``share_strings(e, shared)`` + ``e.release()``. It takes the lines pi writes most: messages
 * of role user, assistant, toolResult and custom (their blocks read by blocks_facts, scan_anthropic_blocks' port),
 * and the entries that carry no message (custom, model_change, thinking_level_change, label, session_info and other
 * types pi places but never sends). It declines (None, having changed nothing but the string table, which the Python
 * then gives the same strings) the header, compactions, branch
 * summaries, custom messages, bash executions, hook messages and unsent roles, a message without a role, a parent
 * that is neither a string nor null, a time that is an absurd number or a string of another form than
 * YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z, an absurd token count, a recorded context window, and whatever blocks_facts
 * declines: the Python reads those lines (tests/test_pi_native.py compares both on every pi line of the fixtures and
 * of generated sessions, and on variants of them). Every string the entry holds goes through the string table, as
 * share_strings puts it there (pi's ids are short, and a parent is its parent's id). */

enum {
    P_TYPE, P_ID, P_PARENT, P_TIMESTAMP, P_MESSAGE, P_ROLE, P_CONTENT, P_TOOL_CALL_ID, P_TOOL_USE_ID, P_TOOL_NAME,
    P_IS_ERROR, P_STOP_REASON, P_MODEL, P_USAGE, P_INPUT, P_OUTPUT, P_CACHE_READ, P_CACHE_WRITE, P_TOTAL_TOKENS,
    P_PROVIDER, P_SYNTHETIC_MODEL, P_CUSTOM_TYPE, P_DATA, P_MODEL_ID, P_CONTEXT_WINDOW, P_CUSTOM_TYPE_X, P_DATA_TS,
    P_UNKNOWN, P_TYPE_TEXT, P_IMAGE, P_TOOL_RESULT, NPS
};
static const char *PI_STR[NPS] = {
    "type", "id", "parentId", "timestamp", "message", "role", "content", "toolCallId", "toolUseId", "toolName",
    "isError", "stopReason", "model", "usage", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "provider",
    "synthetic_model", "customType", "data", "modelId", "contextWindow", "custom_type", "data_ts", "unknown", "text",
    "image", "toolResult"};

struct PiParts {
    PyObject *s[NPS];
    ClaudeParts *cl;  /* the blocks' strings, model's Call, Result and Usage, formats.common's args_chars and call_problem */
};

static void pi_parts_free(PiParts *p) {
    if (!p) return;
    for (int k = 0; k < NPS; k++) Py_XDECREF(p->s[k]);
    claude_parts_free(p->cl);
    PyMem_Free(p);
}

static PiParts *pi_parts(PyObject *d) {
    PiParts *p = PyMem_Calloc(1, sizeof(PiParts));
    if (!p) { PyErr_NoMemory(); return NULL; }
    if (!(p->cl = claude_parts(d))) {
        PyMem_Free(p);
        return NULL;
    }
    if (intern_all(p->s, PI_STR, NPS) < 0) {
        pi_parts_free(p);
        return NULL;
    }
    return p;
}

/* formats.common.ts_field of a value: 1 and *when (*has set) for a time, 1 with *has = 0 for none (null, absent, a value
 * parse_ts reads as none), 0 (declined) for an absurd number (Python notes it) or a string iso_z does not read */
static int pi_time(PyObject *v, double *when, int *has) {
    *has = 0;
    if (!v) return 1;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (overflow || x < -62135596800000LL || x > 253402300799999LL) return 0;
        *when = (double)x / 1000.0;
        *has = 1;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!(x >= -62135596800000.0 && x <= 253402300799999.0)) return 0;  /* (NaN fails) */
        *when = x / 1000.0;
        *has = 1;
        return 1;
    }
    if (PyUnicode_CheckExact(v)) {
        if (!PyUnicode_IS_COMPACT_ASCII(v) || !iso_z((cp)PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v), when)) return 0;
        *has = 1;
        return 1;
    }
    return 1;  /* true, false, an object, an array: no time */
}

/* the shared table's string for s (a new reference), or NULL on error */
#define SHARED(dst, s) ((dst) = share(shared, (s)))

/* a toolResult message's facts from what normalize reads of it: its call id (a str), name (a str or NULL), error flag,
 * and result_content_chars' (text, images) of its content */
static int pi_result_facts(PiParts *pp, PyObject *shared, int stats, PyObject *call_id, PyObject *name, int is_error,
                           long long text, long long images, CF *f) {
    long long chars = 0;
    if (stats) {
        chars = text + images * pp->cl->image_chars;
        f->chars = chars;
        f->kinds_always = 1;
        f->k[3] = text;
        f->k[4] = images * pp->cl->image_chars;
    }
    PyObject *sid = NULL, *sname = NULL;
    if (!SHARED(sid, call_id)) return CL_FAIL;
    if (name && !SHARED(sname, name)) { Py_DECREF(sid); return CL_FAIL; }
    int r = add_item(&f->results, 0, sid, sname ? sname : Py_None, is_error ? Py_True : Py_False, chars);
    Py_DECREF(sid);
    if (r < 0) { Py_XDECREF(sname); return CL_FAIL; }
    if (stats) {  /* {name or "unknown": chars} */
        PyObject *key = sname && PyUnicode_GET_LENGTH(sname) ? Py_NewRef(sname) : share(shared, pp->s[P_UNKNOWN]);
        PyObject *n = key ? PyLong_FromLongLong(chars) : NULL;
        if (n && (f->tool_chars = PyDict_New()) && PyDict_SetItem(f->tool_chars, key, n) < 0) Py_CLEAR(f->tool_chars);
        Py_XDECREF(key);
        Py_XDECREF(n);
        if (!f->tool_chars) { Py_XDECREF(sname); return CL_FAIL; }
    }
    Py_XDECREF(sname);
    f->nblocks = 1;
    f->empty = 0;
    return CL_MADE;
}

/* a toolResult message's facts (normalize's toolResult branch) */
static int pi_result(PiParts *pp, PyObject *m, int stats, PyObject *shared, CF *f) {
    PyObject **s = pp->s;
    PyObject *content = get(m, s[P_CONTENT]);
    PyObject *call_id = get(m, s[P_TOOL_CALL_ID]);
    if (!IS_STR(call_id)) {
        call_id = get(m, s[P_TOOL_USE_ID]);
        if (!IS_STR(call_id)) call_id = pp->cl->s[C_EMPTY_STR];
    }
    PyObject *name = get(m, s[P_TOOL_NAME]);
    if (!IS_STR(name)) name = NULL;
    PyObject *err = get(m, s[P_IS_ERROR]);
    int is_error = err ? PyObject_IsTrue(err) : 0;
    if (is_error < 0) return CL_FAIL;
    long long text = 0, images = 0;
    if (stats && !result_chars(content, s[P_TYPE], s[P_TYPE_TEXT], &text, &images)) return CL_DECLINE;
    return pi_result_facts(pp, shared, stats, call_id, name, is_error, text, images, f);
}

/* an assistant message's stop reason, model, usage and synthetic model (normalize's assistant part) */
static int pi_assistant(PiParts *pp, PyObject *m, int stats, PyObject *shared, CF *f) {
    PyObject **s = pp->s;
    PyObject *stop = get(m, s[P_STOP_REASON]), *model = get(m, s[P_MODEL]);
    if (IS_STR(stop) && !SHARED(f->stop, stop)) return CL_FAIL;
    if (IS_STR(model) && !SHARED(f->model, model)) return CL_FAIL;
    PyObject *u = stats ? get(m, s[P_USAGE]) : NULL;
    if (u && PyDict_Check(u)) {
        static const int keys[5] = {P_INPUT, P_OUTPUT, P_CACHE_READ, P_CACHE_WRITE, P_TOTAL_TOKENS};
        for (int k = 0; k < 5; k++)
            if (!tokens(get(u, s[keys[k]]), &f->usage[k])) return CL_DECLINE;  /* absurd: Python notes it */
        f->has_usage = 1;
    }
    if (f->model && PyUnicode_GET_LENGTH(f->model) && is(get(m, s[P_PROVIDER]), "openclaw")) {
        PyObject *mv = get(m, s[P_MODEL]);
        if (!(f->extra = PyDict_New()) || PyDict_SetItem(f->extra, s[P_SYNTHETIC_MODEL], mv) < 0) return CL_FAIL;
    }
    return CL_MADE;
}

/* a message line's facts and time (normalize's message branch) */
static int pi_message(Whole *self, PiParts *pp, PyObject *obj, int stats, PyObject *shared, CF *f, double *when, int *has) {
    PyObject **s = pp->s;
    PyObject *m = get(obj, s[P_MESSAGE]);
    if (!m || !PyDict_CheckExact(m)) return CL_DECLINE;
    PyObject *role = get(m, s[P_ROLE]);
    if (!IS_STR(role)) return CL_DECLINE;
    PyObject *mts = get(m, s[P_TIMESTAMP]);
    if (mts && (PyLong_CheckExact(mts) || PyFloat_CheckExact(mts))) {
        if (!pi_time(mts, when, has)) return CL_DECLINE;
    } else if (!pi_time(get(obj, s[P_TIMESTAMP]), when, has)) {
        return CL_DECLINE;
    }
    int code;  /* blocks_facts' role */
    if (is(role, "assistant")) code = 1;
    else if (is(role, "custom")) code = 2;
    else if (is(role, "user") || is(role, "branchSummary") || is(role, "compactionSummary") || is(role, "toolResult"))
        code = 0;
    else return CL_DECLINE;  /* bashExecution, hookMessage, unsent roles */
    f->kind = self->message;
    if (!SHARED(f->role, role)) return CL_FAIL;
    if (is(role, "toolResult")) return pi_result(pp, m, stats, shared, f);
    PyObject *content = get(m, s[P_CONTENT]);
    int r;
    if (code == 1 && !(content && PyList_CheckExact(content))) return CL_DECLINE;  /* pi-ai cannot send it: the Python's */
    if (content && PyUnicode_CheckExact(content)) {  /* text_only */
        Py_ssize_t visible = 0;
        text_fact(f, content, stats, &visible);
        f->nblocks = 1;
        f->empty = visible == 0;
    } else if (content && PyList_CheckExact(content)) {
        if ((r = blocks_facts(pp->cl, shared, stats, content, code, f)) != CL_MADE) return r;
    } else if (content && (PyUnicode_Check(content) || PyList_Check(content))) {
        return CL_DECLINE;
    } else {  /* no blocks */
        f->empty = 1;
    }
    return code == 1 ? pi_assistant(pp, m, stats, shared, f) : CL_MADE;
}

/* an entry that carries no message: its time, and what normalize keeps of a custom or model_change entry */
static int pi_other(Whole *self, PiParts *pp, PyObject *obj, PyObject *t, CF *f, double *when, int *has) {
    PyObject **s = pp->s;
    if (is(t, "session") || is(t, "compaction") || is(t, "branch_summary") || is(t, "custom_message")) return CL_DECLINE;
    if (!pi_time(get(obj, s[P_TIMESTAMP]), when, has)) return CL_DECLINE;
    PyObject *data = get(obj, s[P_DATA]);
    if (data && !PyDict_CheckExact(data)) {
        if (PyDict_Check(data)) return CL_DECLINE;
        data = NULL;
    }
    if (get(obj, s[P_CONTEXT_WINDOW]) || (data && get(data, s[P_CONTEXT_WINDOW]))) return CL_DECLINE;
    f->kind = self->meta;
    PyObject *none = Py_None;
    if (is(t, "custom")) {
        PyObject *v[4] = {get(obj, s[P_CUSTOM_TYPE]), data ? get(data, s[P_TIMESTAMP]) : NULL,
                          data ? get(data, s[P_PROVIDER]) : NULL, data ? get(data, s[P_MODEL_ID]) : NULL};
        static const int keys[4] = {P_CUSTOM_TYPE_X, P_DATA_TS, P_PROVIDER, P_MODEL};
        if (!(f->extra = PyDict_New())) return CL_FAIL;
        for (int k = 0; k < 4; k++)
            if (PyDict_SetItem(f->extra, s[keys[k]], v[k] ? v[k] : none) < 0) return CL_FAIL;
    } else if (is(t, "model_change")) {
        PyObject *p = get(obj, s[P_PROVIDER]), *mo = get(obj, s[P_MODEL_ID]);
        if (!(f->extra = PyDict_New()) || PyDict_SetItem(f->extra, s[P_PROVIDER], p ? p : none) < 0
            || PyDict_SetItem(f->extra, s[P_MODEL], mo ? mo : none) < 0)
            return CL_FAIL;
    }
    return CL_MADE;
}

/* the entry of a pi line of type t (a str), id and parent (strs or NULL: None; the id None when empty too), time
 * (when ``has``) and facts f, its strings shared (a new reference; its tuple with ``tuples``), NULL on error */
static PyObject *pi_entry(Whole *self, CF *f, PyObject *t, PyObject *id, PyObject *pid, int has, double when,
                          PyObject *index, PyObject *lineno, PyObject *offset, PyObject *length, PyObject *eol,
                          PyObject *shared, int tuples) {
    PyObject *out = NULL, *ty = NULL, *sid = NULL, *spid = NULL, *ts = NULL;
    if (SHARED(ty, t) && (!(id && PyUnicode_GET_LENGTH(id)) || SHARED(sid, id)) && (!pid || SHARED(spid, pid))
        && (!has || (ts = PyFloat_FromDouble(when)))) {
        Maker mk = whole_maker(self, tuples, eol);
        out = facts_entry(&mk, f, index, lineno, offset, length, ty, sid ? sid : Py_None, spid ? spid : Py_None,
                          ts ? ts : Py_None);
    }
    Py_XDECREF(ty);
    Py_XDECREF(sid);
    Py_XDECREF(spid);
    Py_XDECREF(ts);
    return out;
}

/* the entry of a parsed pi line (a new reference; its tuple with ``tuples``), None when declined, NULL on error */
static PyObject *pi_make(Whole *self, PyObject *obj, PyObject *index, PyObject *lineno, PyObject *offset,
                         PyObject *length, PyObject *eol, int stats, PyObject *shared, int tuples) {
    PiParts *pp = self->pi;
    PyObject **s = pp->s;
    if (!PyDict_CheckExact(obj) || (shared != Py_None && !PyDict_CheckExact(shared))) Py_RETURN_NONE;
    PyObject *t = get(obj, s[P_TYPE]), *id = get(obj, s[P_ID]), *pid = get(obj, s[P_PARENT]);
    if (!IS_STR(t) || !(NULLISH(pid) || PyUnicode_CheckExact(pid))) Py_RETURN_NONE;  /* parent_of's marks: Python's */
    if (id && !PyUnicode_CheckExact(id) && PyUnicode_Check(id)) Py_RETURN_NONE;
    if (id == Py_None) Py_RETURN_NONE;  /* an id written null: the Python notes it (null_id) */
    CF f = {0};
    f.kind = self->meta;
    double when = 0;
    int has = 0;
    int r = is(t, "message") ? pi_message(self, pp, obj, stats, shared, &f, &when, &has)
                             : pi_other(self, pp, obj, t, &f, &when, &has);
    PyObject *out = r == CL_DECLINE ? Py_NewRef(Py_None)
                  : r == CL_MADE ? pi_entry(self, &f, t, IS_STR(id) ? id : NULL, IS_STR(pid) ? pid : NULL, has, when, index,
                                            lineno, offset, length, eol, shared, tuples)
                                 : NULL;
    cf_clear(&f);
    return out;
}

/* ------------------------------------------------------------------- tool results read as bytes
 *
 * A toolResult line is most of a pi session's bytes (its tool's output), and normalize reads of it only the lengths
 * of its texts: such a line is checked byte by byte as Meta checks a Claude Code line (scan_value: what it accepts,
 * orjson or the strict fallback accepts too), its texts measured on the way (scan_text), and its entry made without
 * a Python object of it. Declined to the orjson path: any other line; an escaped key; a key written twice; an
 * escaped type, role, id, parent, call id or name; a parent, role, call id or name of another type; an isError other
 * than true, false or null; a time other than an integer or a string iso_z reads; a text that is a number. */

enum { PT_TYPE, PT_ID, PT_PARENT, PT_TIMESTAMP, PT_MESSAGE, NPT };
static const char *PT_KEYS[NPT] = {"type", "id", "parentId", "timestamp", "message"};
enum { PM_ROLE, PM_CALL_ID, PM_USE_ID, PM_NAME, PM_IS_ERROR, PM_TIMESTAMP, PM_CONTENT, NPM };
static const char *PM_KEYS[NPM] = {"role", "toolCallId", "toolUseId", "toolName", "isError", "timestamp", "content"};
enum { PB_TYPE, PB_TEXT, NPB };
static const char *PB_KEYS[NPB] = {"type", "text"};

typedef struct {
    cp vs[NPT], ve[NPT];     /* the top-level values' spans (vs NULL: absent) */
    cp ms[NPM], me[NPM];     /* the message's */
    long long text, images;  /* result_content_chars of its content */
    long long units;         /* the length of the block's text being read (block_text), when ``has_text`` */
    int has_text;
} PiBytes;

/* the key whose opening quote is at p, among keys[n]: its index, -1 for another key, -2 when escaped or invalid;
 * *after: past its closing quote */
static int key_of(cp p, cp end, const char **keys, int n, cp *after) {
    int esc;
    cp ks = p + 1, q = scan_string(ks, end, &esc);
    if (!q || esc) return -2;
    *after = q;
    size_t kl = (size_t)(q - 1 - ks);
    for (int k = 0; k < n; k++)
        if (kl && (unsigned char)keys[k][0] == *ks && strlen(keys[k]) == kl && memcmp(ks, keys[k], kl) == 0) return k;
    return -1;
}

/* whether a span is the string ``lit`` (written without escapes) */
static int span_is(cp s, cp e, const char *lit) {
    size_t n = strlen(lit);
    return s && (size_t)(e - s) == n + 2 && s[0] == '"' && memcmp(s + 1, lit, n) == 0;
}

/* an object's members, p just past its '{': the spans of the values of ``keys`` into vs/ve (each at most once), the
 * value of key ``special`` handed to ``on`` (which scans it), every other value scanned; the value of key ``must``, when
 * it is met, must be the string ``lit`` (else the line is left at once). NULL: declined or invalid */
typedef cp (*pi_value_fn)(cp p, cp end, int depth, PiBytes *b);

static cp pi_members(cp p, cp end, int depth, const char **keys, int n, cp *vs, cp *ve, int special, pi_value_fn on,
                     PiBytes *b, int must, const char *lit) {
    p = skip_ws(p, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        if (p >= end || *p != '"') return NULL;
        cp q;
        int k = key_of(p, end, keys, n, &q);
        if (k == -2) return NULL;
        p = skip_ws(q, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        cp v = p;
        if (k >= 0 && vs[k]) return NULL;  /* written twice (Python keeps the last) */
        p = k >= 0 && k == special ? on(p, end, depth, b) : scan_value(p, end, depth);
        if (!p) return NULL;
        if (k >= 0) {
            vs[k] = v;
            ve[k] = p;
            if (k == must && !span_is(v, p, lit)) return NULL;
        }
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        if (*p == '}') return p + 1;
        return NULL;
    }
}

/* a span that is a string without escapes, as its characters (inside the quotes): 1, or 0 */
static int plain_str(cp s, cp e, cp *cs, cp *ce) {
    if (!s || *s != '"' || memchr(s, '\\', (size_t)(e - s))) return 0;
    *cs = s + 1;
    *ce = e - 1;
    return 1;
}


/* a block's text: a string measured (scan_text), any other value scanned */
static cp block_text(cp p, cp end, int depth, PiBytes *b) {
    if (p < end && *p == '"') {
        int white;
        b->has_text = 1;
        return scan_text(p + 1, end, &b->units, &white);
    }
    return scan_value(p, end, depth);
}

/* one block of a tool result's content, p just past its '{': a text's length or an image counted */
static cp result_block(cp p, cp end, int depth, PiBytes *b) {
    cp vs[NPB] = {NULL, NULL}, ve[NPB];
    b->has_text = 0;
    p = pi_members(p, end, depth, PB_KEYS, NPB, vs, ve, PB_TEXT, block_text, b, -1, NULL);
    if (!p) return NULL;
    if (span_is(vs[PB_TYPE], ve[PB_TYPE], "text")) {
        cp t = vs[PB_TEXT];
        if (b->has_text) {
            b->text += b->units;
        } else if (t && (*t == '-' || (*t >= '0' && *t <= '9'))) {
            return NULL;  /* a number: as_text writes it (declined) */
        }
    } else if (span_is(vs[PB_TYPE], ve[PB_TYPE], "image")) {
        b->images++;
    } else if (vs[PB_TYPE] && *vs[PB_TYPE] == '"' && memchr(vs[PB_TYPE], '\\', (size_t)(ve[PB_TYPE] - vs[PB_TYPE]))) {
        return NULL;  /* an escaped type could spell either */
    }
    return p;
}

/* a tool result's content: result_content_chars (a string's length; an array's texts and images; else nothing) */
static cp result_content(cp p, cp end, int depth, PiBytes *b) {
    if (p >= end) return NULL;
    if (*p == '"') {
        long long units;
        int white;
        cp q = scan_text(p + 1, end, &units, &white);
        if (q) b->text += units;
        return q;
    }
    if (*p != '[') return scan_value(p, end, depth);
    if (depth > MAX_DEPTH) return NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (p >= end) return NULL;
        p = *p == '{' ? (depth + 1 > MAX_DEPTH ? NULL : result_block(p + 1, end, depth + 2, b)) : scan_value(p, end, depth + 1);
        if (!p) return NULL;
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        if (*p == ']') return p + 1;
        return NULL;
    }
}

static cp pi_message_members(cp p, cp end, int depth, PiBytes *b) {
    if (p >= end || *p != '{') return NULL;
    return pi_members(p + 1, end, depth + 1, PM_KEYS, NPM, b->ms, b->me, PM_CONTENT, result_content, b, PM_ROLE,
                      "toolResult");  /* (pi writes the role first: another message is left at once) */
}

/* an integer of epoch milliseconds at s..e (digits, a minus sign): 1 and *when in seconds when within years 1..9999;
 * 0 for anything else (a fraction, an exponent, out of range: declined) */
static int ms_span(cp s, cp e, double *when) {
    cp p = s;
    int neg = p < e && *p == '-';
    if (neg) p++;
    if (p >= e || e - p > 15) return 0;
    long long v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        v = v * 10 + (*p - '0');
    }
    if (neg) v = -v;
    if (v < -62135596800000LL || v > 253402300799999LL) return 0;
    *when = (double)v / 1000.0;
    return 1;
}

/* ts_field of a span (absent: s NULL): 1 with *has for a time or none, 0 declined */
static int pi_time_span(cp s, cp e, double *when, int *has) {
    *has = 0;
    if (!s || *s == 'n' || *s == 't' || *s == 'f' || *s == '{' || *s == '[') return 1;  /* no time */
    if (*s == '"') {
        cp cs, ce;
        if (!plain_str(s, e, &cs, &ce) || !iso_z(cs, ce - cs, when)) return 0;
        *has = 1;
        return 1;
    }
    if (!ms_span(s, e, when)) return 0;
    *has = 1;
    return 1;
}

/* a span's string (a new reference; NULL with *other 1 when it is no string, or -1 when escaped, -2 on error) */
static PyObject *span_str(cp s, cp e, int *other) {
    cp cs, ce;
    *other = 0;
    if (!s || *s != '"') { *other = 1; return NULL; }
    if (!plain_str(s, e, &cs, &ce)) { *other = -1; return NULL; }
    PyObject *v = PyUnicode_DecodeUTF8((const char *)cs, ce - cs, NULL);
    if (!v) *other = -2;
    return v;
}

/* the entry of a pi toolResult line read as bytes (a new reference), None when declined, NULL on error */
static PyObject *pi_bytes_entry(Whole *self, cp p, Py_ssize_t len, PyObject *index, PyObject *lineno, PyObject *offset,
                                PyObject *length) {
    PiParts *pp = self->pi;
    cp end = p + len;
    PiBytes b;
    memset(&b, 0, sizeof b);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') Py_RETURN_NONE;
    /* pi writes "type" first: a line of another type is left at once */
    cp q = skip_ws(p + 1, end);
    if (end - q < 17 || memcmp(q, "\"type\":\"message\"", 16) != 0) Py_RETURN_NONE;
    p = pi_members(p + 1, end, 1, PT_KEYS, NPT, b.vs, b.ve, PT_MESSAGE, pi_message_members, &b, PT_TYPE, "message");
    if (!p || skip_ws(p, end) != end) Py_RETURN_NONE;
    if (!span_is(b.vs[PT_TYPE], b.ve[PT_TYPE], "message") || !b.vs[PT_MESSAGE]
        || !span_is(b.ms[PM_ROLE], b.me[PM_ROLE], "toolResult"))
        Py_RETURN_NONE;
    cp err = b.ms[PM_IS_ERROR];
    if (err && *err != 't' && *err != 'f' && *err != 'n') Py_RETURN_NONE;
    double when = 0;
    int has = 0;
    cp mts = b.ms[PM_TIMESTAMP];
    if (mts && (*mts == '-' || (*mts >= '0' && *mts <= '9'))) {
        if (!pi_time_span(mts, b.me[PM_TIMESTAMP], &when, &has)) Py_RETURN_NONE;
    } else if (!pi_time_span(b.vs[PT_TIMESTAMP], b.ve[PT_TIMESTAMP], &when, &has)) {
        Py_RETURN_NONE;
    }
    cp ps = b.vs[PT_PARENT];
    if (ps && *ps != '"' && *ps != 'n') Py_RETURN_NONE;  /* parent_of's marks: Python's */
    if (b.vs[PT_ID] && *b.vs[PT_ID] == 'n') Py_RETURN_NONE;  /* an id written null: the Python notes it (null_id) */
    PyObject *id = NULL, *pid = NULL, *call_id = NULL, *name = NULL, *out = NULL;
    int o1, o2, o3, o4 = 1, o5;
    CF f = {0};
    id = span_str(b.vs[PT_ID], b.ve[PT_ID], &o1);
    pid = span_str(ps, b.ve[PT_PARENT], &o2);
    call_id = span_str(b.ms[PM_CALL_ID], b.me[PM_CALL_ID], &o3);
    if (!call_id && o3 == 1) call_id = span_str(b.ms[PM_USE_ID], b.me[PM_USE_ID], &o4);
    name = span_str(b.ms[PM_NAME], b.me[PM_NAME], &o5);
    if (o1 < 0 || o2 < 0 || o3 < 0 || o4 < 0 || o5 < 0) {
        out = o1 == -2 || o2 == -2 || o3 == -2 || o4 == -2 || o5 == -2 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    f.kind = self->message;
    int r = CL_FAIL;
    if ((f.role = share(self->shared, pp->s[P_TOOL_RESULT])))
        r = pi_result_facts(pp, self->shared, self->stats, call_id ? call_id : pp->cl->s[C_EMPTY_STR], name,
                            err && *err == 't', b.text, b.images, &f);
    if (r == CL_MADE)
        out = pi_entry(self, &f, pp->s[P_MESSAGE], id, pid, has, when, index, lineno, offset, length, self->eol,
                       self->shared, self->tuples);
done:
    cf_clear(&f);
    Py_XDECREF(id);
    Py_XDECREF(pid);
    Py_XDECREF(call_id);
    Py_XDECREF(name);
    return out;
}
