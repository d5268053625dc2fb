/* ctxtool._scan, included by _scan.c: the lines of a Claude Code file that formats.claude.normalize reads whole,
 * read by the C part's Meta (given its ``claude`` argument) as normalize, share_strings and release make
 * their entry: attachments, prompts and responses (the line checked as bytes; a prompt's or results' ``message`` read
 * from its bytes in its common shapes (``user_message_bytes``), a response's, or a prompt's of another shape, parsed
 * alone by orjson, a tool call's characters and problem asked of formats.common), system lines and checkpoints.
 *
 * Attachment lines: checked as a metadata line is, with what _attachment reads gathered on the way (``Att``):
 * ``attachment.type``, the rendered texts (their length in UTF-16 code units, whether each is white space only),
 * ``renderedRole`` and ``isSidechain``. Declined, as Meta declines a line: an escaped key, one of those keys written
 * twice (at the top, ``type`` in ``attachment``, ``content`` in a rendered item), an escaped kind or role, an
 * ``isSidechain`` other than true or false, or none (its key for the time bridge is the Python's: side_key).
 * tests/test_native_scan.py compares every recorded line and thousands of variants with the Python. */



/* Python's str.isspace for one code point */
static inline int is_space_cp(unsigned u) {
    return (u >= 9 && u <= 13) || (u >= 0x1c && u <= 0x20) || u == 0x85 || u == 0xa0 || u == 0x1680
           || (u >= 0x2000 && u <= 0x200a) || u == 0x2028 || u == 0x2029 || u == 0x202f || u == 0x205f || u == 0x3000;
}

/* scan_string that also counts the string's UTF-16 code units and tells whether every character is white space
 * (true of the empty string). p just past the opening quote; NULL where scan_string gives NULL. */
static cp scan_text(cp p, cp end, long long *units, int *white) {
    long long n = 0;
    int w = 1;
    for (;;) {
        Py_ssize_t k = plain_len(p, end);
        if (w)
            for (Py_ssize_t i = 0; i < k; i++)
                if (p[i] != ' ') { w = 0; break; }
        p += k;
        n += k;
        if (p >= end) return NULL;
        unsigned char c = *p;
        if (c == '"') {
            *units = n;
            *white = w;
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (p + 1 >= end) return NULL;
            unsigned char e = p[1];
            if (e == '"' || e == '\\' || e == '/' || e == 'b') {
                w = 0;
                n++;
                p += 2;
                continue;
            }
            if (e == 'f' || e == 'n' || e == 'r' || e == 't') {
                n++;
                p += 2;
                continue;
            }
            unsigned u;
            if (e != 'u' || !(p = u_escape(p, end, &u))) return NULL;
            if (u >= 0x10000) {  /* a pair: one character, 2 units */
                n += 2;
                w = 0;
            } else {
                n++;
                if (w && !is_space_cp(u)) w = 0;
            }
            continue;
        }
        if (c >= 0x80) {
            int k = utf8_seq(p, end);
            if (!k) return NULL;
            if (k == 4) {
                n += 2;
                w = 0;
            } else {
                n++;
                if (w) {
                    unsigned u = k == 2 ? (unsigned)(c & 0x1f) << 6 | (p[1] & 0x3f)
                                        : (unsigned)(c & 0x0f) << 12 | (unsigned)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
                    if (!is_space_cp(u)) w = 0;
                }
            }
            p += k;
            continue;
        }
        if (c != ' ') w = 0;
        n++;
        p++;
    }
}

/* An object's members, p just past its '{' (values at ``depth``): the value of member ``key`` (``klen`` bytes) handed
 * to ``on_key`` (which scans it), every other value scanned. NULL when invalid, when a key is escaped (it could
 * spell ``key``) or ``key`` is written twice (Python keeps the last): the line is declined. */
typedef cp (*member_fn)(cp p, cp end, int depth, Att *a, void *state);

/* an object's next member, p at its key's quote: the key's bytes (*ks, *kn) and the position of its value; NULL when
 * invalid or the key is escaped (it could spell one a caller looks for) */
static cp member_key(cp p, cp end, cp *ks, Py_ssize_t *kn) {
    int esc;
    if (p >= end || *p != '"') return NULL;
    *ks = p + 1;
    p = scan_string(*ks, end, &esc);
    if (!p || esc) return NULL;
    *kn = p - 1 - *ks;
    return colon_then(p, end);
}

/* past a member's value (*pp): 1 with *pp at the next member, 0 with *pp past the object's '}', -1 when invalid */
static int member_next(cp *pp, cp end) {
    cp p = next_token(*pp, end);
    if (p >= end) return -1;
    if (*p == ',') {
        *pp = next_token(p + 1, end);
        return 1;
    }
    if (*p == '}') {
        *pp = p + 1;
        return 0;
    }
    return -1;
}

static cp members(cp p, cp end, int depth, const char *key, Py_ssize_t klen, member_fn on_key, Att *a, void *state) {
    int seen = 0, r;
    p = skip_ws(p, end);
    if (p < end && *p == '}') return p + 1;
    do {
        cp ks;
        Py_ssize_t kn;
        if (!(p = member_key(p, end, &ks, &kn))) return NULL;
        if (kn == klen && memcmp(ks, key, (size_t)klen) == 0) {
            if (seen) return NULL;
            seen = 1;
            p = on_key(p, end, depth, a, state);
        } else {
            p = scan_value(p, end, depth);
        }
        if (!p) return NULL;
    } while ((r = member_next(&p, end)) > 0);
    return r == 0 ? p : NULL;
}

/* attachment.type: its span when a string without escapes (an escaped one is declined) */
static cp att_type(cp p, cp end, int depth, Att *a, void *state) {
    if (p < end && *p == '"') {
        int esc;
        cp s = p + 1;
        p = scan_string(s, end, &esc);
        if (!p || esc) return NULL;
        a->kind_set = 1;
        a->kind_s = s;
        a->kind_e = p - 1;
        return p;
    }
    a->kind_set = 0;
    return scan_value(p, end, depth);
}

/* one rendered item's content: counted when a string (state: its units, -1 when no string) */
static cp item_content(cp p, cp end, int depth, Att *a, void *state) {
    long long *units = state;
    if (p < end && *p == '"') {
        int white;
        p = scan_text(p + 1, end, units, &white);
        if (p && white) *units = -2 - *units;  /* white space only: told apart (as -2 - units) */
        return p;
    }
    *units = -1;
    return scan_value(p, end, depth);
}

/* ``rendered`` when a list, p just past its '[' (items at depth 2) */
static cp rendered_list(cp p, cp end, Att *a) {
    p = skip_ws(p, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (p >= end) return NULL;
        if (*p == '{') {
            long long units = -1;  /* (no content member: as a content that is no string) */
            p = members(p + 1, end, 3, "content", 7, item_content, a, &units);
            if (!p) return NULL;
            int white = units <= -2;
            long long n = white ? -2 - units : units;
            if (n > 0) {  /* a non-empty string (an empty one is not sent) */
                a->texts++;
                a->units += n;
                if (white) a->blank = 1;
                else a->visible = 1;
            }
        } else {
            p = scan_value(p, end, 2);
            if (!p) return NULL;
        }
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        if (*p == ']') return p + 1;
        return NULL;
    }
}

/* one of the AKEYS' values, p at its first byte */
static cp spans(cp p, cp end, int depth, const char *const *names, int nn, cp *vs, cp *ve);

/* an array, p at the value's first byte (NULL: absent), whose items are all of one kind: '"' strings of at most
 * ``max_units`` UTF-16 units, '{' objects, 'o' objects or arrays; at most ``max_count`` of them. 1 when it is, 0 when
 * not, -1 when its bytes are not read here (declined) */
static int list_of(cp p, cp end, int want, Py_ssize_t max_count, long long max_units) {
    if (!p || *p != '[') return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') return 1;
    for (Py_ssize_t n = 1;; n++) {
        if (p >= end) return -1;
        if (n > max_count) return 0;
        if (want == '"') {
            long long units;
            int white;
            if (*p != '"') return 0;
            if (!(p = scan_text(p + 1, end, &units, &white))) return -1;
            if (units > max_units) return 0;
        } else {
            if (!(*p == '{' || (want == 'o' && *p == '['))) return 0;
            if (!(p = scan_value(p, end, 3))) return -1;
        }
        p = skip_ws(p, end);
        if (p >= end) return -1;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        return *p == ']' ? 1 : -1;
    }
}

/* the attachment kinds whose data the client checks when it loads a transcript (formats.claude.payload_sent) */
enum { PK_NONE, PK_OBJECT, PK_STRING, PK_STRINGS, PK_OBJECTS, PK_SKILLS, PK_NAMES, PK_OTHER };

static int payload_kind(cp s, Py_ssize_t n) {
    static const struct { const char *name; int kind; } kinds[] = {
        {"file", PK_OBJECT}, {"already_read_file", PK_OBJECT}, {"hook_success", PK_STRING},
        {"hook_additional_context", PK_STRINGS}, {"task_reminder", PK_OBJECTS}, {"todo_reminder", PK_OBJECTS},
        {"invoked_skills", PK_SKILLS}, {"skill_listing", PK_NAMES}, {"withheld_memory", PK_OTHER},
        {"queued_command", PK_OTHER}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if ((size_t)n == strlen(kinds[k].name) && memcmp(s, kinds[k].name, (size_t)n) == 0) return kinds[k].kind;
    return PK_NONE;
}

static cp att_field(cp p, cp end, int which, Att *a) {
    if (p >= end) return NULL;
    switch (which) {
    case A_ATTACHMENT:
        if (*p != '{') return scan_value(p, end, 1);
        {
            cp q = members(p + 1, end, 2, "type", 4, att_type, a, NULL);
            int pk = q && a->kind_set ? payload_kind(a->kind_s, a->kind_e - a->kind_s) : PK_NONE;
            if (pk == PK_OTHER) {
                a->odd = 1;  /* (a withheld memory, a queued prompt (formats.claude.own_turn): the Python's) */
            } else if (pk != PK_NONE) {
                /* an attachment whose data fails the client's check is dropped (formats.claude.payload_sent): read
                 * again for it (a few lines a session; a field written twice is the Python's) */
                static const char *const names[] = {"content", "names", "skills"};
                cp vs[3], ve[3];
                if (!spans(p + 1, end, 2, names, 3, vs, ve)) return NULL;
                int ok = pk == PK_OBJECT ? vs[0] && *vs[0] == '{'
                       : pk == PK_STRING ? vs[0] && *vs[0] == '"'
                       : pk == PK_STRINGS ? list_of(vs[0], end, '"', PY_SSIZE_T_MAX, LLONG_MAX)
                       : pk == PK_OBJECTS ? list_of(vs[0], end, '{', PY_SSIZE_T_MAX, LLONG_MAX)
                       : pk == PK_SKILLS ? list_of(vs[2], end, 'o', PY_SSIZE_T_MAX, LLONG_MAX)
                       : !vs[1] || list_of(vs[1], end, '"', 4096, 512);
                if (ok < 0) a->odd = 1;
                a->unsent = !ok;
            }
            return q;
        }
    case A_RENDERED:
        return *p == '[' ? rendered_list(p + 1, end, a) : scan_value(p, end, 1);
    case A_ROLE:
        if (*p == '"') {
            int esc;
            cp s = p + 1;
            p = scan_string(s, end, &esc);
            if (!p) return NULL;
            if (esc) a->odd = 1;
            else {
                a->user = p - 1 - s == 4 && memcmp(s, "user", 4) == 0;
                a->role_system = p - 1 - s == 6 && memcmp(s, "system", 6) == 0;
            }
            return p;
        }
        return scan_value(p, end, 1);  /* any other value: "system" */
    case A_SIDE:  /* isSidechain: true or false; any other value is declined (its key is Python's: side_key) */
        if (end - p >= 4 && memcmp(p, "true", 4) == 0) { a->side = a->side_seen = 1; return p + 4; }
        if (end - p >= 5 && memcmp(p, "false", 5) == 0) { a->side_seen = 1; return p + 5; }
        a->odd = 1;
        return scan_value(p, end, 1);
    default:  /* the others: where the value is (read once the line's type is known) */
        a->vs[which] = p;
        p = scan_value(p, end, 1);
        a->ve[which] = p;
        return p;
    }
}

/* ------------------------------------------------------------------------------------- the entries */

enum {
    C_CONTENT, C_TYPE, C_TEXT, C_THINKING, C_SIGNATURE, C_THINKING_SIG, C_INPUT, C_ARGUMENTS, C_NAME, C_ID,
    C_TOOL_USE_ID, C_IS_ERROR, C_MODEL, C_STOP_REASON, C_USAGE, C_IN_TOKENS, C_OUT_TOKENS, C_CACHE_READ,
    C_CACHE_CREATION, C_ERROR, C_COMPACT_SUMMARY, C_SIDECHAIN, C_IS_META, C_NO_CONTENT, C_INTERRUPT, C_API_ERROR,
    C_SOURCE, C_SUBTYPE, C_LEAF, C_EXPLICIT, C_EMPTY_STR, C_PARTIAL_JSON, C_BAR, C_COMPANION, NCS
};
static const char *CSTR[NCS] = {
    "content", "type", "text", "thinking", "signature", "thinkingSignature", "input", "arguments", "name", "id",
    "tool_use_id", "is_error", "model", "stop_reason", "usage", "input_tokens", "output_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens", "error", "compact_summary", "sidechain", "is_meta",
    "no_content", "interrupt", "api_error", "source_tool_use", "subtype", "leaf", "explicit", "", "partialJson", "|",
    "companion"};

/* Meta's ``claude`` argument, a dict (Whole's ``pi`` too): call, result, usage (model's classes), args_chars,
 * call_problem (formats.common's), loads and dumps (orjson's), stop_map (formats.claude.STOP_MAP), interrupts
 * (INTERRUPT_TEXTS), image_chars (model.IMAGE_CHARS); for Meta also full, kinds (model.FullEntry and Kinds), message
 * and empty (model.MESSAGE and EMPTY), read by Meta_init */
struct ClaudeParts {
    PyObject *s[NCS];
    PyTypeObject *call, *result, *usage;
    Py_ssize_t coff[5], roff[5], uoff[6];
    PyObject *args_chars, *call_problem, *loads, *stop_map, *interrupts, *dumps;
    long long image_chars;
};

static void claude_parts_free(ClaudeParts *c) {
    if (!c) return;
    for (int k = 0; k < NCS; k++) Py_XDECREF(c->s[k]);
    Py_XDECREF(c->call);
    Py_XDECREF(c->result);
    Py_XDECREF(c->usage);
    Py_XDECREF(c->args_chars);
    Py_XDECREF(c->call_problem);
    Py_XDECREF(c->loads);
    Py_XDECREF(c->stop_map);
    Py_XDECREF(c->interrupts);
    Py_XDECREF(c->dumps);
    PyMem_Free(c);
}

static ClaudeParts *claude_parts(PyObject *d) {
    static const char *need[] = {"call", "result", "usage", "args_chars", "call_problem", "loads", "stop_map", "interrupts",
                                 "image_chars", "dumps"};
    PyObject *v[10];
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "claude is a dict");
        return NULL;
    }
    for (int k = 0; k < 10; k++) {
        v[k] = PyDict_GetItemString(d, need[k]);
        if (!v[k]) {
            PyErr_Format(PyExc_TypeError, "claude needs %s", need[k]);
            return NULL;
        }
    }
    if (!PyType_Check(v[0]) || !PyType_Check(v[1]) || !PyType_Check(v[2]) || !PyDict_CheckExact(v[6])
        || !PyTuple_CheckExact(v[7]) || !PyLong_CheckExact(v[8])) {
        PyErr_SetString(PyExc_TypeError, "claude: call, result and usage are classes, stop_map a dict, interrupts a tuple");
        return NULL;
    }
    ClaudeParts *c = PyMem_Calloc(1, sizeof(ClaudeParts));
    if (!c) { PyErr_NoMemory(); return NULL; }
    if (slot_offsets(v[0], CALL_SLOTS, 5, c->coff) < 0 || slot_offsets(v[1], RESULT_SLOTS, 5, c->roff) < 0
        || slot_offsets(v[2], USAGE_SLOTS, 6, c->uoff) < 0) {
        PyMem_Free(c);
        return NULL;
    }
    c->call = (PyTypeObject *)Py_NewRef(v[0]);
    c->result = (PyTypeObject *)Py_NewRef(v[1]);
    c->usage = (PyTypeObject *)Py_NewRef(v[2]);
    c->args_chars = Py_NewRef(v[3]);
    c->call_problem = Py_NewRef(v[4]);
    c->loads = Py_NewRef(v[5]);
    c->stop_map = Py_NewRef(v[6]);
    c->interrupts = Py_NewRef(v[7]);
    c->dumps = Py_NewRef(v[9]);
    c->image_chars = PyLong_AsLongLong(v[8]);
    if (c->image_chars == -1 && PyErr_Occurred()) {
        claude_parts_free(c);
        return NULL;
    }
    if (intern_all(c->s, CSTR, NCS) < 0) {
        claude_parts_free(c);
        return NULL;
    }
    return c;
}

/* the Maker of a Meta's entries (its attachments' classes; the calls', results' and usage's of its ClaudeParts) */
static Maker meta_maker(Meta *self) {
    ClaudeParts *c = self->cl;
    Maker mk = {self->tuples, self->afull, self->akinds, c ? c->call : NULL, c ? c->result : NULL, c ? c->usage : NULL,
                self->afoff, self->akoff, c ? c->coff : NULL, c ? c->roff : NULL, c ? c->uoff : NULL,
                self->eol, self->zero, self->empty};
    return mk;
}

static PyObject *cf_entry(Meta *self, CF *f, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                          PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts) {
    Maker mk = meta_maker(self);
    return facts_entry(&mk, f, index, no, start, size, ty, uuid, parent, ts);
}

/* the entry formats.claude.normalize (its _attachment) makes of an attachment line */
static PyObject *att_entry(Meta *self, Att *a, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                           PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts) {
    CF f = {0};
    PyObject *kind = NULL, *out = NULL;
    int message = a->texts > 0 && a->kind_set && !a->unsent;
    f.kind = message ? self->message : self->meta;
    if (a->kind_set && !a->unsent) {
        if (!(kind = shared_str(self, a->kind_s, a->kind_e - a->kind_s))) goto done;
    } else {
        kind = Py_NewRef(Py_None);  /* (no string, or data the client drops: no row that gives nothing, view) */
    }
    if (!(f.extra = PyDict_New()) || PyDict_SetItem(f.extra, self->s[AS_ATTACHMENT], kind) < 0) goto done;
    if (message) {
        /* the attribution attachment whose role is neither "user" nor "system" is rendered from its data, for the
         * user (formats.claude.USER_UNLESS_SYSTEM; judge fuzz seed 807) */
        int user = a->user || (!a->role_system && a->kind_e - a->kind_s == 21
                               && memcmp(a->kind_s, "remote_session_change", 21) == 0);
        if (PyDict_SetItem(f.extra, self->s[AS_CONTEXT], self->s[user ? AS_USER : AS_SYSTEM]) < 0) goto done;
        if (a->side && PyDict_SetItem(f.extra, self->s[AS_SIDECHAIN], Py_True) < 0) goto done;
        if (!(f.role = shared_str(self, (cp)"user", 4))) goto done;
        f.nblocks = a->texts;
        if (self->stats) f.chars = f.k[0] = a->units;
        f.empty = !a->visible;
        f.blank = a->blank;
    }
    if (!message && a->side && PyDict_SetItem(f.extra, self->s[AS_SIDE], Py_True) < 0) goto done;  /* side_key */
    out = cf_entry(self, &f, index, no, start, size, ty, uuid, parent, ts);
done:
    Py_XDECREF(kind);
    cf_clear(&f);
    return out;
}

/* ---------------------------------------------------------------- prompts, responses, system lines, checkpoints */

#define CL_DECLINE 0
#define CL_FAIL (-1)
#define CL_MADE 1

/* whether every character of s is white space (str.isspace, but true of ""), as "not text or text.isspace()" */
static int all_space(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, d, i))) return 0;
    return 1;
}

/* a top-level field's value as JSON true (1), false or null or absent (0), anything else (-1: its truth is Python's) */
static int flag(Att *a, int which) {
    cp p = a->vs[which];
    if (!p) return 0;
    if (*p == 't') return 1;
    if (*p == 'f' || *p == 'n') return 0;
    return -1;
}

/* a top-level field's value as a str (new reference): NULL with *other set when it is no string (or absent); NULL
 * without it when declined (an escape: *other = -1) or on error (*other = -2) */
static PyObject *top_str(Att *a, int which, int *other) {
    cp p = a->vs[which];
    *other = 0;
    if (!p || *p != '"') {
        *other = 1;
        return NULL;
    }
    if (memchr(p, '\\', (size_t)(a->ve[which] - p))) {
        *other = -1;
        return NULL;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p + 1, a->ve[which] - p - 2, NULL);
    if (!s) *other = -2;
    return s;
}

/* formats.common.count of a token count: 1 (and *out) unless absurd (0: declined, Python notes it) */
static int tokens(PyObject *v, long long *out) {
    *out = 0;
    if (!v) return 1;
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!(x >= 0 && x <= (double)MAX_COUNT_)) return 0;  /* (NaN fails) */
        *out = (long long)x;
        return 1;
    }
    if (!PyLong_CheckExact(v)) return 1;
    return count_(v, out);
}

/* model.as_text's length: a string's, "" for anything but a non-zero number (declined: str() of it is Python's) */
static int text_len(PyObject *v, long long *n) {
    *n = 0;
    if (v && PyUnicode_Check(v)) {
        *n = js_len_(v);
        return 1;
    }
    if (v && (PyLong_CheckExact(v) || PyFloat_CheckExact(v))) return PyObject_IsTrue(v) == 0;
    return 1;
}

/* formats.common.result_content_chars of a tool result's content, added to *text and *images: a string's length, an
 * array's texts (keyed ``text_key``) and images, nothing for anything else. 1, or 0 (declined) for a text it cannot
 * measure, or a str or list of a subclass (not from orjson) */
static int result_chars(PyObject *content, PyObject *type_key, PyObject *text_key, long long *text, long long *images) {
    if (content && PyUnicode_CheckExact(content)) {
        *text += js_len_(content);
    } else if (content && PyList_CheckExact(content)) {
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(content); j++) {
            PyObject *x = PyList_GET_ITEM(content, j);
            if (!PyDict_CheckExact(x)) continue;
            PyObject *xt = get(x, type_key);
            if (is(xt, "text")) {
                long long n;
                if (!text_len(get(x, text_key), &n)) return 0;
                *text += n;
            } else if (is(xt, "image")) {
                ++*images;
            }
        }
    } else if (content && (PyUnicode_Check(content) || PyList_Check(content))) {
        return 0;
    }
    return 1;
}

/* one text of a message: counted (with stats) and told visible or blank, as scan_anthropic_blocks does */
static void text_fact(CF *f, PyObject *text, int stats, Py_ssize_t *visible) {
    if (stats) {
        long long n = text ? js_len_(text) : 0;
        f->chars += n;
        f->k[0] += n;
    }
    if (text && PyUnicode_GET_LENGTH(text) && !all_space(text)) (*visible)++;
    else f->blank = 1;
}

/* whether v holds a float, or anything but dicts, lists, strings, ints of 64 bits, true, false and null, or nests deeper
 * than 64 levels: what orjson.dumps alone does not measure as formats.common.args_chars does */
static int needs_python(PyObject *v, int depth) {
    if (depth > 64) return 1;
    if (PyUnicode_CheckExact(v) || v == Py_None || v == Py_True || v == Py_False) return 0;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
        return overflow != 0;
    }
    if (PyList_CheckExact(v)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++)
            if (needs_python(PyList_GET_ITEM(v, i), depth + 1)) return 1;
        return 0;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        while (PyDict_Next(v, &pos, &k, &x))
            if (!PyUnicode_CheckExact(k) || needs_python(x, depth + 1)) return 1;
        return 0;
    }
    return 1;  /* a float, or another type */
}

/* formats.common.args_chars(args) (len(JSON.stringify(args))): a string's length, or, for an object or array of plain
 * values, the UTF-16 length of orjson.dumps(args) counted from its UTF-8 bytes; anything else (floats, which orjson
 * and JavaScript write differently; big integers; strings orjson refuses) asked of the Python. -1 on error */
static long long args_chars_(ClaudeParts *c, PyObject *args) {
    if (!args || args == Py_None) return 0;
    if (PyUnicode_CheckExact(args)) return js_len_(args);
    if ((PyDict_CheckExact(args) || PyList_CheckExact(args)) && !needs_python(args, 0)) {
        PyObject *out = PyObject_CallOneArg(c->dumps, args);
        if (out && PyBytes_Check(out)) {
            const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(out);
            Py_ssize_t n = PyBytes_GET_SIZE(out);
            long long units = 0;
            for (Py_ssize_t i = 0; i < n; i++) units += ((p[i] & 0xC0) != 0x80) + ((p[i] & 0xF8) == 0xF0);
            Py_DECREF(out);
            return units;
        }
        Py_XDECREF(out);
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;  /* (out of memory...) */
        PyErr_Clear();  /* a lone surrogate: the Python's way */
    }
    PyObject *r = PyObject_CallOneArg(c->args_chars, args);
    if (!r) return -1;
    long long n = PyLong_AsLongLong(r);
    Py_DECREF(r);
    return n == -1 && PyErr_Occurred() ? -1 : n;
}

/* whether s is a name formats.common.call_problem takes as it is: 1 to 64 characters of [A-Za-z0-9_:.-] (no white
 * space to strip) */
static int plain_name(PyObject *s) {
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_COMPACT_ASCII(s)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n < 1 || n > 64) return 0;
    const unsigned char *d = PyUnicode_1BYTE_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char ch = d[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == ':'
              || ch == '.' || ch == '-'))
            return 0;
    }
    return 1;
}

/* formats.common.call_problem(b, key) (a new reference): None for the common call (an id with a visible character, no
 * partialJson, arguments, a plain name), the Python's answer for any other */
static PyObject *call_problem_(ClaudeParts *c, PyObject *b, PyObject *key, PyObject *cid, PyObject *name) {
    PyObject *id = get(b, c->s[C_ID]), *partial = get(b, c->s[C_PARTIAL_JSON]), *args = get(b, key);
    if (id == cid && PyUnicode_CheckExact(cid) && PyUnicode_IS_COMPACT_ASCII(cid) && PyUnicode_GET_LENGTH(cid) > 0
        && !Py_UNICODE_ISSPACE(PyUnicode_1BYTE_DATA(cid)[0]) && NULLISH(partial) && !NULLISH(args)
        && get(b, c->s[C_NAME]) == name && plain_name(name))
        Py_RETURN_NONE;
    return PyObject_CallFunctionObjArgs(c->call_problem, b, key, NULL);
}

/* a tool result (block ``i``, its call's id ``rid``) and its characters: the text's, and its images' */
static int add_result(ClaudeParts *c, CF *f, Py_ssize_t i, PyObject *rid, int is_error, long long text, long long images) {
    long long chars = text + images * c->image_chars;
    if (add_item(&f->results, i, rid, Py_None, is_error ? Py_True : Py_False, chars) < 0) return -1;
    f->chars += chars;
    f->k[3] += text;
    f->k[4] += images * c->image_chars;
    return 0;
}

/* the block types scan_anthropic_blocks reads as a tool call: one table for the dict way (call_type) and the bytes way
 * (call_type_bytes, which leaves such a block to the dict way) */
static const char *const CALL_TYPES[] = {"tool_use", "toolCall", "toolUse", "functionCall", "tool_call", "function_call"};
#define NCALL_TYPES ((int)(sizeof CALL_TYPES / sizeof *CALL_TYPES))

static int call_type(PyObject *t) {
    for (int k = 0; k < NCALL_TYPES; k++)
        if (is(t, CALL_TYPES[k])) return 1;
    return 0;
}

static int str_is(cp p, cp e, const char *word);

static int call_type_bytes(cp t, cp te) {
    for (int k = 0; k < NCALL_TYPES; k++)
        if (str_is(t, te, CALL_TYPES[k])) return 1;
    return 0;
}

/* scan_anthropic_blocks over a message's content list; role: 0 user (and any role but these), 1 assistant, 2 toolResult
 * or custom (whose images count); ``shared``: the string table (None: none) */
static int blocks_facts(ClaudeParts *c, PyObject *shared, int stats, PyObject *content, int role, CF *f) {
    Py_ssize_t visible = 0, n = PyList_GET_SIZE(content);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(content, i);
        if (!PyDict_Check(b)) continue;
        PyObject *t = get(b, c->s[C_TYPE]);
        if (t && !PyUnicode_CheckExact(t)) t = NULL;
        if (is(t, "text")) {
            PyObject *text = get(b, c->s[C_TEXT]);
            text_fact(f, text && PyUnicode_Check(text) ? text : NULL, stats, &visible);
        } else if (is(t, "thinking") || is(t, "redacted_thinking")) {
            int redacted = is(t, "redacted_thinking");
            if (stats && role == 1 && !redacted) {
                long long m;
                if (!text_len(get(b, c->s[C_THINKING]), &m)) return CL_DECLINE;
                f->chars += m;
                f->k[1] += m;
            }
            PyObject *sig = get(b, c->s[C_SIGNATURE]), *tsig = get(b, c->s[C_THINKING_SIG]);
            int s1 = sig ? PyObject_IsTrue(sig) : 0, s2 = !s1 && tsig ? PyObject_IsTrue(tsig) : 0;
            if (s1 < 0 || s2 < 0) return CL_FAIL;
            if (s1 || s2 || redacted) f->signed_ = 1;
            visible++;
        } else if (call_type(t)) {
            int has = PyDict_Contains(b, c->s[C_INPUT]);
            if (has < 0) return CL_FAIL;
            PyObject *key = c->s[has ? C_INPUT : C_ARGUMENTS];
            PyObject *name = get(b, c->s[C_NAME]), *cid = get(b, c->s[C_ID]);
            if (!name || !PyUnicode_Check(name)) name = c->s[C_EMPTY_STR];
            if (!cid || !PyUnicode_Check(cid)) cid = c->s[C_EMPTY_STR];
            long long chars = 0;
            if (stats) {
                if ((chars = args_chars_(c, get(b, key))) < 0) return CL_FAIL;
                chars += js_len_(name);
            }
            PyObject *problem = call_problem_(c, b, key, cid, name);
            if (!problem) return CL_FAIL;
            PyObject *sid = share(shared, cid), *sname = sid ? share(shared, name) : NULL;
            int r = sname ? add_item(&f->calls, i, sid, sname, problem, chars) : -1;
            Py_DECREF(problem);
            Py_XDECREF(sid);
            Py_XDECREF(sname);
            if (r < 0) return CL_FAIL;
            f->chars += chars;
            f->k[2] += chars;
            visible++;
        } else if (is(t, "tool_result")) {
            PyObject *rid = get(b, c->s[C_TOOL_USE_ID]);
            if (!rid || !PyUnicode_Check(rid)) rid = c->s[C_EMPTY_STR];
            long long text = 0, images = 0;
            if (stats && !result_chars(get(b, c->s[C_CONTENT]), c->s[C_TYPE], c->s[C_TEXT], &text, &images))
                return CL_DECLINE;
            PyObject *err = get(b, c->s[C_IS_ERROR]);
            int is_error = err ? PyObject_IsTrue(err) : 0;
            if (is_error < 0) return CL_FAIL;
            PyObject *sid = share(shared, rid);
            int r = sid ? add_result(c, f, i, sid, is_error, text, images) : -1;
            Py_XDECREF(sid);
            if (r < 0) return CL_FAIL;
            visible++;
        } else if (is(t, "image")) {
            if (stats && role == 2) {
                f->chars += c->image_chars;
                f->k[4] += c->image_chars;
            }
            visible++;
        } else {
            visible++;
        }
    }
    f->nblocks = n;
    f->empty = visible == 0;
    return CL_MADE;
}

static int message_tail(Meta *self, int assistant, PyObject *m, Att *a, CF *f, int no_content, int interrupt);

/* normalize's reading of a prompt or response line whose message is the dict m */
static int message_facts(Meta *self, int assistant, PyObject *ty, PyObject *m, Att *a, CF *f) {
    ClaudeParts *c = self->cl;
    int stats = self->stats;
    PyObject *content = get(m, c->s[C_CONTENT]);
    f->kind = self->message;
    f->role = Py_NewRef(ty);  /* (the line's type, shared) */
    int r;
    int role = assistant ? 1 : 0;
    if (assistant && !(content && PyList_Check(content)))
        return CL_DECLINE;  /* a response whose content is no list (the client writes one): the Python tells white space
                             * as JavaScript trims it (SILENT_RESPONSE) */
    if (assistant && PyList_GET_SIZE(content)) {  /* no item an object with a type: SILENT_RESPONSE too */
        Py_ssize_t i = 0, n = PyList_GET_SIZE(content);
        for (; i < n; i++) {
            PyObject *b = PyList_GET_ITEM(content, i), *t = PyDict_Check(b) ? get(b, c->s[C_TYPE]) : NULL;
            if (t && PyUnicode_Check(t)) break;
        }
        if (i == n) return CL_DECLINE;
    }
    if (content && PyUnicode_Check(content)) {
        Py_ssize_t visible = 0;
        text_fact(f, content, stats, &visible);
        f->nblocks = 1;
        f->empty = visible == 0;
    } else if (content && PyList_Check(content)) {
        if (!assistant) {  /* _has_results */
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
                PyObject *b = PyList_GET_ITEM(content, i);
                if (PyDict_Check(b) && is(get(b, c->s[C_TYPE]), "tool_result")) { role = 2; break; }
            }
        }
        if ((r = blocks_facts(c, self->shared, stats, content, role, f)) != CL_MADE) return r;
    } else {
        return CL_DECLINE;  /* a prompt's content no string and no list: the Python marks it (UNREADABLE_CONTENT) */
    }
    int interrupt = 0;
    if (!assistant && !f->results && content) {  /* _interrupt_marker */
        PyObject *x = content;
        if (PyList_Check(x) && PyList_GET_SIZE(x) == 1 && PyDict_Check(PyList_GET_ITEM(x, 0))
            && is(get(PyList_GET_ITEM(x, 0), c->s[C_TYPE]), "text"))
            x = get(PyList_GET_ITEM(x, 0), c->s[C_TEXT]);
        if (x && PyUnicode_Check(x)) {
            interrupt = PySequence_Contains(c->interrupts, x);
            if (interrupt < 0) return CL_FAIL;
        }
    }
    int no_content = assistant && content && PyList_CheckExact(content) && PyList_GET_SIZE(content) == 0;
    return message_tail(self, assistant, m, a, f, no_content, interrupt);
}

/* what message_facts reads beyond the content: the line's flags, a response's stop, model, key and usage (from ``m``,
 * its message; NULL for a prompt), a result's source; ``no_content``, ``interrupt``: told by the caller */
static int message_tail(Meta *self, int assistant, PyObject *m, Att *a, CF *f, int no_content, int interrupt) {
    ClaudeParts *c = self->cl;
    int stats = self->stats;
    int summary = flag(a, A_COMPACT_SUMMARY), side = a->odd ? -1 : a->side, meta = flag(a, A_IS_META);
    if (summary < 0 || side < 0 || meta < 0) return CL_DECLINE;
    PyObject *keys[8], *vals[8];
    int nx = 0;
    if (summary) { keys[nx] = c->s[C_COMPACT_SUMMARY]; vals[nx++] = Py_True; }
    if (side) { keys[nx] = c->s[C_SIDECHAIN]; vals[nx++] = Py_True; }
    if (meta) { keys[nx] = c->s[C_IS_META]; vals[nx++] = Py_True; }
    if (no_content) { keys[nx] = c->s[C_NO_CONTENT]; vals[nx++] = Py_True; }
    if (interrupt) { keys[nx] = c->s[C_INTERRUPT]; vals[nx++] = Py_True; }
    if (assistant && m) {
        PyObject *stop = get(m, c->s[C_STOP_REASON]), *model = get(m, c->s[C_MODEL]);
        if (stop && PyUnicode_Check(stop)) {
            PyObject *mapped = PyDict_GetItemWithError(c->stop_map, stop);
            if (!mapped && PyErr_Occurred()) return CL_FAIL;
            if (!(f->stop = share(self->shared, mapped ? mapped : stop))) return CL_FAIL;
        }
        int synthetic = model && PyUnicode_Check(model) && PyUnicode_CompareWithASCIIString(model, "<synthetic>") == 0;
        cp api = a->vs[A_API_ERROR];
        if (api && *api == 't' && synthetic) {  /* the client's own error line (isApiErrorMessage is True) */
            Py_XSETREF(f->stop, share(self->shared, c->s[C_ERROR]));
            if (!f->stop) return CL_FAIL;
            keys[nx] = c->s[C_API_ERROR]; vals[nx++] = Py_True;
        }
        if (model && PyUnicode_Check(model) && !(f->model = share(self->shared, model))) return CL_FAIL;
        PyObject *mid = get(m, c->s[C_ID]);
        if (mid && PyUnicode_Check(mid) && PyUnicode_GET_LENGTH(mid) > 0)
            f->msg_key = Py_NewRef(mid);  /* (message.id alone: rule 4, judged) */
        else if (!mid || !(PyList_Check(mid) || PyDict_Check(mid) || PyObject_IsTrue(mid) == 1))
            return CL_DECLINE;  /* an id JavaScript reads as false: the Python marks it (FALSY_MESSAGE_ID) */
        PyObject *us = stats ? get(m, c->s[C_USAGE]) : NULL;
        if (us && PyDict_Check(us) && !synthetic) {
            static const int keys_[4] = {C_IN_TOKENS, C_OUT_TOKENS, C_CACHE_READ, C_CACHE_CREATION};
            for (int k = 0; k < 4; k++)
                if (!tokens(get(us, c->s[keys_[k]]), &f->usage[k])) return CL_DECLINE;
            f->has_usage = 1;
            f->placeholder = !stop || stop == Py_None;
        }
    }
    PyObject *src = NULL;
    if (f->results) {
        int other;
        src = top_str(a, A_SOURCE, &other);
        if (!src && other < 0) return other == -1 ? CL_DECLINE : CL_FAIL;
        if (src) { keys[nx] = c->s[C_SOURCE]; vals[nx++] = src; }
    }
    else if (!assistant) {  /* a user line the client writes beside a turn: its regrouping moves over it (claude_chain) */
        cp tc = a->vs[A_COMPANION], st = a->vs[A_SOURCE];
        if ((tc && *tc == 't') || (st && *st == '"')) { keys[nx] = c->s[C_COMPANION]; vals[nx++] = Py_True; }
    }
    if (nx) {
        f->extra = PyDict_New();
        for (int k = 0; f->extra && k < nx; k++)
            if (PyDict_SetItem(f->extra, keys[k], vals[k]) < 0) Py_CLEAR(f->extra);
    }
    Py_XDECREF(src);
    return nx && !f->extra ? CL_FAIL : CL_MADE;
}

/* --------------------------------------------------- a prompt's or results' message read from its bytes */

#define CL_PARSE 2  /* not read from the bytes: orjson parses the message (the way every response goes) */

/* An object's members, p just past its '{' (values at ``depth``): the value spans of the ``nn`` keys ``names`` (vs[k]
 * at the value, ve[k] past it; vs[k] NULL when absent), every other value scanned. NULL when a key is escaped (it could
 * spell one of them) or one of them is written twice (Python keeps the last), or the bytes are not JSON. */
static cp spans(cp p, cp end, int depth, const char *const *names, int nn, cp *vs, cp *ve) {
    int r;
    for (int k = 0; k < nn; k++) vs[k] = ve[k] = NULL;
    p = skip_ws(p, end);
    if (p < end && *p == '}') return p + 1;
    do {
        cp ks;
        Py_ssize_t kn;
        if (!(p = member_key(p, end, &ks, &kn))) return NULL;
        int which = -1;
        for (int k = 0; k < nn; k++)
            if (kn && *ks == (unsigned char)names[k][0] && (Py_ssize_t)strlen(names[k]) == kn
                && memcmp(ks, names[k], (size_t)kn) == 0) { which = k; break; }
        if (which >= 0 && vs[which]) return NULL;
        cp v = p;
        if (!(p = scan_value(p, end, depth))) return NULL;
        if (which >= 0) { vs[which] = v; ve[which] = p; }
    } while ((r = member_next(&p, end)) > 0);
    return r == 0 ? p : NULL;
}

/* whether the value at p is a string without escapes equal to the ASCII ``word`` */
static int str_is(cp p, cp e, const char *word) {
    Py_ssize_t n = (Py_ssize_t)strlen(word);
    return p && *p == '"' && e - p == n + 2 && memcmp(p + 1, word, (size_t)n) == 0;
}

/* a value that is a string: its UTF-16 length and whether it is white space only (1), or 0 (no string), -1 (declined:
 * a lone surrogate escape, which only the Python reads) */
static int text_units(cp p, cp e, long long *units, int *white) {
    *units = 0;
    *white = 1;
    if (!p || *p != '"') return 0;
    return scan_text(p + 1, e, units, white) == e ? 1 : -1;
}

/* JSON true (1), false or null or absent (0); anything else -1 (its truth is Python's) */
static int truth(cp p, cp e) {
    if (!p) return 0;
    Py_ssize_t n = e - p;
    if (n == 4 && memcmp(p, "true", 4) == 0) return 1;
    if ((n == 5 && memcmp(p, "false", 5) == 0) || (n == 4 && memcmp(p, "null", 4) == 0)) return 0;
    return -1;
}

/* result_chars of a tool result's content from its bytes: 1, or CL_PARSE for what the bytes alone do not tell (a text
 * that is a number, a lone surrogate) */
static int result_units(cp p, cp e, long long *text, long long *images) {
    static const char *const names[] = {"type", "text"};
    long long n;
    int white;
    if (!p) return 1;
    if (*p == '"') {
        if (text_units(p, e, &n, &white) < 0) return CL_PARSE;
        *text += n;
        return 1;
    }
    if (*p != '[') return 1;
    p = skip_ws(p + 1, e);
    if (p < e && *p == ']') return 1;
    for (;;) {
        if (p >= e) return CL_PARSE;
        cp q;
        if (*p == '{') {
            cp vs[2], ve[2];
            if (!(q = spans(p + 1, e, 6, names, 2, vs, ve))) return CL_PARSE;
            if (str_is(vs[0], ve[0], "text")) {
                if (vs[1] && *vs[1] != '"' && *vs[1] != '{' && *vs[1] != '[' && *vs[1] != 't' && *vs[1] != 'f'
                    && *vs[1] != 'n')
                    return CL_PARSE;  /* a number: model.as_text's str() of it is Python's */
                if (text_units(vs[1], ve[1], &n, &white) < 0) return CL_PARSE;
                *text += n;
            } else if (str_is(vs[0], ve[0], "image")) {
                ++*images;
            } else if (vs[0] && *vs[0] == '"' && memchr(vs[0], '\\', (size_t)(ve[0] - vs[0]))) {
                return CL_PARSE;  /* an escaped type could spell one of those */
            }
        } else if (!(q = scan_value(p, e, 5))) {
            return CL_PARSE;
        }
        p = skip_ws(q, e);
        if (p >= e) return CL_PARSE;
        if (*p == ',') { p = skip_ws(p + 1, e); continue; }
        if (*p == ']') return 1;
        return CL_PARSE;
    }
}

/* whether the text at p (a string) is one of the interrupt markers: 1 or 0, CL_PARSE when it has an escape */
static int interrupt_text(ClaudeParts *c, cp p, cp e) {
    if (memchr(p, '\\', (size_t)(e - p))) return CL_PARSE;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c->interrupts); i++) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(c->interrupts, i), &n);
        if (!u) return CL_FAIL;
        if (e - p == n + 2 && memcmp(p + 1, u, (size_t)n) == 0) return 1;
    }
    return 0;
}

/* message_facts of a prompt's or results' message read from its bytes (orjson made ~half of a folder's Claude Code
 * scan's objects of them, to be counted and dropped): a content that is a string, or a list of text, tool_result and
 * image blocks (any other type but thinking and calls) with the fields they read. CL_PARSE for any other shape, which
 * the dict way reads (f as it was given); CL_MADE, or CL_DECLINE / CL_FAIL as message_facts. */
static int user_message_bytes(Meta *self, PyObject *ty, Att *a, CF *f) {
    static const char *const mnames[] = {"content"};
    static const char *const bnames[] = {"type", "text", "tool_use_id", "content", "is_error"};
    enum { B_TYPE, B_TEXT, B_ID, B_CONTENT, B_ERROR };
    ClaudeParts *c = self->cl;
    int stats = self->stats;
    cp end = a->ve[A_MESSAGE], cv, ce;
    if (!spans(a->vs[A_MESSAGE] + 1, end, 2, mnames, 1, &cv, &ce)) return CL_PARSE;
    long long n, images = 0;
    int white, role = 0;
    Py_ssize_t visible = 0, nblocks = 0;
    cp is_ = NULL, ie = NULL;  /* the text that may be an interrupt marker */
    if (cv && *cv == '"') {
        if (text_units(cv, ce, &n, &white) < 0) return CL_PARSE;
        if (stats) { f->chars += n; f->k[0] += n; }
        if (white) f->blank = 1; else visible++;
        nblocks = 1;
        is_ = cv, ie = ce;
    } else if (cv && *cv == '[') {
        cp p = skip_ws(cv + 1, ce), only_text = NULL, only_text_e = NULL;
        if (p < ce && *p == ']') p = NULL;
        while (p) {
            if (p >= ce) return CL_PARSE;
            cp q;
            if (*p == '{') {
                cp vs[5], ve[5];
                if (!(q = spans(p + 1, ce, 4, bnames, 5, vs, ve))) return CL_PARSE;
                cp t = vs[B_TYPE], te = ve[B_TYPE];
                if (t && *t == '"' && memchr(t, '\\', (size_t)(te - t))) return CL_PARSE;
                if (str_is(t, te, "text")) {
                    int got = text_units(vs[B_TEXT], ve[B_TEXT], &n, &white);
                    if (got < 0) return CL_PARSE;
                    if (stats) { f->chars += n; f->k[0] += n; }
                    if (got && !white) visible++; else f->blank = 1;
                    if (nblocks == 0 && got) { only_text = vs[B_TEXT]; only_text_e = ve[B_TEXT]; }
                } else if (str_is(t, te, "tool_result")) {
                    role = 2;
                    long long text = 0, imgs = 0;
                    if (stats && result_units(vs[B_CONTENT], ve[B_CONTENT], &text, &imgs) != 1) return CL_PARSE;
                    int err = truth(vs[B_ERROR], ve[B_ERROR]);
                    if (err < 0) return CL_PARSE;
                    PyObject *rid;
                    cp r = vs[B_ID], re = ve[B_ID];
                    if (r && *r == '"') {
                        if (memchr(r, '\\', (size_t)(re - r))) return CL_PARSE;
                        rid = shared_str(self, r + 1, re - r - 2);
                    } else {
                        rid = share(self->shared, c->s[C_EMPTY_STR]);
                    }
                    int ok = rid ? add_result(c, f, nblocks, rid, err, text, imgs) : -1;
                    Py_XDECREF(rid);
                    if (ok < 0) return CL_FAIL;
                    visible++;
                } else if (str_is(t, te, "image")) {
                    images++;
                    visible++;
                } else if (str_is(t, te, "thinking") || str_is(t, te, "redacted_thinking") || call_type_bytes(t, te)) {
                    return CL_PARSE;
                } else {
                    visible++;
                }
            } else if (!(q = scan_value(p, ce, 3))) {
                return CL_PARSE;
            }
            nblocks++;
            p = skip_ws(q, ce);
            if (p >= ce) return CL_PARSE;
            if (*p == ',') { p = skip_ws(p + 1, ce); continue; }
            if (*p != ']') return CL_PARSE;
            break;
        }
        if (nblocks == 1 && only_text) is_ = only_text, ie = only_text_e;
        if (role == 2 && stats) {  /* (images beside results count) */
            f->chars += images * c->image_chars;
            f->k[4] += images * c->image_chars;
        }
    } else {
        return CL_DECLINE;  /* content no string and no list: the Python marks it (UNREADABLE_CONTENT, claude_chain._fold) */
    }
    int interrupt = 0;
    if (!f->results && is_ && *is_ == '"' && (interrupt = interrupt_text(c, is_, ie)) != 0 && interrupt != 1)
        return interrupt;  /* CL_PARSE or CL_FAIL */
    f->kind = self->message;
    f->role = Py_NewRef(ty);
    f->nblocks = nblocks;
    f->empty = visible == 0;
    return message_tail(self, 0, NULL, a, f, 0, interrupt);
}

/* --------------------------------------------------- a response's message read from its bytes */

#define JU_PARSE (-2)  /* what json_units leaves to the dict way */

/* the length in UTF-16 code units of a string as orjson.dumps (and JSON.stringify) writes it, from its bytes as the line
 * holds it, p just past its opening quote: the quotes, each character once (two units past U+FFFF), '"' and '\\' and the
 * control characters escaped (\b \t \n \f \r in two, the others in six), nothing else. Past its closing quote, or NULL
 * (invalid, or JU_PARSE in *bad: a lone surrogate, which orjson does not write) */
static cp ser_string(cp p, cp end, long long *units, int *bad) {
    long long n = 2;
    for (;;) {
        Py_ssize_t k = plain_len(p, end);
        p += k;
        n += k;
        if (p >= end) return NULL;
        unsigned char c = *p;
        if (c == '"') {
            *units = n;
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (p + 1 >= end) return NULL;
            unsigned char e = p[1];
            if (e == '/') { n += 1; p += 2; continue; }
            if (SIMPLE_ESCAPE[e]) { n += 2; p += 2; continue; }
            unsigned u;
            cp q = e == 'u' ? u_escape(p, end, &u) : NULL;
            if (!q) {
                if (e == 'u' && end - p >= 6) *bad = 1;  /* (a lone surrogate, or invalid: the dict way tells) */
                return NULL;
            }
            p = q;
            if (u >= 0x10000) n += 2;
            else if (u == 8 || u == 9 || u == 10 || u == 12 || u == 13 || u == '"' || u == '\\') n += 2;
            else if (u < 0x20) n += 6;
            else n += 1;
            continue;
        }
        if (c < 0x80) {  /* (a plain byte plain_len left: the last few of the bytes) */
            n++;
            p++;
            continue;
        }
        int k2 = utf8_seq(p, end);
        if (!k2) return NULL;
        n += k2 == 4 ? 2 : 1;
        p += k2;
    }
}

/* formats.common.args_chars of the object or array at p, from its bytes: the UTF-16 length of orjson.dumps of what it
 * holds (compact, each key once, strings as ser_string writes them), which JSON.stringify's is too. *after past it.
 * JU_PARSE for what the bytes alone do not tell: a number but a plain integer of at most 18 digits (orjson and
 * JavaScript write floats otherwise), a lone surrogate, an object with an escaped key or a key written twice (Python
 * keeps one), more than 64 levels or 32 keys an object; -1 when the bytes are not JSON (the line is invalid). */
static long long json_units(cp p, cp end, int depth, cp *after) {
    if (depth > 64) return JU_PARSE;
    long long n = 0;
    int bad = 0;
    p = skip_ws(p, end);
    if (p >= end) return -1;
    unsigned char c = *p;
    if (c == '"') {
        cp q = ser_string(p + 1, end, &n, &bad);
        if (!q) return bad ? JU_PARSE : -1;
        *after = q;
        return n;
    }
    if (c == 't' || c == 'n') {
        if (end - p < 4 || memcmp(p, c == 't' ? "true" : "null", 4) != 0) return -1;
        *after = p + 4;
        return 4;
    }
    if (c == 'f') {
        if (end - p < 5 || memcmp(p, "false", 5) != 0) return -1;
        *after = p + 5;
        return 5;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        cp q = scan_number(p, end);
        if (!q) return -1;
        Py_ssize_t len = q - p;
        for (cp x = p; x < q; x++)
            if (*x == '.' || *x == 'e' || *x == 'E') return JU_PARSE;
        if (len - (c == '-') > 18 || (c == '-' && len == 2 && p[1] == '0')) return JU_PARSE;  /* (-0 is written 0) */
        *after = q;
        return len;
    }
    if (c != '{' && c != '[') return -1;
    unsigned char close = c == '{' ? '}' : ']';
    cp ks[32];
    Py_ssize_t kl[32];
    int nk = 0;
    n = 2;
    p = skip_ws(p + 1, end);
    if (p < end && *p == close) {
        *after = p + 1;
        return n;
    }
    for (;;) {
        if (close == '}') {
            if (p >= end || *p != '"') return -1;
            long long u;
            cp q = ser_string(p + 1, end, &u, &bad);
            if (!q) return bad ? JU_PARSE : -1;
            cp k0 = p + 1;
            Py_ssize_t klen = q - 1 - k0;
            if (memchr(k0, '\\', (size_t)klen) || nk == 32) return JU_PARSE;
            for (int j = 0; j < nk; j++)
                if (kl[j] == klen && memcmp(ks[j], k0, (size_t)klen) == 0) return JU_PARSE;
            ks[nk] = k0;
            kl[nk++] = klen;
            n += u + 1;  /* (the colon) */
            p = skip_ws(q, end);
            if (p >= end || *p != ':') return -1;
            p++;
        }
        cp q;
        long long v = json_units(p, end, depth + 1, &q);
        if (v < 0) return v;
        n += v;
        p = skip_ws(q, end);
        if (p >= end) return -1;
        if (*p == ',') {
            n++;
            p = skip_ws(p + 1, end);
            continue;
        }
        if (*p != close) return -1;
        *after = p + 1;
        return n;
    }
}

/* JSON's truth of a value as Python's bool() tells it: 1 or 0 (absent: 0), CL_PARSE for a number, object or array */
static int truthy(cp p, cp e) {
    if (!p) return 0;
    if (*p == '"') return e - p > 2;
    int t = truth(p, e);
    return t < 0 ? CL_PARSE : t;
}

/* a small value of the message as a Python object (a new reference): a string without escapes decoded, null, else
 * orjson's reading of its bytes; NULL with an error set */
static PyObject *small_value(ClaudeParts *c, cp p, cp e) {
    if (*p == '"' && !memchr(p, '\\', (size_t)(e - p))) return PyUnicode_DecodeUTF8((const char *)p + 1, e - p - 2, NULL);
    if (e - p == 4 && memcmp(p, "null", 4) == 0) return Py_NewRef(Py_None);
    PyObject *view = PyMemoryView_FromMemory((char *)p, e - p, PyBUF_READ);
    PyObject *v = view ? PyObject_CallOneArg(c->loads, view) : NULL;
    Py_XDECREF(view);
    return v;
}

/* message_facts of a response's message read from its bytes (orjson parsed each to objects counted and dropped: 5.7% of
 * a folder's instructions): a content that is a string, or a list of text, thinking, call and other blocks with the
 * fields they read (a call's characters by json_units); its stop, model, id and usage into a small dict for
 * message_tail. CL_PARSE for any other shape (a tool result, a call with a problem, a float in its arguments), which
 * the dict way reads (f as it was given); CL_MADE, or CL_DECLINE / CL_FAIL as message_facts. */
static int assistant_message_bytes(Meta *self, PyObject *ty, Att *a, CF *f) {
    static const char *const mnames[] = {"content", "stop_reason", "model", "id", "usage"};
    enum { M_CONTENT, M_STOP, M_MODEL, M_ID, M_USAGE, NM };
    static const char *const bnames[] = {"type", "text", "thinking", "signature", "thinkingSignature", "id", "name",
                                         "input", "arguments", "partialJson"};
    enum { B_TYPE, B_TEXT, B_THINKING, B_SIG, B_TSIG, B_ID, B_NAME, B_INPUT, B_ARGS, B_PARTIAL, NB };
    static const char *const unames[] = {"input_tokens", "output_tokens", "cache_read_input_tokens",
                                         "cache_creation_input_tokens"};
    static const int ukeys[4] = {C_IN_TOKENS, C_OUT_TOKENS, C_CACHE_READ, C_CACHE_CREATION};
    ClaudeParts *c = self->cl;
    int stats = self->stats;
    cp end = a->ve[A_MESSAGE], mv[NM], me[NM];
    if (!spans(a->vs[A_MESSAGE] + 1, end, 2, mnames, NM, mv, me)) return CL_PARSE;
    cp cv = mv[M_CONTENT], ce = me[M_CONTENT];
    long long n;
    int white, no_content = 0;
    Py_ssize_t visible = 0, nblocks = 0, typed = 0;
    if (!cv || *cv != '[') {
        return CL_DECLINE;  /* no list (the client writes one): the Python's, which tells white space as JavaScript
                             * trims it (SILENT_RESPONSE); message_facts declines it too */
    } else {
        cp p = skip_ws(cv + 1, ce);
        if (p < ce && *p == ']') { p = NULL; no_content = 1; }
        while (p) {
            if (p >= ce) return CL_PARSE;
            cp q;
            if (*p == '{') {
                cp vs[NB], ve[NB];
                if (!(q = spans(p + 1, ce, 4, bnames, NB, vs, ve))) return CL_PARSE;
                cp t = vs[B_TYPE], te = ve[B_TYPE];
                if (t && *t == '"' && memchr(t, '\\', (size_t)(te - t))) return CL_PARSE;
                if (t && *t == '"') typed++;
                if (str_is(t, te, "text")) {
                    int got = text_units(vs[B_TEXT], ve[B_TEXT], &n, &white);
                    if (got < 0) return CL_PARSE;
                    if (stats) { f->chars += n; f->k[0] += n; }
                    if (got && !white) visible++; else f->blank = 1;
                } else if (str_is(t, te, "thinking") || str_is(t, te, "redacted_thinking")) {
                    int redacted = t[1] == 'r';
                    if (stats && !redacted) {
                        cp x = vs[B_THINKING];
                        if (x && (*x == '-' || (*x >= '0' && *x <= '9'))) return CL_PARSE;  /* (str() of a number) */
                        if (text_units(x, ve[B_THINKING], &n, &white) < 0) return CL_PARSE;
                        f->chars += n;
                        f->k[1] += n;
                    }
                    int s1 = truthy(vs[B_SIG], ve[B_SIG]), s2 = s1 ? 0 : truthy(vs[B_TSIG], ve[B_TSIG]);
                    if (s1 == CL_PARSE || s2 == CL_PARSE) return CL_PARSE;
                    if (s1 || s2 || redacted) f->signed_ = 1;
                    visible++;
                } else if (call_type_bytes(t, te)) {
                    cp id = vs[B_ID], ide = ve[B_ID], nm = vs[B_NAME], nme = ve[B_NAME];
                    cp args = vs[B_INPUT] ? vs[B_INPUT] : vs[B_ARGS], argse = vs[B_INPUT] ? ve[B_INPUT] : ve[B_ARGS];
                    /* call_problem's common call, as call_problem_ takes it: else the dict way */
                    if (!id || *id != '"' || ide - id < 3 || id[1] == ' ' || !nm || *nm != '"' || nme - nm < 3
                        || nme - nm > 66 || (vs[B_PARTIAL] && truth(vs[B_PARTIAL], ve[B_PARTIAL]) != 0)
                        || (vs[B_PARTIAL] && *vs[B_PARTIAL] != 'n') || !args || (*args == 'n'))
                        return CL_PARSE;
                    for (cp x = id + 1; x < ide - 1; x++)
                        if (*x >= 0x80 || *x == '\\') return CL_PARSE;
                    for (cp x = nm + 1; x < nme - 1; x++) {
                        unsigned char ch = *x;
                        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'
                              || ch == ':' || ch == '.' || ch == '-'))
                            return CL_PARSE;
                    }
                    long long chars = 0;
                    if (stats) {
                        if (*args == '{' || *args == '[') {
                            cp after;
                            chars = json_units(args, argse, 5, &after);
                            if (chars < 0 || after != argse) return CL_PARSE;
                        } else if (*args == '"') {
                            if (text_units(args, argse, &chars, &white) < 0) return CL_PARSE;
                        } else {
                            return CL_PARSE;  /* (a number or truth: the Python's) */
                        }
                        chars += nme - nm - 2;
                    }
                    PyObject *sid = shared_str(self, id + 1, ide - id - 2);
                    PyObject *sname = sid ? shared_str(self, nm + 1, nme - nm - 2) : NULL;
                    int r = sname ? add_item(&f->calls, nblocks, sid, sname, Py_None, chars) : -1;
                    Py_XDECREF(sid);
                    Py_XDECREF(sname);
                    if (r < 0) return CL_FAIL;
                    f->chars += chars;
                    f->k[2] += chars;
                    visible++;
                } else if (str_is(t, te, "tool_result")) {
                    return CL_PARSE;
                } else {
                    visible++;  /* (an image, or another type) */
                }
            } else if (!(q = scan_value(p, ce, 3))) {
                return CL_PARSE;
            }
            nblocks++;
            p = skip_ws(q, ce);
            if (p >= ce) return CL_PARSE;
            if (*p == ',') { p = skip_ws(p + 1, ce); continue; }
            if (*p != ']') return CL_PARSE;
            break;
        }
        if (nblocks && !typed) return CL_DECLINE;  /* no item an object with a type: SILENT_RESPONSE, the Python's */
    }
    /* the message's other fields message_tail reads, as a small dict */
    PyObject *m = PyDict_New();
    if (!m) return CL_FAIL;
    static const int mkeys[NM] = {C_CONTENT, C_STOP_REASON, C_MODEL, C_ID, C_USAGE};
    int r = CL_MADE;
    for (int k = M_STOP; k < NM && r == CL_MADE; k++) {
        if (!mv[k]) continue;
        PyObject *v;
        if (k == M_USAGE && *mv[k] == '{') {
            cp uv[4], ue[4];
            if (!spans(mv[k] + 1, me[k], 3, unames, 4, uv, ue)) { r = CL_PARSE; break; }
            if (!(v = PyDict_New())) { r = CL_FAIL; break; }
            for (int u = 0; u < 4 && r == CL_MADE; u++) {
                if (!uv[u]) continue;
                PyObject *x = small_value(c, uv[u], ue[u]);
                if (!x || PyDict_SetItem(v, c->s[ukeys[u]], x) < 0) r = PyErr_ExceptionMatches(PyExc_ValueError) ? CL_PARSE : CL_FAIL;
                Py_XDECREF(x);
            }
        } else if (!(v = small_value(c, mv[k], me[k]))) {
            r = PyErr_ExceptionMatches(PyExc_ValueError) ? CL_PARSE : CL_FAIL;
            break;
        }
        if (r == CL_MADE && PyDict_SetItem(m, c->s[mkeys[k]], v) < 0) r = CL_FAIL;
        Py_DECREF(v);
    }
    if (r == CL_PARSE) PyErr_Clear();
    if (r == CL_MADE) {
        f->kind = self->message;
        f->role = Py_NewRef(ty);
        f->nblocks = nblocks;
        f->empty = visible == 0;
        r = message_tail(self, 1, m, a, f, no_content, 0);
    }
    Py_DECREF(m);
    return r;
}

/* whether a user line's ``origin`` object (its bytes from p to e) may be a task notification's: it holds the kind's
 * name, or an escape that could spell it; another origin (a typed prompt's) is no concern of formats.claude_origin */
static int may_notify(cp p, cp e) {
    static const char KIND[] = "task-notification";
    const Py_ssize_t n = sizeof KIND - 1;
    for (; p < e; p++) {
        if (*p == '\\') return 1;
        if (*p == 't' && e - p >= n && memcmp(p, KIND, (size_t)n) == 0) return 1;
    }
    return 0;
}

/* the entry normalize makes of a prompt, response, system or last-prompt line (a new reference), None when declined */
static PyObject *claude_entry(Meta *self, int lt, Att *a, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                              PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts) {
    ClaudeParts *c = self->cl;
    CF f = {0};
    f.kind = self->meta;
    int r = CL_MADE, other;
    if (lt == LT_SYSTEM) {  /* (a compact boundary and a local command's output are left to the Python) */
        PyObject *sub = top_str(a, A_SUBTYPE, &other);
        if (!sub && (other < 0 || (a->vs[A_SUBTYPE] && *a->vs[A_SUBTYPE] != 'n'))) {
            r = other == -2 ? CL_FAIL : CL_DECLINE;
        } else if (sub && (PyUnicode_CompareWithASCIIString(sub, "compact_boundary") == 0
                           || PyUnicode_CompareWithASCIIString(sub, "local_command") == 0)) {
            r = CL_DECLINE;  /* (a local command's output is a prompt the client sends: formats.claude._read) */
        } else if (!(f.extra = PyDict_New()) || PyDict_SetItem(f.extra, c->s[C_SUBTYPE], sub ? sub : Py_None) < 0) {
            r = CL_FAIL;
        }
        Py_XDECREF(sub);
    } else if (lt == LT_LAST_PROMPT) {
        if (a->vs[A_LEAF]) {
            PyObject *leaf = top_str(a, A_LEAF, &other);
            if (!leaf && other < 0) {
                r = other == -2 ? CL_FAIL : CL_DECLINE;
            } else {
                PyObject *sl = leaf ? share(self->shared, leaf) : Py_NewRef(Py_None);
                PyObject *explicit_ = a->vs[A_EXPLICIT] && *a->vs[A_EXPLICIT] == 't' ? Py_True : Py_False;
                if (!sl || !(f.extra = PyDict_New()) || PyDict_SetItem(f.extra, c->s[C_LEAF], sl) < 0
                    || PyDict_SetItem(f.extra, c->s[C_EXPLICIT], explicit_) < 0)
                    r = CL_FAIL;
                Py_XDECREF(sl);
            }
            Py_XDECREF(leaf);
        }
    } else if (lt == LT_USER && flag(a, A_IS_META)) {
        r = CL_DECLINE;  /* a meta prompt line (the client's notes, a hook's text): the Python's (formats.claude.meta_text) */
    } else if (lt == LT_USER && a->vs[A_ORIGIN] && *a->vs[A_ORIGIN] == '{' && may_notify(a->vs[A_ORIGIN], a->ve[A_ORIGIN])) {
        r = CL_DECLINE;  /* a background task's notification, which the client frames: formats.claude_origin */
    } else if (lt == LT_USER && !(a->vs[A_MESSAGE] && *a->vs[A_MESSAGE] == '{')) {
        r = CL_DECLINE;  /* a prompt line whose message is no object: the Python marks it (UNREADABLE_CONTENT) */
    } else if (a->vs[A_MESSAGE] && *a->vs[A_MESSAGE] == '{'
               && (r = lt == LT_USER ? user_message_bytes(self, ty, a, &f) : assistant_message_bytes(self, ty, a, &f))
                      == CL_PARSE) {
        /* a response, or a prompt the bytes did not tell: its message parsed alone */
        cf_clear(&f);
        f = (CF){0};
        f.kind = self->meta;
        r = CL_MADE;
        PyObject *view = PyMemoryView_FromMemory((char *)a->vs[A_MESSAGE], a->ve[A_MESSAGE] - a->vs[A_MESSAGE], PyBUF_READ);
        PyObject *m = view ? PyObject_CallOneArg(c->loads, view) : NULL;
        Py_XDECREF(view);
        if (!m) {
            if (view && PyErr_ExceptionMatches(PyExc_ValueError)) {  /* not JSON to orjson (deep, a huge number) */
                PyErr_Clear();
                r = CL_DECLINE;
            } else {
                r = CL_FAIL;
            }
        } else {
            r = PyDict_Check(m) ? message_facts(self, lt == LT_ASSISTANT, ty, m, a, &f) : CL_DECLINE;
            Py_DECREF(m);
        }
    }  /* (else: a prompt or response without a message object: a metadata entry) */
    if (r == CL_MADE && a->side && lt != LT_LAST_PROMPT) {  /* a row marked true but not as a subagent's: side_key */
        int has = f.extra ? PyDict_Contains(f.extra, c->s[C_SIDECHAIN]) : 0;
        if (has < 0 || (!has && ((!f.extra && !(f.extra = PyDict_New()))
                                 || PyDict_SetItem(f.extra, self->s[AS_SIDE], Py_True) < 0)))
            r = CL_FAIL;
    }
    PyObject *out = r == CL_MADE ? cf_entry(self, &f, index, no, start, size, ty, uuid, parent, ts)
                                 : r == CL_DECLINE ? Py_NewRef(Py_None) : NULL;
    cf_clear(&f);
    return out;
}
