/* ctxtool._scan, included by _scan.c: the lines read whole (parsed by orjson) and normalized in C: ``Whole``, of a
 * Codex rollout here, of a pi session given ``pi=`` (_scan_pi.c, with its own pi_make in place of codex_make).
 *
 * ``Whole.entry(obj, index, lineno, offset, length, eol, stats, shared)`` is what the scan does with one
 * parsed line of a rollout when nobody reads its blocks: ``full_entry`` + ``formats.codex.normalize(obj, e,
 * blocks=False, stats)`` + ``share_strings(e, shared)`` + ``e.release()``, in one call. It takes the
 * lines Codex 0.169 writes most (response items: messages of text, reasoning, function and custom tool
 * calls and their string outputs; events; turn contexts) and declines (returns None, having changed
 * nothing) every other line and every field of an unexpected type, which the Python code then reads:
 * session_meta, compacted and other line types; a line-level metadata that is not null; an ordinal or a
 * timestamp not of the common form (a timestamp other than YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z); a type,
 * role, id, status, name, call id, arguments, input, output or passthrough field of another type; a
 * message content item other than a text with a string text; local shell and tool search calls; a
 * rollback event; a token count that is a float or out of range. So an entry it makes is the one the
 * Python code makes (tests/test_codex_native.py compares both on every line of every Codex fixture and
 * of damaged variants of them). One difference, in what is shared only (see ``share``): the item and call ids of
 * the entries made here are not put in the string table, where ``share_strings`` puts every string: equal values,
 * other objects. */

#define U64_MAX_ ((unsigned long long)-1)

enum {
    S_TYPE, S_PAYLOAD, S_TIMESTAMP, S_ORDINAL, S_METADATA, S_ID, S_PASSTHROUGH, S_TURN_ID, S_CREATE_TIME, S_ROLE,
    S_CONTENT, S_STATUS, S_TEXT, S_SUMMARY, S_ENCRYPTED, S_NAME, S_ARGUMENTS, S_INPUT, S_CALL_ID, S_OUTPUT, S_INFO,
    S_LAST, S_INPUT_TOKENS, S_CACHED, S_OUTPUT_TOKENS, S_TOTAL_TOKENS, S_TOTAL_USAGE, S_WINDOW, S_MODEL,
    S_ASSISTANT, S_USER, S_TOOL_RESULT, S_EVENT, S_TURN, S_CONTEXT, S_DEVELOPER, S_ODD_ROLE, S_ENVIRONMENT,
    S_CONTEXT_WINDOW, S_NAMESPACE, S_PHASE, S_ANNOTATIONS, S_LOGPROBS, S_ROLLBACK_TRIM, NSTR
};
static const char *CODEX_STR[NSTR] = {
    "type", "payload", "timestamp", "ordinal", "metadata", "id", "internal_chat_message_metadata_passthrough",
    "turn_id", "create_time", "role", "content", "status", "text", "summary", "encrypted_content", "name",
    "arguments", "input", "call_id", "output", "info", "last_token_usage", "input_tokens", "cached_input_tokens",
    "output_tokens", "total_tokens", "total_token_usage", "model_context_window", "model", "assistant", "user",
    "toolResult", "event", "turn", "context", "developer", "odd_role", "environment", "context_window", "namespace",
    "phase", "annotations", "logprobs", "rollback_trim"};

/* formats.codex.CONTEXT_MARKERS: a user message one of whose input_text items, white space trimmed, starts with one of
 * these and ends with its closing one, in any ASCII case, is context Codex renders */
static const char *CONTEXT_MARKER[][2] = {
    {"<environment_context>", "</environment_context>"}, {"# agents.md instructions", "</instructions>"},
    {"<turn_aborted>", "</turn_aborted>"}, {"<user_shell_command>", "</user_shell_command>"}, {"<skill>", "</skill>"},
    {"<subagent_notification>", "</subagent_notification>"}, {"<recommended_plugins>", "</recommended_plugins>"},
    {"<goal_context>", "</goal_context>"}};
#define NMARKERS 8
/* formats.codex.TRIMMED_DEVELOPER: a developer message one of whose input_text items starts with one of these, in any
 * ASCII case, after white space, is trimmed with a rolled-back turn it stands right above (rule 7) */
static const char *TRIMMED_DEVELOPER[] = {
    "<permissions instructions>", "<model_switch>", "<persistent_mode>", "<apps_instructions>", "<collaboration_mode>",
    "<multi_agent_role>", "<multi_agent_mode>", "<environments_instructions>", "<git_attribution>",
    "<realtime_conversation>", "<tools>", "<personality_spec>", "<token_budget>", "<context_window_guidance>",
    "<context_window>", "<skills_instructions>", "<plugins_instructions>", "<rollout_budget>",
    "approved command prefix saved:"};
#define NTRIMMED 19

typedef struct {
    PyObject_HEAD
    PyTypeObject *full;
    PyObject *call, *result, *kinds, *usage, *empty, *meta, *message, *zero, *unit;
    PyObject *s[NSTR];
    Py_ssize_t foff[NFULL];
    PyTypeObject *kinds_cls, *call_cls, *result_cls, *usage_cls;  /* the same classes as kinds, call... */
    Py_ssize_t koff[6], coff[5], roff[5], uoff[6];
    /* what a Reader's lines are taken into (``take``): */
    PyObject *into;    /* the list entries (or tuples) are appended to, or NULL: ``entry`` only */
    PyObject *shared;  /* the string table, or None */
    PyObject *loads;   /* orjson.loads */
    int tuples;        /* take entry tuples (model.entry_to_tuple's), not entries: a helper's part */
    PyObject *eol;     /* b"\n", the entries' line ending */
    PyObject *sizes;   /* one int object per line length (a dict), or NULL */
    int stats;
    Py_ssize_t cap;    /* > 0: a line is given out when ``into`` holds this many (the caller empties it then) */
    PiParts *pi;       /* a pi session's lines, not a rollout's (``pi=``; _scan_pi.c), or NULL */
} Whole;

/* the Maker of a Whole's entries (its classes and their slots; objects, or their tuples with ``tuples``) */
static inline Maker whole_maker(Whole *self, int tuples, PyObject *eol) {
    Maker mk = {tuples, self->full, self->kinds_cls, self->call_cls, self->result_cls, self->usage_cls, self->foff,
                self->koff, self->coff, self->roff, self->uoff, eol, self->zero, self->empty};
    return mk;
}

static void pi_parts_free(PiParts *p);
static PiParts *pi_parts(PyObject *d);
static PyObject *pi_make(Whole *self, PyObject *obj, PyObject *index, PyObject *lineno, PyObject *offset,
                         PyObject *length, PyObject *eol, int stats, PyObject *shared, int tuples);
static PyObject *pi_bytes_entry(Whole *self, cp p, Py_ssize_t len, PyObject *index, PyObject *lineno, PyObject *offset,
                                PyObject *length);

static void Whole_dealloc(Whole *self) {
    Py_XDECREF(self->full);
    Py_XDECREF(self->call);
    Py_XDECREF(self->result);
    Py_XDECREF(self->kinds);
    Py_XDECREF(self->usage);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->meta);
    Py_XDECREF(self->message);
    Py_XDECREF(self->zero);
    Py_XDECREF(self->unit);
    Py_XDECREF(self->into);
    Py_XDECREF(self->shared);
    Py_XDECREF(self->loads);
    Py_XDECREF(self->eol);
    Py_XDECREF(self->sizes);
    for (int k = 0; k < NSTR; k++) Py_XDECREF(self->s[k]);
    pi_parts_free(self->pi);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Whole_init(Whole *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"full", "call", "result", "kinds", "usage", "empty", "meta", "message", "into", "shared",
                            "loads", "tuples", "eol", "stats", "cap", "sizes", "pi", NULL};
    PyObject *full, *call, *result, *kinds, *usage, *empty, *meta, *message;
    PyObject *into = NULL, *shared = Py_None, *loads = NULL, *eol = NULL, *sizes = Py_None, *pi = Py_None;
    int stats = 1, tuples = 0;
    Py_ssize_t cap = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!O!O!O!OOO|$O!OOpOpnOO", names, &PyType_Type, &full, &PyType_Type, &call,
                                     &PyType_Type, &result, &PyType_Type, &kinds, &PyType_Type, &usage, &empty, &meta,
                                     &message, &PyList_Type, &into, &shared, &loads, &tuples, &eol, &stats, &cap,
                                     &sizes, &pi))
        return -1;
    PiParts *parts = NULL;
    if (pi != Py_None && !(parts = pi_parts(pi))) return -1;  /* a pi session's lines */
    pi_parts_free(self->pi);
    self->pi = parts;
    if (into && (!loads || !eol || !PyBytes_Check(eol) || (shared != Py_None && !PyDict_CheckExact(shared)))) {
        PyErr_SetString(PyExc_TypeError, "taking lines into a list needs loads, eol and shared (a dict or None)");
        return -1;
    }
    Py_XSETREF(self->into, Py_XNewRef(into));
    Py_XSETREF(self->shared, Py_NewRef(shared));
    Py_XSETREF(self->loads, Py_XNewRef(loads));
    self->tuples = tuples;
    Py_XSETREF(self->eol, Py_XNewRef(eol));
    self->stats = stats;
    self->cap = cap;
    if (sizes != Py_None && !PyDict_CheckExact(sizes)) {
        PyErr_SetString(PyExc_TypeError, "sizes is a dict or None");
        return -1;
    }
    Py_XSETREF(self->sizes, sizes == Py_None ? NULL : Py_NewRef(sizes));
    if (slot_offsets(full, FULL_SLOTS, NFULL, self->foff) < 0 || slot_offsets(kinds, KINDS_SLOTS, 6, self->koff) < 0
        || slot_offsets(call, CALL_SLOTS, 5, self->coff) < 0 || slot_offsets(result, RESULT_SLOTS, 5, self->roff) < 0
        || slot_offsets(usage, USAGE_SLOTS, 6, self->uoff) < 0)
        return -1;
    self->kinds_cls = (PyTypeObject *)kinds;
    self->call_cls = (PyTypeObject *)call;
    self->result_cls = (PyTypeObject *)result;
    self->usage_cls = (PyTypeObject *)usage;
    if (intern_all(self->s, CODEX_STR, NSTR) < 0) return -1;
    PyObject *zero = PyLong_FromLong(0), *unit = PyLong_FromLong(1);
    if (!zero || !unit) { Py_XDECREF(zero); Py_XDECREF(unit); return -1; }
    Py_XSETREF(self->zero, zero);
    Py_XSETREF(self->unit, unit);
    Py_XSETREF(self->full, (PyTypeObject *)Py_NewRef(full));
    Py_XSETREF(self->call, Py_NewRef(call));
    Py_XSETREF(self->result, Py_NewRef(result));
    Py_XSETREF(self->kinds, Py_NewRef(kinds));
    Py_XSETREF(self->usage, Py_NewRef(usage));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    Py_XSETREF(self->meta, Py_NewRef(meta));
    Py_XSETREF(self->message, Py_NewRef(message));
    return 0;
}

/* the position of the first character that is not white space (str.lstrip), n when none */
static Py_ssize_t first_visible(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    Py_ssize_t i = 0;
    while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, d, i))) i++;
    return i;
}

/* s[at:] starts with the ASCII ``p`` */
static int starts_at(PyObject *s, Py_ssize_t at, const char *p) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), m = (Py_ssize_t)strlen(p);
    if (n - at < m) return 0;
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    for (Py_ssize_t k = 0; k < m; k++)
        if (PyUnicode_READ(kind, d, at + k) != (Py_UCS4)(unsigned char)p[k]) return 0;
    return 1;
}

/* s[at:] starts with the ASCII ``p`` (lower case), in any ASCII case */
static int starts_at_ci(PyObject *s, Py_ssize_t at, const char *p) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), m = (Py_ssize_t)strlen(p);
    if (n - at < m) return 0;
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, d, at + k);
        if (c >= 'A' && c <= 'Z') c += 32;
        if (c != (Py_UCS4)(unsigned char)p[k]) return 0;
    }
    return 1;
}

/* formats.codex.context_text on a str */
static int context_text(PyObject *x) {
    Py_ssize_t at = first_visible(x), end = PyUnicode_GET_LENGTH(x);
    int kind = PyUnicode_KIND(x);
    const void *d = PyUnicode_DATA(x);
    while (end > at && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, d, end - 1))) end--;
    for (int j = 0; j < NMARKERS; j++)
        if (starts_at_ci(x, at, CONTEXT_MARKER[j][0])) {  /* ... and s[at:end] ends with its closing tag */
            Py_ssize_t m = (Py_ssize_t)strlen(CONTEXT_MARKER[j][1]);
            if (end - at >= m && starts_at_ci(x, end - m, CONTEXT_MARKER[j][1])) return 1;
        }
    return 0;
}

/* the fields an entry gets (new references; NULL: the default) */
typedef struct {
    PyObject *kind, *type, *id, *role, *model, *extra, *nblocks, *chars;
    PyObject *call_id, *call_name;  /* a call (shared strings) */
    PyObject *result_id;            /* a result (a shared string) */
    int kinds_at;                   /* -1: no Kinds; else the position of chars in it */
    int has_usage;
    long long usage[5];             /* input, output, cache read, cache write, total */
    int empty, blank, signed_;
} Fields;

static void fields_clear(Fields *f) {
    Py_XDECREF(f->type); Py_XDECREF(f->id); Py_XDECREF(f->role); Py_XDECREF(f->model); Py_XDECREF(f->extra);
    Py_XDECREF(f->nblocks); Py_XDECREF(f->chars); Py_XDECREF(f->call_id); Py_XDECREF(f->call_name);
    Py_XDECREF(f->result_id);
}

/* a dict of the pairs (key index, value), value borrowed; NULL on error */
static PyObject *dict_of(Whole *self, int n, const int *keys, PyObject *const *vals) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int k = 0; k < n; k++)
        if (PyDict_SetItem(d, self->s[keys[k]], vals[k]) < 0) { Py_DECREF(d); return NULL; }
    return d;
}

#define CX_DECLINE 0
#define CX_FAIL (-1)
#define CX_MADE 1

/* the fields Codex's reader types in the items it knows (id, the passthrough): 1 when as it reads them */
static int known_item_ok(Whole *self, PyObject *p, PyObject *id) {
    if (!OPT_STR(id)) return 0;
    /* a namespace that is no string, a phase Codex does not know: the Python reads it (and refuses the line) */
    PyObject *ns = get(p, self->s[S_NAMESPACE]), *phase = get(p, self->s[S_PHASE]);
    if (!OPT_STR(ns) || !(NULLISH(phase) || is(phase, "commentary") || is(phase, "final_answer"))) return 0;
    PyObject *pt = get(p, self->s[S_PASSTHROUGH]);
    if (NULLISH(pt)) return 1;
    if (PyDict_CheckExact(pt)) {
        PyObject *turn = get(pt, self->s[S_TURN_ID]), *ct = get(pt, self->s[S_CREATE_TIME]);
        if (!OPT_STR(turn)) return 0;
        return NULLISH(ct) || PyFloat_CheckExact(ct) || PyLong_CheckExact(ct);
    }
    return 0;  /* an array (its fields in order) or anything else: the Python reads it */
}

static int message_item(Whole *self, PyObject *p, Fields *f, int stats) {
    PyObject *role = get(p, self->s[S_ROLE]), *content = get(p, self->s[S_CONTENT]);
    if (!IS_STR(role) || !content || !PyList_CheckExact(content) || is(role, "system")) return CX_DECLINE;
    if (!OPT_STR(get(p, self->s[S_STATUS]))) return CX_DECLINE;
    Py_ssize_t n = PyList_GET_SIZE(content);
    for (Py_ssize_t k = 0; k < n; k++) {  /* codex._texts: text items only, each with a string text */
        PyObject *c = PyList_GET_ITEM(content, k);
        if (!PyDict_CheckExact(c)) return CX_DECLINE;
        PyObject *t = get(c, self->s[S_TYPE]);
        if (!is(t, "input_text") && !is(t, "output_text")) return CX_DECLINE;
        if (!IS_STR(get(c, self->s[S_TEXT]))) return CX_DECLINE;
        PyObject *ann = get(c, self->s[S_ANNOTATIONS]), *lp = get(c, self->s[S_LOGPROBS]);
        if (!(NULLISH(ann) || PyList_CheckExact(ann)) || !(NULLISH(lp) || PyList_CheckExact(lp))) return CX_DECLINE;
    }
    long long chars = 0;
    Py_ssize_t visible = 0;
    int blank = 0, contextual = 0, environment = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = get(PyList_GET_ITEM(content, k), self->s[S_TEXT]);
        if (stats) chars += js_len_(x);
        Py_ssize_t len = PyUnicode_GET_LENGTH(x), at = first_visible(x);
        if (len && at < len) visible++;  /* x and not x.isspace() */
        else blank = 1;
        if (!contextual && is(role, "user") && is(get(PyList_GET_ITEM(content, k), self->s[S_TYPE]), "input_text"))
            contextual = context_text(x);
        if (k == 0) environment = starts_at(x, at, "<environment_context>");
    }
    f->kind = self->message;
    f->role = Py_NewRef(is(role, "assistant") ? self->s[S_ASSISTANT] : self->s[S_USER]);
    if (!(f->nblocks = PyLong_FromSsize_t(n))) return CX_FAIL;
    if (!(f->chars = PyLong_FromLongLong(chars))) return CX_FAIL;
    if (chars) f->kinds_at = 0;
    f->empty = visible == 0;
    f->blank = blank;
    if (is(role, "developer")) {
        int trim = 0;  /* formats.codex.trimmed_with_turn */
        for (Py_ssize_t k = 0; k < n && !trim; k++) {
            PyObject *c = PyList_GET_ITEM(content, k);
            if (!is(get(c, self->s[S_TYPE]), "input_text")) continue;
            PyObject *x = get(c, self->s[S_TEXT]);
            Py_ssize_t at = first_visible(x);
            for (int j = 0; j < NTRIMMED && !trim; j++) trim = starts_at_ci(x, at, TRIMMED_DEVELOPER[j]);
        }
        int keys[] = {S_CONTEXT, S_ROLLBACK_TRIM};
        PyObject *vals[] = {self->s[S_DEVELOPER], Py_True};
        if (!(f->extra = dict_of(self, trim ? 2 : 1, keys, vals))) return CX_FAIL;
    } else if (!is(role, "user") && !is(role, "assistant")) {
        int keys[] = {S_CONTEXT, S_ODD_ROLE};
        PyObject *vals[] = {self->s[S_DEVELOPER], role};
        if (!(f->extra = dict_of(self, 2, keys, vals))) return CX_FAIL;
    } else if (is(role, "user") && contextual) {
        int keys[] = {S_CONTEXT, S_ENVIRONMENT};
        PyObject *vals[] = {self->s[S_USER], Py_True};
        if (!(f->extra = dict_of(self, environment ? 2 : 1, keys, vals))) return CX_FAIL;
    }
    return CX_MADE;
}

/* the entries of a reasoning item's summary (``content`` 0) or content, as formats.codex.reasoning_parts reads the
 * common ones: dicts whose type is summary_text (a content's: reasoning_text or text) and whose text is a string. Their
 * count and UTF-16 length into *count and *len, *reasoning set when a content's entry is a reasoning_text; 0 when an
 * entry is of another shape (the Python reads the line) */
static int reasoning_texts(Whole *self, PyObject *list, int content, Py_ssize_t *count, long long *len, int *reasoning) {
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
        PyObject *s = PyList_GET_ITEM(list, k);
        if (!PyDict_CheckExact(s)) return 0;
        PyObject *t = get(s, self->s[S_TYPE]), *x = get(s, self->s[S_TEXT]);
        if (!x || !PyUnicode_CheckExact(x)) return 0;
        if (content ? is(t, "reasoning_text") : is(t, "summary_text")) *reasoning |= content;
        else if (!content || !is(t, "text")) return 0;
        ++*count;
        *len += js_len_(x);
    }
    return 1;
}

static int reasoning_item(Whole *self, PyObject *p, Fields *f, int stats) {
    PyObject *summary = get(p, self->s[S_SUMMARY]), *more = get(p, self->s[S_CONTENT]), *enc = get(p, self->s[S_ENCRYPTED]);
    if (!summary || !PyList_CheckExact(summary) || !(NULLISH(more) || PyList_CheckExact(more)) || !OPT_STR(enc))
        return CX_DECLINE;
    Py_ssize_t count = 0, ccount = 0;
    long long len = 0, clen = 0;
    int reasoning = 0;  /* the content is sent (formats.codex.sent_content) */
    if (!reasoning_texts(self, summary, 0, &count, &len, &reasoning)
        || (!NULLISH(more) && !reasoning_texts(self, more, 1, &ccount, &clen, &reasoning)))
        return CX_DECLINE;
    if (reasoning) {
        count += ccount;
        len += clen;
    }
    long long n = stats ? len + (count ? count - 1 : 0) : 0;  /* js_len("\n".join(texts)) */
    f->kind = self->message;
    f->role = Py_NewRef(self->s[S_ASSISTANT]);
    f->nblocks = Py_NewRef(self->unit);
    if (!(f->chars = PyLong_FromLongLong(n))) return CX_FAIL;
    if (n) f->kinds_at = 1;
    f->signed_ = !NULLISH(enc) && PyUnicode_GET_LENGTH(enc) > 0;
    f->empty = 0;
    return CX_MADE;
}

/* function_call and custom_tool_call (``function`` tells which); the call's id and name shared */
static int call_item(Whole *self, PyObject *p, Fields *f, int stats, int function, PyObject *shared) {
    PyObject *name = get(p, self->s[S_NAME]), *raw = get(p, self->s[function ? S_ARGUMENTS : S_INPUT]);
    PyObject *cid = get(p, self->s[S_CALL_ID]);
    if (!IS_STR(name) || !IS_STR(raw) || !OPT_STR(get(p, self->s[S_STATUS])) || !IS_STR(cid))
        return CX_DECLINE;
    long long n = stats ? js_len_(name) + js_len_(raw) : 0;
    f->kind = self->message;
    f->role = Py_NewRef(self->s[S_ASSISTANT]);
    f->nblocks = Py_NewRef(self->unit);
    if (!(f->chars = PyLong_FromLongLong(n))) return CX_FAIL;
    if (n) f->kinds_at = 2;
    if (PyUnicode_GET_LENGTH(cid)) {
        f->call_id = Py_NewRef(cid);  /* (ids are not shared: see share) */
        if (!(f->call_name = share(shared, name))) return CX_FAIL;
    }
    return CX_MADE;
}

/* function_call_output and custom_tool_call_output with a string output */
static int output_item(Whole *self, PyObject *p, Fields *f, int stats, PyObject *shared) {
    PyObject *out = get(p, self->s[S_OUTPUT]), *cid = get(p, self->s[S_CALL_ID]);
    if (!IS_STR(out) || !IS_STR(cid) || !NULLISH(get(p, self->s[S_NAME]))) return CX_DECLINE;  /* (a name: the Python) */
    long long n = stats ? js_len_(out) : 0;
    f->kind = self->message;
    f->role = Py_NewRef(self->s[S_TOOL_RESULT]);
    f->nblocks = Py_NewRef(self->unit);
    if (!(f->chars = PyLong_FromLongLong(n))) return CX_FAIL;
    if (n) f->kinds_at = 3;
    if (PyUnicode_GET_LENGTH(cid)) f->result_id = Py_NewRef(cid);
    return CX_MADE;
}

static int response_item(Whole *self, PyObject *obj, PyObject *p, Fields *f, int stats, PyObject *shared) {
    if (!NULLISH(get(obj, self->s[S_METADATA]))) return CX_DECLINE;
    PyObject *it = get(p, self->s[S_TYPE]);
    if (!IS_STR(it)) return CX_DECLINE;
    PyObject *id = get(p, self->s[S_ID]);
    int r;
    if (is(it, "message") || is(it, "reasoning") || is(it, "function_call") || is(it, "custom_tool_call")
        || is(it, "function_call_output") || is(it, "custom_tool_call_output")) {
        if (!known_item_ok(self, p, id)) return CX_DECLINE;
    } else {
        return CX_DECLINE;
    }
    if (is(it, "message")) r = message_item(self, p, f, stats);
    else if (is(it, "reasoning")) r = reasoning_item(self, p, f, stats);
    else if (is(it, "function_call")) r = call_item(self, p, f, stats, 1, shared);
    else if (is(it, "custom_tool_call")) r = call_item(self, p, f, stats, 0, shared);
    else r = output_item(self, p, f, stats, shared);
    if (r != CX_MADE) return r;
    if (!(f->type = share(shared, it))) return CX_FAIL;
    if (IS_STR(id)) f->id = Py_NewRef(id);
    return CX_MADE;
}

static int event(Whole *self, PyObject *p, Fields *f, int stats) {
    f->kind = self->meta;
    PyObject *et = get(p, self->s[S_TYPE]);
    if (!IS_STR(et)) return CX_MADE;
    if (is(et, "task_complete")) {
        int keys[] = {S_EVENT};
        PyObject *vals[] = {et};
        return (f->extra = dict_of(self, 1, keys, vals)) ? CX_MADE : CX_FAIL;
    }
    if (is(et, "user_message") || is(et, "turn_aborted") || is(et, "task_started") || is(et, "turn_started")) {
        int keys[] = {S_EVENT, S_TURN};
        PyObject *vals[] = {et, et};
        return (f->extra = dict_of(self, 2, keys, vals)) ? CX_MADE : CX_FAIL;
    }
    if (is(et, "thread_rolled_back")) return CX_DECLINE;
    if (!is(et, "token_count")) return CX_MADE;  /* an event ctxtool does not read */
    int keys[3] = {S_EVENT, S_TOTAL_TOKENS, S_CONTEXT_WINDOW};
    PyObject *vals[3] = {et, NULL, NULL};
    int nkeys = 1;
    PyObject *info = get(p, self->s[S_INFO]);
    long long total = 0;
    PyObject *window = NULL;
    int has_total = 0;
    if (info && PyDict_CheckExact(info)) {
        PyObject *last = stats ? get(info, self->s[S_LAST]) : NULL;
        long long inp = 0, cached = 0, out = 0, tot = 0;
        int has_usage = last && PyDict_CheckExact(last);
        if (has_usage && !(count_(get(last, self->s[S_INPUT_TOKENS]), &inp) && count_(get(last, self->s[S_CACHED]), &cached)
                           && count_(get(last, self->s[S_OUTPUT_TOKENS]), &out) && count_(get(last, self->s[S_TOTAL_TOKENS]), &tot)))
            return CX_DECLINE;
        PyObject *tu = get(info, self->s[S_TOTAL_USAGE]);
        if (tu && PyDict_CheckExact(tu)) {
            if (!count_(get(tu, self->s[S_TOTAL_TOKENS]), &total)) return CX_DECLINE;
            has_total = 1;
        }
        PyObject *w = get(info, self->s[S_WINDOW]);
        if (w && PyLong_CheckExact(w)) {
            int overflow;
            long long x = PyLong_AsLongLongAndOverflow(w, &overflow);
            if (x == -1 && PyErr_Occurred()) return CX_FAIL;
            if (overflow > 0 || x > MAX_COUNT_) return CX_DECLINE;  /* absurd: Python notes it */
            if (overflow == 0 && x > 0) window = w;
        }
        if (has_usage) {
            f->has_usage = 1;
            f->usage[0] = inp - cached > 0 ? inp - cached : 0;
            f->usage[1] = out;
            f->usage[2] = cached < inp ? cached : inp;
            f->usage[3] = 0;
            f->usage[4] = tot;
        }
    }
    PyObject *tot_obj = NULL;
    if (has_total) {
        if (!(tot_obj = PyLong_FromLongLong(total))) return CX_FAIL;
        vals[nkeys] = tot_obj;
        keys[nkeys++] = S_TOTAL_TOKENS;
    }
    if (window) {
        vals[nkeys] = window;
        keys[nkeys++] = S_CONTEXT_WINDOW;
    }
    f->extra = dict_of(self, nkeys, keys, vals);
    Py_XDECREF(tot_obj);
    return f->extra ? CX_MADE : CX_FAIL;
}

/* the entry of a rollout line's fields (a new reference; its tuple with ``tuples``): the Fields read as a CF, made by
 * facts_entry as the other formats' entries are */
static PyObject *fields_entry(Whole *self, Fields *f, PyObject *index, PyObject *lineno, PyObject *offset,
                              PyObject *length, PyObject *eol, PyObject *ts, int tuples) {
    CF c = {0};
    c.kind = f->kind;
    c.role = Py_XNewRef(f->role);
    c.model = Py_XNewRef(f->model);
    c.extra = Py_XNewRef(f->extra);
    c.nblocks = f->nblocks ? PyLong_AsSsize_t(f->nblocks) : 0;
    c.chars = f->chars ? PyLong_AsLongLong(f->chars) : 0;
    PyObject *out = NULL;
    if (PyErr_Occurred()) goto done;
    if (f->kinds_at >= 0) c.k[f->kinds_at] = c.chars;  /* (set only where chars is not 0) */
    c.empty = f->empty;
    c.blank = f->blank;
    c.signed_ = f->signed_;
    c.has_usage = f->has_usage;
    memcpy(c.usage, f->usage, sizeof c.usage);
    if (f->call_id && add_item(&c.calls, 0, f->call_id, f->call_name, Py_None, c.chars) < 0) goto done;
    if (f->result_id && add_item(&c.results, 0, f->result_id, Py_None, Py_False, c.chars) < 0) goto done;
    Maker mk = whole_maker(self, tuples, eol);
    out = facts_entry(&mk, &c, index, lineno, offset, length, f->type, f->id ? f->id : Py_None, Py_None, ts);
done:
    cf_clear(&c);
    return out;
}

/* the entry of a parsed line (a new reference; its tuple with ``tuples``), None when declined, NULL on error */
static PyObject *codex_make(Whole *self, PyObject *obj, PyObject *index, PyObject *lineno, PyObject *offset,
                            PyObject *length, PyObject *eol, int stats, PyObject *shared, int tuples) {
    if (!PyDict_CheckExact(obj) || (shared != Py_None && !PyDict_CheckExact(shared))) Py_RETURN_NONE;
    PyObject *t = get(obj, self->s[S_TYPE]), *p = get(obj, self->s[S_PAYLOAD]), *ts = get(obj, self->s[S_TIMESTAMP]);
    if (!IS_STR(t) || !p || !PyDict_CheckExact(p) || !IS_STR(ts) || !PyUnicode_IS_COMPACT_ASCII(ts)) Py_RETURN_NONE;
    double when;
    if (!iso_z((cp)PyUnicode_DATA(ts), PyUnicode_GET_LENGTH(ts), &when)) Py_RETURN_NONE;
    PyObject *o = get(obj, self->s[S_ORDINAL]);
    if (!NULLISH(o)) {
        if (!PyLong_CheckExact(o)) Py_RETURN_NONE;
        unsigned long long v = PyLong_AsUnsignedLongLong(o);
        if (v == U64_MAX_ && PyErr_Occurred()) {  /* negative, or beyond 64 bits */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    Fields f = {0};
    f.kinds_at = -1;
    int r;
    if (is(t, "response_item")) {
        r = response_item(self, obj, p, &f, stats, shared);
    } else if (is(t, "event_msg") || is(t, "turn_context")) {
        if (is(t, "event_msg")) {
            r = event(self, p, &f, stats);
        } else {
            f.kind = self->meta;
            PyObject *m = get(p, self->s[S_MODEL]);
            r = CX_MADE;
            if (IS_STR(m)) {
                int keys[] = {S_MODEL};
                PyObject *vals[] = {m};
                if (!(f.model = share(shared, m)) || !(f.extra = dict_of(self, 1, keys, vals))) r = CX_FAIL;
            }
        }
        if (r == CX_MADE && !(f.type = share(shared, t))) r = CX_FAIL;
    } else {
        r = CX_DECLINE;
    }
    if (r != CX_MADE) {
        fields_clear(&f);
        if (r == CX_FAIL) return NULL;
        Py_RETURN_NONE;
    }
    if (f.role) {
        PyObject *role = share(shared, f.role);
        Py_SETREF(f.role, role);
        if (!role) { fields_clear(&f); return NULL; }
    }
    PyObject *tsv = PyFloat_FromDouble(when);
    PyObject *e = tsv ? fields_entry(self, &f, index, lineno, offset, length, eol, tsv, tuples) : NULL;
    Py_XDECREF(tsv);
    fields_clear(&f);
    return e;
}

/* entry(obj, index, lineno, offset, length, eol, stats, shared) -> the line's entry, or None */
static PyObject *Whole_entry(Whole *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "entry(obj, index, lineno, offset, length, eol, stats, shared)");
        return NULL;
    }
    if (!self->full) {
        PyErr_SetString(PyExc_TypeError, "Whole was not initialised");
        return NULL;
    }
    int stats = PyObject_IsTrue(args[6]);
    if (stats < 0) return NULL;
    if (self->pi) return pi_make(self, args[0], args[1], args[2], args[3], args[4], args[5], stats, args[7], 0);
    return codex_make(self, args[0], args[1], args[2], args[3], args[4], args[5], stats, args[7], 0);
}

/* A Reader's line (its bytes, ending in "\n"), taken into ``into`` when this makes its entry: 1 taken, 0 declined
 * (the Reader gives the line out: the Python loop reads it again, and says why it is bad if it is), -1 error.
 * ``prev``: the last line number's int object, the entry's index when equal (as the Python loop shares them). */
static int whole_take(Whole *self, cp p, Py_ssize_t len, PyObject *no, PyObject *start, PyObject *prev) {
    if (len < 2 || p[len - 1] != '\n' || p[len - 2] == '\r') return 0;
    if (self->cap > 0 && PyList_GET_SIZE(self->into) >= self->cap) return 0;  /* the caller's turn to empty it */
    Py_ssize_t count = PyList_GET_SIZE(self->into);
    PyObject *index;
    if (prev && PyLong_CheckExact(prev) && PyLong_AsSsize_t(prev) == count) {
        index = Py_NewRef(prev);
    } else {
        if (PyErr_Occurred()) PyErr_Clear();
        index = PyLong_FromSsize_t(count);
    }
    PyObject *size = index ? PyLong_FromSsize_t(len - 1) : NULL;
    if (size && self->sizes) {  /* one int object per line length: most repeat (14K values among 363K lines) */
        PyObject *same = PyDict_SetDefault(self->sizes, size, size);
        Py_XINCREF(same);
        Py_SETREF(size, same);
    }
    PyObject *e = NULL;
    if (!size) goto done;
    if (self->pi) {  /* a pi tool result read as bytes, its texts never built (_scan_pi.c) */
        e = pi_bytes_entry(self, p, len, index, no, start, size);
        if (!e) goto done;
        if (e != Py_None) goto done;
        Py_CLEAR(e);
    }
    PyObject *view = PyMemoryView_FromMemory((char *)p, len, PyBUF_READ);
    if (!view) goto done;
    PyObject *obj = PyObject_CallOneArg(self->loads, view);
    Py_DECREF(view);
    if (!obj) {  /* not JSON to orjson (its JSONDecodeError is a ValueError): the loop says why */
        if (PyErr_ExceptionMatches(PyExc_ValueError)) {  /* (else out of memory...) */
            PyErr_Clear();
            e = Py_NewRef(Py_None);
        }
        goto done;
    }
    e = self->pi ? pi_make(self, obj, index, no, start, size, self->eol, self->stats, self->shared, self->tuples)
                 : codex_make(self, obj, index, no, start, size, self->eol, self->stats, self->shared, self->tuples);
    Py_DECREF(obj);
done:
    Py_XDECREF(index);
    Py_XDECREF(size);
    if (!e) return -1;
    if (e == Py_None) {
        Py_DECREF(e);
        return 0;
    }
    int r = PyList_Append(self->into, e);
    Py_DECREF(e);
    return r < 0 ? -1 : 1;
}

/* line(data, index, lineno, offset, length) -> the entry of a pi tool result line read as bytes (data: the line with its
 * "\n"), or None (declined: the line then goes the orjson way): for the tests */
static PyObject *Whole_line(Whole *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "line(data: bytes, index, lineno, offset, length)");
        return NULL;
    }
    if (!self->pi || !self->eol || !self->shared) {
        PyErr_SetString(PyExc_TypeError, "line needs a Whole made with pi, eol and shared");
        return NULL;
    }
    return pi_bytes_entry(self, (cp)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]), args[1], args[2], args[3],
                          args[4]);
}

static PyMethodDef Whole_methods[] = {
    {"entry", (PyCFunction)(void (*)(void))Whole_entry, METH_FASTCALL, "A parsed line's entry, or None."},
    {"line", (PyCFunction)(void (*)(void))Whole_line, METH_FASTCALL, "A pi tool result line's entry read as bytes, or None."},
    {NULL},
};

static PyTypeObject WholeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Whole",
    .tp_basicsize = sizeof(Whole),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Whole_init,
    .tp_dealloc = (destructor)Whole_dealloc,
    .tp_methods = Whole_methods,
    .tp_doc = "Whole(full_cls, call, result, kinds, usage, empty, meta, message, *, into, shared, loads, tuples, eol, stats, cap, "
              "sizes, pi): a Codex rollout's lines' entries (a pi session's with ``pi``), in C; "
              "with ``into``, a Reader's lines taken into that list.",
};
